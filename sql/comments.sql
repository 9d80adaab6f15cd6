-- Descriptions shown by \df+ and \dT+.
COMMENT ON FUNCTION snowflake_nextval() IS
    'The next snowflake id of this server: 0 | timestamp | machine id | sequence, strictly increasing across all backends';
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'The timestamp, machine id and sequence of a snowflake id, under this server''s layout';
COMMENT ON TYPE snowflake_parts IS
    'The fields of a snowflake id, as returned by snowflake_decode()';
