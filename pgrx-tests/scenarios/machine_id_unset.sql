-- majors: all (shared memory and the settings differ by major)
-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machineid = 7
-- log: WARNING:  pg_snowflake cannot generate ids: snowflake.machine_id is not set
-- log: "snowflake.machineid"
-- The library is preloaded but snowflake.machine_id is not set (a misspelt name does not count,
-- and is reported at start): generation refuses with a hint; decoding needs only the layout.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SHOW snowflake.machine_id;
SELECT * FROM error_of('SELECT snowflake_nextval()');
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
SELECT * FROM error_of($$INSERT INTO orders(item) VALUES ('book')$$);
SELECT * FROM snowflake_decode(4194304 | (3 << 12) | 5);
