-- The fields of a snowflake id, as returned by snowflake_decode(id).
CREATE TYPE snowflake_parts AS (
    ts         timestamptz,  -- when the id was minted (the start of its tick)
    machine_id integer,      -- the machine id of the server that minted it
    sequence   integer       -- its position among the ids minted in that tick
);

-- The running layout, as returned by snowflake_layout().
CREATE TYPE snowflake_layout AS (
    epoch                timestamptz,  -- snowflake.epoch: the time of timestamp 0
    time_unit_ms         integer,      -- snowflake.time_unit: milliseconds per tick
    timestamp_bits       integer,      -- 63 - machine_bits - sequence_bits
    machine_bits         integer,      -- snowflake.machine_bits
    sequence_bits        integer,      -- snowflake.sequence_bits
    max_machine_id       integer,      -- 2^machine_bits - 1
    ids_per_tick         bigint,       -- 2^sequence_bits, per server
    ids_per_second       bigint,       -- per server, at most
    timestamp_field_ends timestamptz   -- the first time that no id can carry
);
