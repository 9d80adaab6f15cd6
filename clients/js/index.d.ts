/** An id as drivers give it: its decimal digits (node-postgres, Postgres.js by default) or a BigInt. */
export type SnowflakeId = string | bigint;
/** A time: a Date, or milliseconds since 1970. */
export type Time = Date | number | bigint;

export interface Parts {
  /** When the id was minted (the start of its tick). */
  timestamp: Date;
  /** The same, in milliseconds since 1970. */
  unixMs: number;
  machineId: number;
  sequence: number;
}

export interface LayoutFields {
  epochMs: number;
  tickMs?: number;
  timestampBits: number;
  machineBits: number;
  sequenceBits: number;
  sequenceAboveMachine?: boolean;
  name?: string;
}

export class Layout {
  constructor(fields: LayoutFields);
  readonly name: string | undefined;
  readonly epochMs: number;
  readonly tickMs: number;
  readonly timestampBits: number;
  readonly machineBits: number;
  readonly sequenceBits: number;
  readonly sequenceAboveMachine: boolean;
  readonly bits: 63 | 64;
  readonly maxMachineId: number;
  readonly maxSequence: number;
  /** The ceiling of one server: this many ids per tick (4,096 per millisecond by default). */
  readonly idsPerTick: number;
  readonly epoch: Date;
  readonly endMs: bigint;
  readonly ends: Date;
  decode(id: SnowflakeId | number): Parts;
  timestamp(id: SnowflakeId | number): Date;
  machineId(id: SnowflakeId | number): number;
  sequence(id: SnowflakeId | number): number;
  /** The id with these fields, as its decimal digits. */
  compose(time: Time, machineId: number, sequence: number): string;
  /** The smallest id that can carry `time`; throws before the epoch and past the field. */
  fromTimestamp(time: Time): string;
  /** `WHERE id >= from AND id < to` for the ids minted in [start, end); null: no bound. */
  range(start?: Time | null, end?: Time | null): { from: string | null; to: string | null };
}

export const PRESETS: readonly string[];
export function preset(name: string): Layout;

export const LAYOUT_SQL: string;
export function layoutFromRow(row: { epoch_ms: string | number; time_unit_ms: number; timestamp_bits: number; machine_bits: number; sequence_bits: number }): Layout;
/** The server's layout through node-postgres (a Client or Pool) or Postgres.js (its `sql`). */
export function serverLayout(db: { query(text: string): Promise<{ rows: any[] }> } | { unsafe(text: string): PromiseLike<any[]> }): Promise<Layout>;

export function toBigInt(id: SnowflakeId | number): bigint;
export function toIdString(id: SnowflakeId | number): string;
/** -1, 0 or 1, comparing ids as numbers (strings: by length, then character by character). */
export function compareIds(a: SnowflakeId, b: SnowflakeId): -1 | 0 | 1;
export function sortIds<T extends SnowflakeId>(ids: readonly T[]): T[];
