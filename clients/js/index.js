// pg_snowflake's ids in JavaScript: decoded with BigInt (a Number loses the last digits of every id
// above 2^53), for every preset the server knows and for the server's own layout (read once with
// serverLayout()); compared and sorted as the decimal strings drivers return; and the id bounds of
// a time range, for `WHERE id >= $1 AND id < $2`.
import { PRESET_FIELDS } from "./presets.js";

const U64 = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
const DIGITS = /^-?(0|[1-9][0-9]*)$/;
// Date's range: ±100,000,000 days from 1970.
const DATE_MS = 8_640_000_000_000_000n;

/**
 * An id as a BigInt, from its decimal digits (what `pg` and Postgres.js return for a bigint), a
 * BigInt, or a Number that is a safe integer; anything else, or outside bigint's range, throws.
 */
export function toBigInt(id) {
  let value;
  if (typeof id === "bigint") value = id;
  else if (typeof id === "string") {
    if (!DIGITS.test(id)) throw new TypeError(`${JSON.stringify(id.slice(0, 40))} is not a snowflake id: decimal digits, without spaces or leading zeros`);
    value = BigInt(id);
  } else if (typeof id === "number") {
    if (!Number.isSafeInteger(id)) throw new TypeError(`${id} is not a safe integer: a snowflake id in a Number has lost digits already; keep it a string or a BigInt`);
    value = BigInt(id);
  } else throw new TypeError(`a snowflake id is a string of digits or a BigInt, not ${typeof id}`);
  if (value < I64_MIN || value > I64_MAX) throw new RangeError(`${value} is not a snowflake id: outside the range of bigint`);
  return value;
}

/** An id as its decimal digits, the form to send in JSON and to compare with compareIds(). */
export function toIdString(id) {
  return toBigInt(id).toString();
}

/**
 * Compares two ids (decimal strings or BigInts) as numbers: -1, 0 or 1, for Array.prototype.sort.
 * Strings are compared by length, then character by character: a plain `a < b` on strings puts
 * "999" after "1000", and ids grow a digit (18 to 19 with the default layout, on 2032-07-22).
 */
