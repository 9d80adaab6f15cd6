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
    ids_per_second       double precision,  -- per server, at most (a fraction for long ticks)
    timestamp_field_ends timestamptz   -- the first time that no id can carry
);

-- The generator's health, as returned by snowflake_stats().
CREATE TYPE snowflake_stats AS (
    ids_issued          bigint,            -- since the server started or the stats were reset
    sequence_waits      bigint,            -- calls that waited for the next tick: its sequence ran out
    clock_rollbacks     bigint,            -- times the clock was seen going backwards
    largest_rollback_ms bigint,            -- the largest step back seen
    wait_time_ms        double precision,  -- total time calls spent waiting (ticks, clock, mark)
    last_issued         timestamptz,       -- the time carried by the last id issued
    high_water_mark     timestamptz,       -- the durable promise: no id carries a later time
    mark_writes         bigint,            -- durable writes of the mark
    mark_waits          bigint,            -- calls that waited for a mark write (the lease worker fell behind)
    machine_id          integer,           -- snowflake.machine_id (NULL when unset)
    layout              text,              -- the running layout in one line
    stats_reset         timestamptz,       -- when the counters started
    mark_ahead_ms       bigint,            -- how far the mark is ahead of the clock now (negative: behind)
    writer_waits        bigint,            -- calls that waited for another process's mark write
    mark_wait_timeouts bigint,           -- ... and gave up after snowflake.max_mark_wait (55P03)
    writer_takeovers    bigint,            -- writer's flags taken over from a process that had ended
    standby_waits       bigint,            -- mark writes that waited for the synchronous standbys (lease_sync)
    standby_wait_timeouts bigint,          -- ... and gave up after snowflake.max_mark_wait (55000)
    clock_waits         bigint,            -- calls that waited for a clock behind (or standing still)
    clock_wait_timeouts bigint             -- ... and gave up after snowflake.max_clock_wait (58000)
);
