-- majors: all (shared memory and the settings differ by major)
-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 7
-- conf: max_parallel_workers_per_gather = 2
-- One generator serves the whole server: ids keep increasing across databases, connections and
-- parallel workers.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT snowflake_nextval() AS a \gset
CREATE DATABASE other;
\c other
\ir ../harness/sql/create_extension.sql
SELECT snowflake_nextval() > :a AS another_database_continues;
SELECT snowflake_nextval() AS b \gset
\c postgres
SELECT snowflake_nextval() > :b AS a_new_connection_continues;
-- Parallel workers call snowflake_nextval() themselves (it is PARALLEL SAFE).
CREATE TABLE big AS SELECT g FROM generate_series(1, 200000) g;
ANALYZE big;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
CREATE FUNCTION pg_temp.plan_has(q text, pattern text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
        IF line LIKE pattern THEN RETURN true; END IF;
    END LOOP;
    RETURN false;
END $$;
SELECT pg_temp.plan_has('SELECT snowflake_nextval() FROM big', '%Workers Launched: 2%') AS workers_ran;
SELECT pg_temp.plan_has('SELECT snowflake_nextval() FROM big', '%Parallel Seq Scan%') AS parallel_scan;
CREATE TABLE from_workers AS SELECT snowflake_nextval() AS id FROM big;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids FROM from_workers;
