// The declarations (index.d.ts) as a TypeScript application uses them, checked by
// `tsc --noEmit --strict` (pgrx-tests/scenarios/client_packages.sh); never run.
import { Layout, PRESETS, compareIds, preset, serverLayout, sortIds, toBigInt, type Parts, type SnowflakeId } from "pg-snowflake";

// What serverLayout() takes: node-postgres's Client or Pool (a query() resolving to rows), or
// Postgres.js's sql (unsafe()).
type Queryable = { query(text: string): Promise<{ rows: any[] }> };

export async function example(client: Queryable): Promise<string[]> {
  const layout: Layout = await serverLayout(client);
  const parts: Parts = layout.decode("253014076999888896");
  const when: Date = parts.timestamp;
  const machine: number = layout.machineId(253014076999888896n);
  const { from, to } = layout.range(new Date(Date.now() - 3600_000), null);
  const ids: SnowflakeId[] = [from ?? "0", to ?? "0", layout.compose(when, machine, parts.sequence)];
  const sorted: SnowflakeId[] = sortIds(ids);
  const order: -1 | 0 | 1 = compareIds(sorted[0], sorted[1]);
  const big: bigint = toBigInt(sorted[0]);
  const names: readonly string[] = PRESETS;
  const discord: Layout = preset(names[1]);
  // @ts-expect-error: a Number is no id type (it has lost digits already)
  compareIds(1, 2);
  return [String(order), big.toString(), discord.fromTimestamp(0 + discord.epochMs)];
}
