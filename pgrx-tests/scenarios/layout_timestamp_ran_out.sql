-- conf: shared_preload_libraries = 'pg_snowflake'
-- conf: snowflake.machine_id = 1
-- conf: snowflake.machine_bits = 16
-- conf: snowflake.sequence_bits = 9
-- conf: snowflake.epoch = '1970-01-01 00:00:00+00'
-- log: WARNING:  pg_snowflake cannot generate ids: the 38-bit timestamp field from snowflake.epoch 1970-01-01 00:00:00+00 ran out at 1978-09-17 10:58:26.944+00
-- 38 timestamp bits last 8.7 years: from 1970 they ran out in 1978. Old ids still decode.
\ir ../harness/sql/error_of.sql
\ir ../harness/sql/create_extension.sql
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT * FROM snowflake_decode(9223372036854775807);
