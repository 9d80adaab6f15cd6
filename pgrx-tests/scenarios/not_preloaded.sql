-- majors: all (shared memory and the settings differ by major)
-- conf: snowflake.machine_id = 7
-- The library is not in shared_preload_libraries: CREATE EXTENSION works (loading the library in
-- a backend must not be FATAL), and every function says what to do, with no pgrx panic text.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT * FROM error_of('SELECT snowflake_decode(1)');
SELECT 'the backend survived' AS still_connected;
