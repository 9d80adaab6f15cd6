-- The IMMUTABLE readers take the layout as arguments (a preset, or epoch and widths) and so can
-- serve where the STABLE ones cannot: an expression index, a generated column, a partition key.
-- They agree with the server's own readers when given the server's layout; `server`, unknown
-- presets and arguments out of range are refused with SQLSTATE, message and hint.
\ir ../../harness/sql/error_of.sql
\ir ../../harness/sql/create_extension.sql
\ir ../../harness/sql/regress_session.sql
SELECT p.oid::regprocedure AS function, p.provolatile AS volatility, p.proisstrict AS strict, obj_description(p.oid, 'pg_proc') IS NOT NULL AS described
FROM pg_proc p WHERE (p.proname LIKE 'snowflake%' OR p.pronamespace = 'snowflake_internal'::regnamespace) AND p.provolatile = 'i' ORDER BY p.oid::regprocedure::text;
SELECT epoch, machine_bits, sequence_bits, time_unit_ms FROM snowflake_layout();
-- The server's own readers and the IMMUTABLE ones under the same layout agree, id by id.
CREATE TABLE minted AS SELECT snowflake_nextval() AS id FROM generate_series(1, 1000);
SELECT count(*) FILTER (WHERE snowflake_timestamp(id) = snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12)
                          AND snowflake_machine_id(id) = snowflake_machine_id(id, '2025-01-01 00:00:00+00', 10, 12)
                          AND snowflake_sequence(id) = snowflake_sequence(id, '2025-01-01 00:00:00+00', 10, 12)
                          AND snowflake_decode(id) = snowflake_decode(id, '2025-01-01 00:00:00+00', 10, 12, 1)
                          AND snowflake_from_timestamp(snowflake_timestamp(id)) = snowflake_from_timestamp(snowflake_timestamp(id), '2025-01-01 00:00:00+00', 10, 12)) AS agree,
       count(*) AS ids
FROM minted;
-- Another layout, given explicitly: 10 ms ticks, 16 machine bits, 8 sequence bits.
SELECT (snowflake_decode(snowflake_from_timestamp('2026-02-03 04:05:06.789+00', '2020-01-01+00', 16, 8, 10), '2020-01-01+00', 16, 8, 10)).*;
-- Discord's documented example, through the preset forms.
SELECT snowflake_timestamp(175928847299117063, 'discord') AS ts, snowflake_machine_id(175928847299117063, 'discord') AS machine_id,
       snowflake_sequence(175928847299117063, 'Discord') AS sequence;

-- The STABLE reader cannot index; the IMMUTABLE one can, and the planner uses the index.
CREATE TABLE events (id bigint PRIMARY KEY, body text);
INSERT INTO events SELECT snowflake_compose(timestamptz '2025-06-01+00' + g * interval '1 minute', 7, 0), 'e' || g
FROM generate_series(0, 99999) g;
SELECT * FROM error_of($$CREATE INDEX ON events (snowflake_timestamp(id))$$);
CREATE INDEX events_ts ON events (snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12));
ANALYZE events;
EXPLAIN (COSTS OFF) SELECT count(*) FROM events
WHERE snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12) >= '2025-07-01+00'
  AND snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12) < '2025-07-02+00';
SELECT count(*) FROM events
WHERE snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12) >= '2025-07-01+00'
  AND snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12) < '2025-07-02+00';

-- Generated columns: the time of a Twitter id, and of this server's ids.
SELECT * FROM error_of($$CREATE TABLE g0 (id bigint, ts timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id)) STORED)$$);
CREATE TABLE tweets (id bigint PRIMARY KEY, ts timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id, 'twitter')) STORED,
                     worker int GENERATED ALWAYS AS (snowflake_machine_id(id, 'twitter')) STORED);
INSERT INTO tweets(id) VALUES ((1000::bigint << 22) | (105 << 12) | 42);
SELECT * FROM tweets;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text,
                     created timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12)) STORED,
                     machine int GENERATED ALWAYS AS (snowflake_machine_id(id, '2025-01-01 00:00:00+00', 10, 12)) STORED);
