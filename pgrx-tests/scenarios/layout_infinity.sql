-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 3
-- conf: snowflake.time_unit = 60000
-- conf: snowflake.machine_bits = 16
-- conf: snowflake.sequence_bits = 9
-- A layout in the documented ranges whose timestamp field outlives timestamptz (38 bits of 60 s
-- ticks: 523,000 years): infinity and -infinity are no time an id can carry, and are refused
-- (22008) rather than turned into an id; the field's end is beyond any calendar.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT timestamp_bits, time_unit_ms, timestamp_field_ends FROM snowflake_layout();
-- 512 ids per 60 s tick: 8.53 a second, not rounded down to 8 (nor, with a 1-bit sequence, to 0).
SELECT ids_per_tick, round(ids_per_second::numeric, 4) AS ids_per_second FROM snowflake_layout();
SELECT * FROM error_of($$SELECT snowflake_from_timestamp('infinity')$$);
SELECT * FROM error_of($$SELECT snowflake_compose('infinity', 0, 0)$$);
SELECT * FROM error_of($$SELECT snowflake_from_timestamp('-infinity')$$);
-- The latest time timestamptz has still makes an id, and decodes back to it.
SELECT snowflake_timestamp(snowflake_from_timestamp('294276-12-31 23:59:00+00')) = '294276-12-31 23:59:00+00' AS latest_round_trips;
