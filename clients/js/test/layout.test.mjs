// The layouts' arithmetic and the ids' order, without a server (server.test.mjs compares the same
// with the server's functions). Run with `node --test test/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Layout, PRESETS, compareIds, preset, sortIds, toBigInt, toIdString } from "pg-snowflake";

const DEFAULT = new Layout({ epochMs: Date.parse("2025-01-01T00:00:00Z"), timestampBits: 41, machineBits: 10, sequenceBits: 12, name: "server" });

test("the published examples of the presets", () => {
  // Discord's developer documentation: created 2016-04-30 11:18:25.796 UTC by worker 1, process 0, increment 7.
  const d = preset("discord").decode("175928847299117063");
  assert.deepEqual(d, { timestamp: new Date("2016-04-30T11:18:25.796Z"), unixMs: Date.parse("2016-04-30T11:18:25.796Z"), machineId: 32, sequence: 7 });
  const p = preset("pgedge").decode(518514394326388845n);
  assert.equal(p.timestamp.toISOString().slice(0, 10), "2026-12-01");
  assert.deepEqual([p.machineId, p.sequence], [5, 109]);
  const s = preset("sonyflake").decode(((100n << 24n) | (7n << 16n) | 65535n).toString());
  assert.deepEqual([s.timestamp.toISOString(), s.machineId, s.sequence], ["2014-09-01T00:00:01.000Z", 65535, 7]);
  const tw = preset("TWITTER").decode(((1000n << 22n) | (3n << 17n) | (9n << 12n) | 42n).toString());
  assert.deepEqual([tw.timestamp.toISOString(), tw.machineId, tw.sequence], ["2010-11-04T01:42:55.657Z", (3 << 5) | 9, 42]);
});

test("every preset round-trips its extremes", () => {
  // The names themselves are the server's (server.test.mjs compares them with snowflake_presets()).
  assert.ok(PRESETS.length > 0 && new Set(PRESETS).size === PRESETS.length, "one name each");
  assert.ok(PRESETS.every((n) => n === n.toLowerCase()), "lower-case names");
  for (const name of PRESETS) {
    const l = preset(name);
    for (const ms of [l.epochMs, l.epochMs + 123456789, Number(l.endMs) - l.tickMs]) {
      const id = l.compose(ms, l.maxMachineId, l.maxSequence);
      const d = l.decode(id);
      assert.deepEqual([d.machineId, d.sequence], [l.maxMachineId, l.maxSequence], name);
      assert.equal(d.unixMs, l.epochMs + Math.floor((ms - l.epochMs) / l.tickMs) * l.tickMs, name);
    }
  }
  const discord = preset("discord");
  const late = discord.compose(new Date("2100-01-01T00:00:00Z"), 1, 1);
  assert.ok(late.startsWith("-"), "a 64-bit layout's late ids are negative bigints");
  assert.equal(discord.timestamp(late).toISOString(), "2100-01-01T00:00:00.000Z");
  assert.throws(() => preset("server"), /unknown snowflake layout/);
});

test("the server's default layout: a known id, the refusals", () => {
  assert.equal(DEFAULT.compose(new Date("2026-11-30T04:27:36.731Z"), 7, 0), "253014076999888896");
  assert.equal(DEFAULT.timestamp("253014076999888896").toISOString(), "2026-11-30T04:27:36.731Z");
  assert.equal(DEFAULT.ends.toISOString(), "2094-09-07T15:47:35.552Z");
  assert.equal(DEFAULT.idsPerTick, 4096);
  assert.throws(() => DEFAULT.fromTimestamp(new Date("2024-12-31T23:59:59.999Z")), { message: "time 2024-12-31 23:59:59.999+00 is before snowflake.epoch 2025-01-01 00:00:00+00" });
  assert.throws(() => DEFAULT.fromTimestamp(new Date("2100-01-01T00:00:00Z")), { message: "time 2100-01-01 00:00:00+00 is past the end of the 41-bit timestamp field, 2094-09-07 15:47:35.552+00" });
  assert.throws(() => DEFAULT.compose(Date.now(), 1024, 0), { message: "machine_id 1024 is out of range (0 to 1023)" });
  assert.throws(() => DEFAULT.compose(Date.now(), 0, 4096), { message: "sequence 4096 is out of range (0 to 4095)" });
  assert.throws(() => DEFAULT.decode("-42"), { message: "snowflake id -42 is negative" });
  for (const bad of [253014076999888896, "12 ", "0012", "1e3", "", "9223372036854775808", 1.5, null]) {
    assert.throws(() => DEFAULT.decode(bad), undefined, String(bad));
  }
});

test("a time range's bounds", () => {
  const { from, to } = DEFAULT.range(new Date("2026-11-30T00:00:00Z"), new Date("2026-12-01T00:00:00Z"));
  // The README's bounds of the same day.
  assert.deepEqual([from, to], ["252946730188800000", "253309118054400000"]);
  assert.deepEqual(DEFAULT.range(new Date("2020-01-01T00:00:00Z"), null), { from: "0", to: null });
  assert.deepEqual(DEFAULT.range(null, new Date("2020-01-01T00:00:00Z")), { from: null, to: "0" });
  assert.equal(DEFAULT.range(Date.now(), new Date("2200-01-01T00:00:00Z")).to, null);
  assert.throws(() => preset("discord").range(0, 1), /63-bit layouts/);
});

test("ids compare as numbers, as strings and as BigInts", () => {
  // The 18th to 19th digit: a plain string comparison gets it wrong.
  const a = "999999999999999999", b = "1000000000000000000";
  assert.equal(a < b, false, "what compareIds is for");
  assert.equal(compareIds(a, b), -1);
  assert.equal(compareIds(b, a), 1);
  assert.equal(compareIds(a, a), 0);
  assert.equal(compareIds(10n, "9"), 1);
  assert.equal(compareIds("-5", "3"), -1);
  assert.throws(() => compareIds("007", "8"), TypeError);
  assert.throws(() => compareIds("12a", "8"), TypeError);
  // Random ids around the digit boundary and across bigint's range: the order of BigInt.
  let seed = 62n;
  const next = () => (seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n));
  const ids = [];
  for (let i = 0; i < 3000; i++) {
    const r = next();
    ids.push((i % 3 === 0 ? 10n ** 18n - 5000n + (r % 10000n) : i % 3 === 1 ? r >> 1n : r >> BigInt(1 + (i % 60))).toString());
  }
  const want = [...ids].sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : BigInt(x) > BigInt(y) ? 1 : 0));
  assert.deepEqual(sortIds(ids), want);
  assert.deepEqual(sortIds(ids.map(BigInt)), want.map(BigInt));
  assert.notDeepEqual([...ids].sort(), want, "the default sort is wrong for these");
  assert.equal(toIdString(12n), "12");
  assert.equal(toBigInt("-9223372036854775808"), -(2n ** 63n));
  assert.throws(() => toBigInt(2 ** 60), /not a safe integer/);
});
