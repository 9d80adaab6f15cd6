-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_bits = 8
-- conf: snowflake.sequence_bits = 15
-- conf: snowflake.machine_id = 255
-- log: LOG:  pg_snowflake: machine id 255, layout 40|8|15 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00
-- A layout from the seed's table, with the largest machine id it allows.
\ir ../harness/sql/seed_layout_checks.sql
