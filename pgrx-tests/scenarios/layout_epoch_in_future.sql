-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.epoch = '2999-01-01 00:00:00+00'
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.epoch 2999-01-01 00:00:00+00 is in the future
\ir ../include/error_of.sql
CREATE EXTENSION pg_snowflake;
-- The message also gives the clock's reading, which changes: show only what comes before it.
SELECT sqlstate, split_part(message, ':', 1) AS message, hint FROM error_of('SELECT snowflake_nextval()');
