-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.epoch = '2025-01-01 00:00:00'
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.epoch "2025-01-01 00:00:00" is not a timestamp with a UTC offset
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT * FROM error_of('SELECT snowflake_decode(1)');
