-- The fields of a snowflake id, as returned by snowflake_decode(id).
CREATE TYPE snowflake_parts AS (
    ts         timestamptz,  -- when the id was minted (to the millisecond)
    machine_id integer,      -- the snowflake.machine_id of the server that minted it
    sequence   integer       -- its position among the ids minted in that millisecond
);
