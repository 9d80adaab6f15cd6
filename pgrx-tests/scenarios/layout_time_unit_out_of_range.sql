-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.time_unit = 0
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.time_unit = 0 is out of range (1 to 60000 milliseconds)
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT * FROM error_of('SELECT snowflake_layout()');