export function compareIds(a, b) {
  if (typeof a === "string" && typeof b === "string" && a[0] !== "-" && b[0] !== "-") {
    if (!DIGITS.test(a)) toBigInt(a);
    if (!DIGITS.test(b)) toBigInt(b);
    if (a.length !== b.length) return a.length < b.length ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const x = toBigInt(a), y = toBigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A copy of `ids`, sorted as numbers (ascending; `.reverse()` for newest first). */
export function sortIds(ids) {
  return [...ids].sort(compareIds);
}

function msOf(time) {
  if (time instanceof Date) {
    const ms = time.getTime();
    if (Number.isNaN(ms)) throw new RangeError("an invalid Date");
    return BigInt(ms);
  }
  if (typeof time === "number" && Number.isSafeInteger(time)) return BigInt(time);
  if (typeof time === "bigint") return time;
  throw new TypeError("a time is a Date, or milliseconds since 1970 (an integer Number or a BigInt)");
}

function dateOf(ms) {
  if (ms < -DATE_MS || ms > DATE_MS) throw new RangeError(`${ms} ms since 1970 is outside the range of Date`);
  return new Date(Number(ms));
}

// A time as the server's messages write it: 2025-01-01 00:00:00+00, milliseconds if any.
function text(ms) {
  if (ms < -DATE_MS || ms > DATE_MS) return `${ms} ms since 1970`;
  const iso = new Date(Number(ms)).toISOString();
  return iso.slice(0, 10) + " " + iso.slice(11, 19) + (ms % 1000n ? iso.slice(19, 23) : "") + "+00";
}

/**
 * How ids are cut, from the most significant bit down: the timestamp (ticks of `tickMs` since
 * `epochMs`, milliseconds since 1970), then the machine id and the sequence (the sequence above
 * the machine id with `sequenceAboveMachine`, as Sonyflake's). 63 bits (ids never negative) or 64
 * (Discord's and Instagram's, whose top bit is time).
 */
export class Layout {
  constructor({ epochMs, tickMs = 1, timestampBits, machineBits, sequenceBits, sequenceAboveMachine = false, name }) {
    for (const [k, v] of Object.entries({ epochMs, tickMs, timestampBits, machineBits, sequenceBits })) {
      if (!Number.isSafeInteger(v)) throw new TypeError(`${k} is an integer, not ${v}`);
    }
    if (tickMs < 1 || Math.min(timestampBits, machineBits, sequenceBits) < 1) throw new RangeError("a layout needs a tick of 1 ms or more and fields of 1 bit or more");
    const bits = timestampBits + machineBits + sequenceBits;
    if (bits !== 63 && bits !== 64) throw new RangeError(`${timestampBits} + ${machineBits} + ${sequenceBits} bits: a layout fills 63 or 64 bits`);
    Object.assign(this, { name, epochMs, tickMs, timestampBits, machineBits, sequenceBits, sequenceAboveMachine: Boolean(sequenceAboveMachine) });
    Object.freeze(this);
  }

  get bits() { return this.timestampBits + this.machineBits + this.sequenceBits; }
  get maxMachineId() { return 2 ** this.machineBits - 1; }
  get maxSequence() { return 2 ** this.sequenceBits - 1; }
  /** The ceiling of one server: this many ids per tick (4,096 per millisecond by default). */
  get idsPerTick() { return 2 ** this.sequenceBits; }
  get epoch() { return new Date(this.epochMs); }
  /** The first millisecond the timestamp field cannot carry, as a BigInt (it may pass Date's range). */
  get endMs() { return BigInt(this.epochMs) + (1n << BigInt(this.timestampBits)) * BigInt(this.tickMs); }
  /** When the timestamp field runs out (snowflake_layout().timestamp_field_ends). */
  get ends() { return dateOf(this.endMs); }

  #where() { return this.name && this.name !== "server" ? `the ${this.name} layout's` : "snowflake.epoch"; }

  #bitsOf(id) {
    const value = toBigInt(id);
    if (value < 0n && this.bits === 63) throw new RangeError(`snowflake id ${value} is negative`);
    return value & U64;
  }

  /** The fields of an id, as snowflake_decode(id) gives them; `unixMs` is the time in milliseconds. */
  decode(id) {
    const bits = this.#bitsOf(id);
    const m = BigInt(this.machineBits), s = BigInt(this.sequenceBits);
    let machineId, sequence;
    if (this.sequenceAboveMachine) {
      machineId = bits & ((1n << m) - 1n);
      sequence = (bits >> m) & ((1n << s) - 1n);
    } else {
      machineId = (bits >> s) & ((1n << m) - 1n);
      sequence = bits & ((1n << s) - 1n);
    }
    const ms = BigInt(this.epochMs) + (bits >> (m + s)) * BigInt(this.tickMs);
    return { timestamp: dateOf(ms), unixMs: Number(ms), machineId: Number(machineId), sequence: Number(sequence) };
  }

  /** When the id was minted (the start of its tick). */
  timestamp(id) { return this.decode(id).timestamp; }
  machineId(id) { return this.decode(id).machineId; }
  sequence(id) { return this.decode(id).sequence; }

  #tick(time) {
    const ms = msOf(time);
    if (ms < BigInt(this.epochMs)) throw new RangeError(`time ${text(ms)} is before ${this.#where()} ${text(BigInt(this.epochMs))}`);
    const tick = (ms - BigInt(this.epochMs)) / BigInt(this.tickMs);
    if (tick >= 1n << BigInt(this.timestampBits)) throw new RangeError(`time ${text(ms)} is past the end of the ${this.timestampBits}-bit timestamp field, ${text(this.endMs)}`);
    return tick;
  }

  /** The id with these fields (snowflake_compose()), its decimal digits; the time rounded down to its tick. */
  compose(time, machineId, sequence) {
    const tick = this.#tick(time);
    for (const [part, value, top] of [["machine_id", machineId, this.maxMachineId], ["sequence", sequence, this.maxSequence]]) {
      if (!Number.isSafeInteger(value)) throw new TypeError(`${part} is an integer, not ${value}`);
      if (value < 0 || value > top) throw new RangeError(`${part} ${value} is out of range (0 to ${top})`);
    }
    const m = BigInt(this.machineBits), s = BigInt(this.sequenceBits);
    const low = this.sequenceAboveMachine ? (BigInt(sequence) << m) | BigInt(machineId) : (BigInt(machineId) << s) | BigInt(sequence);
    // A 64-bit layout's ids past the middle of its field are negative bigints.
    return BigInt.asIntN(64, (tick << (m + s)) | low).toString();
  }

  /** The smallest id that can carry `time` (snowflake_from_timestamp()): a time range's lower bound.
   * A time before the epoch or past the field throws, as on the server; range() clamps instead. */
  fromTimestamp(time) { return this.compose(time, 0, 0); }

  /**
   * The ids minted from `start` (included) to `end` (excluded): `{ from, to }` for
   * `WHERE id >= from AND id < to`, to the tick; null where that side has no bound (no time given,
   * or an end past the field). A start before the epoch is the epoch, an end before it "0" (no id).
   * For 63-bit layouts (the server's, twitter, sonyflake, pgedge).
   */
  range(start, end) {
    if (this.bits !== 63) throw new RangeError(`range() is for 63-bit layouts; the ${this.name ?? "given"} layout's ids use all 64 bits`);
    let from = null, to = null;
    if (start != null) from = msOf(start) < BigInt(this.epochMs) ? "0" : this.fromTimestamp(start);
    if (end != null) {
      const ms = msOf(end);
      if (ms < BigInt(this.epochMs)) to = "0";
      else if (ms < this.endMs) to = this.fromTimestamp(end);
    }
    return { from, to };
  }
}

