// The harness of the README's Node.js recipes (pg, postgres): pgrx-tests/checks/readme/clients.py appends
// it to the recipe, written from the README, and runs the two as one module. The recipe leaves
// `orderId` (the row "book"), `items` (the rows "item 0" to "item 999"), `ids` (their ids, in the
// order of `items`) and `body` (the JSON it would send a browser for the row "book", holding `id`);
// where it shows them, `minted` and `mintedByHand` (the row's time, decoded in the application) and
// `newestFirst` and `newestFirstByHand` (the ids sorted, newest first).
// Prints what it got, in the client's own type, for clients.py to compare with the server.
{
  const want = Array.from({ length: 1000 }, (_, n) => `item ${n}`);
  if (JSON.stringify(items) !== JSON.stringify(want)) throw new Error("items: the rows 'item 0' to 'item 999'");
  if (ids.length !== items.length) throw new Error(`${ids.length} ids for ${items.length} items`);
  console.log("type", typeof orderId);
  console.log("row", String(orderId), "book");
  ids.forEach((id, n) => {
    if (typeof id !== typeof orderId) throw new Error(`an id of type ${typeof id}`);
    console.log("row", String(id), items[n]);
  });
  // A JSON round trip: what a browser does with the body, JSON.parse, then BigInt(id) (the id is a
  // string in it).
  const parsed = JSON.parse(body);
  if (typeof parsed.id !== "string") throw new Error(`the body's id is a ${typeof parsed.id}, not a string`);
  console.log("json", BigInt(parsed.id).toString());
  if (typeof minted !== "undefined") console.log("minted", minted.toISOString());
  if (typeof mintedByHand !== "undefined") console.log("minted_by_hand", mintedByHand.toISOString());
  for (const [name, sorted] of [["newest_first", typeof newestFirst !== "undefined" ? newestFirst : null],
                                ["newest_first_by_hand", typeof newestFirstByHand !== "undefined" ? newestFirstByHand : null]]) {
    if (sorted) console.log(name, sorted.map(String).join(","));
  }
}
