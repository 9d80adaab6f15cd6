// The layouts of other systems' snowflake ids, as the server knows them (generated from src/core/src/presets.rs by clients/generate.py: do not edit).

/** @type {Record<string, {epochMs: number, tickMs: number, timestampBits: number, machineBits: number, sequenceBits: number, sequenceAboveMachine: boolean}>} */
export const PRESET_FIELDS = Object.freeze({
  // 41 | 10 (5 datacenter + 5 worker) | 12, epoch 2010-11-04 01:42:54.657 UTC.
  twitter: Object.freeze({ epochMs: 1288834974657, tickMs: 1, timestampBits: 41, machineBits: 10, sequenceBits: 12, sequenceAboveMachine: false }),
  // 42 | 10 (5 worker + 5 process) | 12, epoch 2015-01-01 00:00:00 UTC; all 64 bits.
  discord: Object.freeze({ epochMs: 1420070400000, tickMs: 1, timestampBits: 42, machineBits: 10, sequenceBits: 12, sequenceAboveMachine: false }),
  // 41 | 13 (logical shard) | 10, epoch 2011-08-24 21:07:01.721 UTC; all 64 bits.
  instagram: Object.freeze({ epochMs: 1314220021721, tickMs: 1, timestampBits: 41, machineBits: 13, sequenceBits: 10, sequenceAboveMachine: false }),
  // 39 (10 ms ticks) | 8 sequence | 16 machine, epoch 2014-09-01 00:00:00 UTC.
  sonyflake: Object.freeze({ epochMs: 1409529600000, tickMs: 10, timestampBits: 39, machineBits: 16, sequenceBits: 8, sequenceAboveMachine: true }),
  // pgEdge's snowflake extension (its snowflake.c: SNOWFLAKE_EPOCH_OFFSET 1672531200 s, SNOWFLAKE_MSEC_SHIFT 22 with a 41-bit mask, SNOWFLAKE_NODE_SHIFT 12 with a 10-bit mask, the count in bits 0-11): 41 ms | 10 node (snowflake.node) | 12 count, epoch 2023-01-01 UTC.
  pgedge: Object.freeze({ epochMs: 1672531200000, tickMs: 1, timestampBits: 41, machineBits: 10, sequenceBits: 12, sequenceAboveMachine: false }),
  // Baidu's uid-generator, its defaults (DefaultUidGenerator.java): sign | 28 s | 22 worker | 13 sequence, epoch 1463673600000 ms: 2016-05-20 00:00 in Beijing (+08), 2016-05-19 16:00 UTC.
  baidu: Object.freeze({ epochMs: 1463673600000, tickMs: 1000, timestampBits: 28, machineBits: 22, sequenceBits: 13, sequenceAboveMachine: false }),
});
