// The package against a real server (libpq's PG* variables name it; the extension installed as the
// manual says), through node-postgres and Postgres.js: the server's layout read through each, every
// preset and the server's layout decoding as snowflake_decode() does (a preset copied wrong, or
// left stale after the core changed it, fails here), the bounds of snowflake_from_timestamp(), and
// ids sorted as ORDER BY id sorts them. Run with `node --test test/`.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import postgres from "postgres";
import { PRESETS, compareIds, preset, serverLayout, sortIds, toBigInt } from "pg-snowflake";

let client, sql;
before(async () => {
  client = new pg.Client();
  await client.connect();
  sql = postgres({ onnotice: () => {} });
});
after(async () => {
  await client.end();
  await sql.end();
});

let seed = 62n;
function random64() {
  seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
  return seed;
}
/** Ids over the whole range of bigint: the edges, each field's edges, and random ones. */
function sampleIds(layout, n) {
  const low = BigInt(layout.machineBits + layout.sequenceBits);
  const ids = [0n, 1n, (1n << 63n) - 1n, -1n, -(1n << 63n), (1n << low) - 1n, 1n << low];
  for (let i = 0; i < n; i++) ids.push(i % 2 ? BigInt.asIntN(64, random64()) : random64() >> BigInt(1 + (i % 44)));
  return ids.map(String);
}

/** Compares the client's decode of `ids` with snowflake_decode(id, layoutName), and the errors. */
async function compareDecode(layout, layoutName, ids) {
  const ok = [], refused = [];
  for (const id of ids) {
    try {
      ok.push([id, layout.decode(id)]);
    } catch (e) {
      refused.push([id, e.message]);
    }
  }
  const { rows } = await client.query(
    `SELECT i::text AS id, (extract(epoch FROM d.ts) * 1000)::bigint::text AS ms, d.machine_id, d.sequence
     FROM unnest($1::bigint[]) WITH ORDINALITY AS u(i, n), LATERAL snowflake_decode(i, $2) d ORDER BY n`,
    [ok.map(([id]) => id), layoutName]);
  assert.equal(rows.length, ok.length);
  rows.forEach((r, n) => {
    const [id, d] = ok[n];
    assert.deepEqual([d.unixMs, d.machineId, d.sequence], [Number(r.ms), r.machine_id, r.sequence], `${layoutName}: id ${id}`);
  });
  for (const [id, message] of refused) {
    await assert.rejects(client.query("SELECT snowflake_decode($1::bigint, $2)", [id, layoutName]), undefined, `${layoutName} refuses ${id} on the client (${message}), not on the server`);
  }
  return ok.length;
}

test("the server knows the same presets", async () => {
  await assert.rejects(client.query("SELECT snowflake_decode(1, 'no such layout')"), (e) => {
    assert.deepEqual(/known layouts: (.*)$/.exec(e.message)[1].split(", "), [...PRESETS, "server"]);
    return true;
  });
});

test("every preset decodes as the server does", async () => {
  for (const name of PRESETS) {
    const decoded = await compareDecode(preset(name), name, sampleIds(preset(name), 1000));
    assert.ok(decoded > 500, name);
  }
});

test("the server's layout, read through node-postgres and Postgres.js", async () => {
  const layout = await serverLayout(client);
  assert.deepEqual(await serverLayout(sql), layout);
  const { rows: [row] } = await client.query(
    "SELECT (extract(epoch FROM epoch) * 1000)::bigint::text AS epoch, time_unit_ms, timestamp_bits, machine_bits, sequence_bits, max_machine_id, ids_per_tick::text, (extract(epoch FROM timestamp_field_ends) * 1000)::bigint::text AS ends FROM snowflake_layout()");
  assert.deepEqual(row, {
    epoch: String(layout.epochMs), time_unit_ms: layout.tickMs, timestamp_bits: layout.timestampBits, machine_bits: layout.machineBits,
    sequence_bits: layout.sequenceBits, max_machine_id: layout.maxMachineId, ids_per_tick: String(layout.idsPerTick), ends: String(layout.endMs),
  });
  const { rows } = await client.query("SELECT snowflake_nextval()::text AS id FROM generate_series(1, 2000)");
  await compareDecode(layout, "server", rows.map((r) => r.id).concat(sampleIds(layout, 1000)));
  // Postgres.js's BigInt type, decoded as well.
  const big = postgres({ types: { bigint: postgres.BigInt }, onnotice: () => {} });
  try {
    const [{ id }] = await big`SELECT snowflake_nextval() AS id`;
    assert.equal(typeof id, "bigint");
    const [{ machine_id: m }] = await big`SELECT machine_id FROM snowflake_decode(${id})`;
    assert.equal(layout.machineId(id), m);
  } finally {
    await big.end();
  }
});

test("bounds as snowflake_from_timestamp() gives them, and the same refusals", async () => {
  const layout = await serverLayout(client);
  const times = [layout.epochMs, layout.epochMs - 1, Number(layout.endMs) - 1, Number(layout.endMs), Date.parse("1999-01-01T00:00:00Z")];
  for (let i = 0; i < 300; i++) times.push(layout.epochMs + Number(random64() % 2000000000000n));
  for (const ms of times) {
    let want;
    try {
      want = (await client.query("SELECT snowflake_from_timestamp($1)::text AS id", [new Date(ms)])).rows[0].id;
    } catch (e) {
      assert.throws(() => layout.fromTimestamp(ms), { message: e.message }, `the server refuses ${new Date(ms).toISOString()}`);
      continue;
    }
    assert.equal(layout.fromTimestamp(new Date(ms)), want);
  }
  // range(): the ids of a time range, as a primary-key range.
  await client.query("CREATE TEMP TABLE ranged AS SELECT snowflake_nextval() AS id FROM generate_series(1, 5000)");
  const { rows: [{ first, last }] } = await client.query("SELECT min(id)::text AS first, max(id)::text AS last FROM ranged");
  const [start, end] = [layout.timestamp(first), layout.timestamp(last)];
  const { from, to } = layout.range(start, end);
  const count = async (q, p) => Number((await client.query(q, p)).rows[0].count);
  assert.equal(await count("SELECT count(*) FROM ranged WHERE id >= $1 AND id < $2", [from, to]),
    await count("SELECT count(*) FROM ranged WHERE snowflake_timestamp(id) >= $1 AND snowflake_timestamp(id) < $2", [start, end]));
  assert.equal(await count("SELECT count(*) FROM ranged WHERE id >= $1", [layout.range(new Date("2000-01-01T00:00:00Z")).from]), 5000);
});

test("ids sort as ORDER BY id sorts them", async () => {
  const ids = [];
  for (let i = 0; i < 2000; i++) {
    const r = random64();
    ids.push(String(i % 2 ? 10n ** 18n - 100000n + (r % 200000n) : (r >> 1n) >> BigInt(i % 40)));
  }
  const { rows } = await client.query("SELECT i::text AS id FROM unnest($1::bigint[]) i ORDER BY i", [ids]);
  assert.deepEqual(sortIds(ids), rows.map((r) => r.id));
  assert.deepEqual(sortIds(ids.map(toBigInt)), rows.map((r) => BigInt(r.id)));
  for (let i = 1; i < rows.length; i++) assert.ok(compareIds(rows[i - 1].id, rows[i].id) <= 0);
});
