-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.machine_bits = 16
-- conf: snowflake.sequence_bits = 13
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.machine_bits = 16 and snowflake.sequence_bits = 13 leave 34 timestamp bits, fewer than 35
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT * FROM error_of('SELECT snowflake_decode(1)');
