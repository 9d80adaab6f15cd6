-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.epoch = '2999-01-01 00:00:00+00'
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.epoch 2999-01-01 00:00:00+00 is in the future
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
-- The message ends with the clock's reading, which changes: check its form only.
SELECT state, split_part(message, ': the clock reads ', 1) AS message,
       split_part(message, ': the clock reads ', 2) ~ '^20\d\d-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\+00$' AS then_the_clock,
       hint
FROM error_of('SELECT snowflake_nextval()');
