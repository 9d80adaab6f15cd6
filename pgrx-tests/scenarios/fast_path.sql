-- majors: all (the entry point and the per-process counters differ by major: 14 has no shmem request hook)
-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 7
-- conf: snowflake.machine_bits = 10
-- conf: snowflake.sequence_bits = 1
-- snowflake_nextval()'s raw entry point (issue 61) beside pgrx's guarded function, which it hands
-- every case but the plain one: the two called in turn in one query, ids unique and increasing
-- across both. A one-bit sequence (two ids a millisecond) makes most calls meet a used-up tick,
-- which the raw entry declines and the guarded function waits out. The counters see every id of
-- both. (The guarded function is reached here by its own symbol, as databases still on 0.1.0 call
-- it.)
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT p.prosrc AS entry_point FROM pg_proc p WHERE p.proname = 'snowflake_nextval';
CREATE FUNCTION pg_temp.guarded_nextval() RETURNS bigint VOLATILE LANGUAGE c
    AS '$libdir/pg_snowflake', 'snowflake_nextval_wrapper';
SELECT snowflake_stats_reset();
CREATE TABLE pairs AS
    SELECT g, snowflake_nextval() AS fast, pg_temp.guarded_nextval() AS guarded FROM generate_series(1, 3000) g;
SELECT count(*) * 2 AS ids,
       count(DISTINCT fast) + count(DISTINCT guarded) AS distinct_ids,
       bool_and(fast < guarded) AS each_fast_below_its_guarded,
       bool_and(guarded < next_fast OR next_fast IS NULL) AS each_guarded_below_the_next_fast
FROM (SELECT g, fast, guarded, lead(fast) OVER (ORDER BY g) AS next_fast FROM pairs) p;
SELECT count(*) AS ids_twice FROM (SELECT fast AS id FROM pairs UNION ALL SELECT guarded FROM pairs) i
GROUP BY id HAVING count(*) > 1;
SELECT ids_issued = 6000 AS every_id_counted, sequence_waits > 0 AS waited_for_ticks FROM snowflake_stats();
SELECT bool_and((snowflake_decode(fast)).machine_id = 7 AND (snowflake_decode(guarded)).machine_id = 7) AS machine_id_7
FROM pairs;