/** The names of the presets: the layouts of other systems that the server knows too. */
export const PRESETS = Object.freeze(Object.keys(PRESET_FIELDS));

/** The layout of another system by the server's name for it (one of PRESETS, as snowflake_presets() lists them; any case). */
export function preset(name) {
  const key = String(name).trim().toLowerCase();
  if (!Object.hasOwn(PRESET_FIELDS, key)) throw new RangeError(`unknown snowflake layout ${JSON.stringify(name)}; the presets are ${PRESETS.join(", ")} (and the server's own: serverLayout(db))`);
  return new Layout({ ...PRESET_FIELDS[key], name: key });
}

/** The query serverLayout() runs: the epoch in milliseconds, exactly, as text. */
export const LAYOUT_SQL = "SELECT (extract(epoch FROM epoch) * 1000)::bigint::text AS epoch_ms, time_unit_ms, timestamp_bits, machine_bits, sequence_bits FROM snowflake_layout()";

/** The Layout of a row of LAYOUT_SQL. */
export function layoutFromRow(row) {
  return new Layout({
    epochMs: Number(row.epoch_ms), tickMs: Number(row.time_unit_ms), timestampBits: Number(row.timestamp_bits),
    machineBits: Number(row.machine_bits), sequenceBits: Number(row.sequence_bits), name: "server",
  });
}

/**
 * The server's layout, read from snowflake_layout() through `db`: node-postgres (a Client or a
 * Pool: `.query()`) or Postgres.js (the `sql` function: `.unsafe()`). Read it once: it changes only
 * with the server's settings, at a restart.
 */
export async function serverLayout(db) {
  let rows;
  if (typeof db === "function" && typeof db.unsafe === "function") rows = await db.unsafe(LAYOUT_SQL);
  else if (db && typeof db.query === "function") rows = (await db.query(LAYOUT_SQL)).rows;
  else throw new TypeError("serverLayout() takes a node-postgres Client or Pool, or Postgres.js's sql");
  return layoutFromRow(rows[0]);
}
