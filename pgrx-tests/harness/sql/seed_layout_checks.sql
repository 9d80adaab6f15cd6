-- Shared by the seed_layout_* scenarios: 50,000 ids from a DEFAULT column under the cluster's
-- layout, each checked field by field against the layout read back from the settings.
\ir error_of.sql
\ir create_extension.sql
SELECT current_setting('snowflake.machine_bits')::int AS m,
       current_setting('snowflake.sequence_bits')::int AS s,
       current_setting('snowflake.machine_id')::bigint AS machine
\gset
SELECT 63 - :m - :s AS timestamp_bits, (1 << :m) AS machines, (1 << :s) AS ids_per_ms;
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int NOT NULL);
SELECT date_trunc('milliseconds', clock_timestamp()) AS t0 \gset
INSERT INTO t(n) SELECT g FROM generate_series(1, 50000) g;
SELECT clock_timestamp() AS t1 \gset
SELECT count(DISTINCT t.id) = 50000 AS all_unique,
       bool_and(d.machine_id = :machine) AS machine_field_is_ours,
       bool_and(d.sequence BETWEEN 0 AND (1 << :s) - 1) AS sequence_in_range,
       bool_and(d.ts BETWEEN :'t0' AND :'t1') AS time_within_the_insert,
       bool_and(t.id = ((((extract(epoch FROM d.ts) * 1000)::bigint - 1735689600000) << (:m + :s))
                        | (d.machine_id::bigint << :s) | d.sequence)) AS fields_rebuild_the_id
FROM t, LATERAL snowflake_decode(t.id) d;
SELECT count(*) AS out_of_order FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM t) s WHERE id <= prev;
-- No millisecond holds more ids than the sequence field allows.
SELECT max(c) <= (1 << :s) AS per_ms_within_the_sequence
FROM (SELECT count(*) AS c FROM t, LATERAL snowflake_decode(t.id) d GROUP BY d.ts) per_ms;
-- The largest id of this layout decodes to the largest machine id and sequence value.
SELECT machine_id = (1 << :m) - 1 AS max_machine, sequence = (1 << :s) - 1 AS max_sequence
FROM snowflake_decode(9223372036854775807);
