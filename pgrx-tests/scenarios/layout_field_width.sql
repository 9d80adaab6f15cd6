-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 0
-- conf: snowflake.machine_bits = 0
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.machine_bits = 0 is out of range (1 to 24)
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