INSERT INTO orders(item) SELECT 'book' FROM generate_series(1, 100);
SELECT count(*) FILTER (WHERE created = snowflake_timestamp(id) AND machine = 7) AS generated_right, count(*) FROM orders;

-- A partition key: a table partitioned by the month its ids carry.
SELECT * FROM error_of($$CREATE TABLE p0 (id bigint) PARTITION BY RANGE (snowflake_timestamp(id))$$);
CREATE TABLE log (id bigint NOT NULL, msg text) PARTITION BY RANGE (snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12));
CREATE TABLE log_2025_06 PARTITION OF log FOR VALUES FROM ('2025-06-01+00') TO ('2025-07-01+00');
CREATE TABLE log_2025_07 PARTITION OF log FOR VALUES FROM ('2025-07-01+00') TO ('2025-08-01+00');
INSERT INTO log SELECT snowflake_compose(timestamptz '2025-06-20+00' + g * interval '1 day', 7, 0), 'm' || g FROM generate_series(0, 20) g;
SELECT tableoid::regclass AS partition, count(*), min(snowflake_timestamp(id)), max(snowflake_timestamp(id)) FROM log GROUP BY 1 ORDER BY 1;
SELECT * FROM error_of($$INSERT INTO log VALUES (snowflake_compose('2025-08-01+00', 7, 0), 'no partition')$$);
EXPLAIN (COSTS OFF) SELECT * FROM log WHERE snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12) >= '2025-07-05+00';

-- NULLs: STRICT, NULL in, NULL out.
SELECT snowflake_timestamp(NULL, 'twitter') IS NULL AS null_id, snowflake_timestamp(1, NULL::text) IS NULL AS null_preset,
       snowflake_timestamp(1, NULL, 10, 12) IS NULL AS null_epoch, snowflake_decode(1, '2025-01-01+00', 10, 12, NULL) IS NULL AS null_unit;
-- Bad input: SQLSTATE, a message naming the value, a hint.
SELECT * FROM error_of($$SELECT snowflake_timestamp(1, 'server')$$);
-- (An unknown name's message lists the presets as snowflake_presets() has them: shown as <presets>.)
SELECT state, replace(message, (SELECT string_agg(name, ', ') FROM snowflake_presets()), '<presets>') AS message, hint
FROM error_of($$SELECT snowflake_machine_id(1, 'snowflak')$$);
SELECT state, replace(message, (SELECT string_agg(name, ', ') FROM snowflake_presets()), '<presets>') AS message, hint
FROM error_of($$SELECT snowflake_sequence(1, '')$$);
SELECT * FROM error_of($$SELECT snowflake_timestamp(1, '2025-01-01+00', 0, 12)$$);
SELECT * FROM error_of($$SELECT snowflake_timestamp(1, '2025-01-01+00', 10, 25)$$);
SELECT * FROM error_of($$SELECT snowflake_decode(1, '2025-01-01+00', 20, 20)$$);
SELECT * FROM error_of($$SELECT snowflake_machine_id(1, '2025-01-01+00', 10, 12, 0)$$);
SELECT * FROM error_of($$SELECT snowflake_sequence(1, '2025-01-01+00', 10, 12, 60001)$$);
SELECT * FROM error_of($$SELECT snowflake_timestamp(1, '1969-12-31 23:00:00+00', 10, 12)$$);
SELECT * FROM error_of($$SELECT snowflake_timestamp(1, 'infinity', 10, 12)$$);
SELECT * FROM error_of($$SELECT snowflake_timestamp(-5, '2025-01-01+00', 10, 12)$$);
SELECT * FROM error_of($$SELECT snowflake_from_timestamp('2024-12-31+00', '2025-01-01+00', 10, 12)$$);
SELECT * FROM error_of($$SELECT snowflake_from_timestamp('2027-01-01+00', '2025-01-01+00', 24, 4)$$);
-- An index build that meets a bad argument fails whole, and leaves nothing behind.
SELECT * FROM error_of($$CREATE INDEX events_bad ON events (snowflake_timestamp(id, 'server'))$$);
SELECT count(*) AS events_indexes FROM pg_indexes WHERE tablename = 'events';
