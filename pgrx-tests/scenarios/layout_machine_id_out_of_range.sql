-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 128
-- conf: snowflake.machine_bits = 7
-- conf: snowflake.sequence_bits = 14
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.machine_id 128 does not fit in snowflake.machine_bits = 7 (0 to 127)
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
