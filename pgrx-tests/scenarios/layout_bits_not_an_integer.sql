-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.sequence_bits = 'fourteen'
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.sequence_bits = "fourteen" is not an integer; refusing to fall back to the default
-- PostgreSQL itself would keep the default 12 with a mere WARNING; the layout must not.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
