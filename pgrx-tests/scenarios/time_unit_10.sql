-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 3
-- conf: snowflake.time_unit = 10
-- conf: snowflake.sequence_bits = 9
-- conf: snowflake.machine_bits = 10
-- log: LOG:  pg_snowflake: machine id 3, layout 44|10|9 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00, 10 ms ticks
-- Sonyflake-like 10 ms ticks: times are multiples of 10 ms, the sequence counts ids per tick (512
-- here, so 20,000 ids need at least 40 ticks and the generator must wait for new ones), and every
-- helper works in ticks.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT time_unit_ms, timestamp_bits, ids_per_tick, ids_per_second, timestamp_field_ends FROM snowflake_layout();
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int NOT NULL);
INSERT INTO t(n) SELECT g FROM generate_series(1, 20000) g;
SELECT count(*) AS out_of_order FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM t) s WHERE id <= prev;
SELECT bool_and((extract(epoch FROM d.ts) * 1000)::bigint % 10 = 0) AS times_on_10_ms_ticks,
       bool_and(d.machine_id = 3) AS machine_3,
       count(DISTINCT d.ts) >= 40 AS at_least_40_ticks
FROM t, LATERAL snowflake_decode(t.id) d;
SELECT max(c) <= 512 AS per_tick_within_the_sequence
FROM (SELECT count(*) AS c FROM t GROUP BY snowflake_timestamp(id)) per_tick;
-- Helpers round a time down to its tick.
SELECT snowflake_from_timestamp('2025-01-01 00:00:00.019+00') = (1::bigint << 19) AS from_timestamp_in_ticks,
       snowflake_timestamp(snowflake_compose('2025-01-01 00:00:00.019+00', 3, 7)) AS composed_time;
