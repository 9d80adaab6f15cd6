"""The layouts of other systems' snowflake ids, as the server knows them (generated from src/core/src/presets.rs by clients/generate.py: do not edit)."""

# name: (epoch_ms, tick_ms, timestamp_bits, machine_bits, sequence_bits, sequence_above_machine)
PRESETS = {
    # 41 | 10 (5 datacenter + 5 worker) | 12, epoch 2010-11-04 01:42:54.657 UTC.
    "twitter": (1288834974657, 1, 41, 10, 12, False),
    # 42 | 10 (5 worker + 5 process) | 12, epoch 2015-01-01 00:00:00 UTC; all 64 bits.
    "discord": (1420070400000, 1, 42, 10, 12, False),
    # 41 | 13 (logical shard) | 10, epoch 2011-08-24 21:07:01.721 UTC; all 64 bits.
    "instagram": (1314220021721, 1, 41, 13, 10, False),
    # 39 (10 ms ticks) | 8 sequence | 16 machine, epoch 2014-09-01 00:00:00 UTC.
    "sonyflake": (1409529600000, 10, 39, 16, 8, True),
    # pgEdge's snowflake extension (its snowflake.c: SNOWFLAKE_EPOCH_OFFSET 1672531200 s, SNOWFLAKE_MSEC_SHIFT 22 with a 41-bit mask, SNOWFLAKE_NODE_SHIFT 12 with a 10-bit mask, the count in bits 0-11): 41 ms | 10 node (snowflake.node) | 12 count, epoch 2023-01-01 UTC.
    "pgedge": (1672531200000, 1, 41, 10, 12, False),
    # Baidu's uid-generator, its defaults (DefaultUidGenerator.java): sign | 28 s | 22 worker | 13 sequence, epoch 1463673600000 ms: 2016-05-20 00:00 in Beijing (+08), 2016-05-19 16:00 UTC.
    "baidu": (1463673600000, 1000, 28, 22, 13, False),
}
