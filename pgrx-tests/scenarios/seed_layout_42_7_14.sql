-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_bits = 7
-- conf: snowflake.sequence_bits = 14
-- conf: snowflake.machine_id = 127
-- log: LOG:  pg_snowflake: machine id 127, layout 42|7|14 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00
-- A layout from the seed's table, with the largest machine id it allows.
\ir ../harness/sql/seed_layout_checks.sql
