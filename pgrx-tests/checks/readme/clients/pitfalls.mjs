// The pitfalls table of the README's section "From your application", the JavaScript rows: each
// prints "TEST: VALUE", VALUE being what the README's row must show (pgrx-tests/checks/readme/clients.py).
import pg from "pg";
import postgres from "postgres";

const id = "253178563728011265"; // the id of the README's example, above 2^53

// node-postgres told to make an int8 a Number (a common piece of advice): the digits are gone.
pg.types.setTypeParser(20, Number);
const client = new pg.Client();
await client.connect();
const { rows: [{ n }] } = await client.query(`SELECT ${id}::bigint AS n`);
await client.end();
if (typeof n !== "number" || String(n) === id) throw new Error(`expected a Number that lost digits, got ${typeof n} ${n}`);
console.log(`number: ${String(n)}`);

// (What the README says of postgres.js: by default an int8 is a string. The pg recipe shows pg's.)
const plain = postgres();
const [{ s }] = await plain`SELECT ${id}::bigint AS s`;
await plain.end();
if (s !== id) throw new Error(`postgres() by default: expected the string ${id}, got ${typeof s} ${s}`);

// A BigInt (postgres.js with postgres.BigInt) is exact, but JSON.stringify refuses it.
const sql = postgres({ types: { bigint: postgres.BigInt } });
const [row] = await sql`SELECT ${id}::bigint AS id`;
await sql.end();
if (row.id !== BigInt(id)) throw new Error(`expected the BigInt ${id}, got ${row.id}`);
try {
  JSON.stringify(row);
  throw new Error("JSON.stringify took a BigInt");
} catch (e) {
  if (!(e instanceof TypeError)) throw e;
  console.log(`bigint_json: ${e.name}: ${e.message}`);
}

// Ids sorted as plain strings: the 19-digit ids (the default layout's from 2032-07-22) come first.
const sorted = ["999999999999999999", "1000000000000000000"].sort();
if (sorted[0] !== "1000000000000000000") throw new Error(`expected the string sort to put the 19-digit id first, got ${sorted}`);
console.log(`string_sort: ${JSON.stringify(sorted)}`);
