-- A table partitioned BY RANGE (id), its monthly partitions made from snowflake_partition_bounds():
-- every row lands in the partition of its month, literal bounds prune at plan time, and
-- `id >= snowflake_from_timestamp(now() - ...)` prunes at executor start (runtime pruning).
\ir ../../harness/sql/error_of.sql
\ir ../../harness/sql/create_extension.sql
\ir ../../harness/sql/regress_session.sql
SELECT * FROM snowflake_partition_bounds('2025-01-01+00', '2025-07-01+00', '1 month');
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), body text) PARTITION BY RANGE (id);
DO $$
DECLARE b record;
BEGIN
  FOR b IN SELECT * FROM snowflake_partition_bounds('2025-01-01+00', '2025-07-01+00', '1 month') LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)', 'events_' || b.suffix, b.from_id, b.to_id);
  END LOOP;
END $$;
-- Everything later (the ids minted now) in one more partition.
CREATE TABLE events_recent PARTITION OF events FOR VALUES FROM (snowflake_from_timestamp('2025-07-01+00')) TO (MAXVALUE);
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'events'::regclass AND c.relkind = 'r' ORDER BY c.relname;
-- One row per hour (at half past) from 2025-01-01 to 2025-06-30, machine ids and sequences at
-- both ends of their fields, and ids minted now.
INSERT INTO events
SELECT snowflake_compose(timestamptz '2025-01-01 00:30+00' + g * interval '1 hour', (g % 2) * 1023, (g % 3) * 2047), 'h' || g
FROM generate_series(0, 181 * 24 - 1) g;
INSERT INTO events(body) SELECT 'now' FROM generate_series(1, 100);
ANALYZE events;
SELECT tableoid::regclass AS partition, count(*),
       count(*) FILTER (WHERE CASE WHEN tableoid = 'events_recent'::regclass THEN snowflake_timestamp(id) < '2025-07-01+00'
                         ELSE tableoid::regclass::text <> 'events_' || to_char(snowflake_timestamp(id) AT TIME ZONE 'UTC', 'YYYY_MM') END) AS misplaced
FROM events GROUP BY 1 ORDER BY 1;
-- The first and last millisecond of a month, with the largest machine id and sequence at the end.
INSERT INTO events VALUES (snowflake_compose('2025-03-01 00:00:00+00', 0, 0), 'first'), (snowflake_compose('2025-03-31 23:59:59.999+00', 1023, 4095), 'last');
SELECT tableoid::regclass AS partition, snowflake_timestamp(id), body FROM events WHERE body IN ('first', 'last') ORDER BY id;
SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
-- Plan-time pruning: literal bounds (the IMMUTABLE form folds to a constant when planned).
EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE id >= 24642374860800000 AND id < 28266253516800000;
EXPLAIN (COSTS OFF) SELECT count(*) FROM events
WHERE id >= snowflake_from_timestamp('2025-03-10+00', '2025-01-01 00:00:00+00', 10, 12)
  AND id < snowflake_from_timestamp('2025-03-20+00', '2025-01-01 00:00:00+00', 10, 12);
-- Runtime pruning: STABLE expressions, pruned when the executor starts (Subplans Removed).
EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE id >= snowflake_from_timestamp(now() - interval '1 day');
SELECT count(*) AS last_day FROM events WHERE id >= snowflake_from_timestamp(now() - interval '1 day');
EXPLAIN (COSTS OFF) SELECT count(*) FROM events
WHERE id >= snowflake_from_timestamp('2025-05-10+00') AND id < snowflake_from_timestamp('2025-05-11+00');
SELECT count(*) AS may_10 FROM events WHERE id >= snowflake_from_timestamp('2025-05-10+00') AND id < snowflake_from_timestamp('2025-05-11+00');
RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan;
-- Daily bounds, and the suffix of finer steps.
SELECT suffix, from_ts, to_ts FROM snowflake_partition_bounds('2025-02-27 00:00:00+00', '2025-03-02 00:00:00+00', '1 day');
SELECT suffix, from_ts, to_ts FROM snowflake_partition_bounds('2025-01-31 00:00:00+00', '2025-04-01 00:00:00+00', '1 month');
SELECT suffix FROM snowflake_partition_bounds('2025-03-01 00:00:00+00', '2025-03-01 18:00:00+00', '6 hours');
-- NULLs: STRICT. Bad input: SQLSTATE, message, hint.
SELECT count(*) AS null_rows FROM snowflake_partition_bounds(NULL, '2025-02-01+00', '1 month');
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2025-01-01+00', '2025-02-01+00', '0 days')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2025-01-01+00', '2025-02-01+00', '-1 month')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2025-01-01+00', '2025-02-01+00', '1.5 milliseconds')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2025-02-01+00', '2025-01-01+00', '1 month')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2025-01-01+00', '2026-01-01+00', '1 minute')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2024-12-01+00', '2025-02-01+00', '1 month')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2094-01-01+00', '2094-12-01+00', '1 month')$$);
SELECT * FROM error_of($$SELECT * FROM snowflake_partition_bounds('2025-01-01+00', 'infinity', '1 month')$$);
SELECT p.provolatile, p.proparallel, p.proisstrict, obj_description(p.oid, 'pg_proc') IS NOT NULL AS described
FROM pg_proc p WHERE p.proname = 'snowflake_partition_bounds';
