# pg_dump and pg_restore, custom and plain formats: a database with tables keyed by DEFAULT
# snowflake_nextval() on a server with machine id 7, restored into a server with machine id 9.
# The dump holds CREATE EXTENSION, not the extension's functions, and no generator state (there is
# none to hold: an id depends on the server's clock, machine id and mark, never on the database).
# The restores print no warning or error, the extension has a fresh install's catalog, the old
# ids come back unchanged, and new rows get machine id 9 and increasing ids. Then the bad input:
# the same dump restored into a server that does not preload the library restores, and the first
# insert says what is wrong.
init_cluster src "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
init_cluster dst "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 9"
init_cluster nopreload "snowflake.machine_id = 11"
start_cluster src
start_cluster dst
start_cluster nopreload
catalog() { psql_on "$1" -d "$2" -At -f "$PROJECT_DIR/pgrx-tests/harness/sql/extension_catalog.sql"; }
# contents CLUSTER DB: the old rows, as one checksum.
contents() {
  psql_on "$1" -d "$2" -At -c "SELECT count(*) || ' orders, ' || md5(string_agg(id || ':' || item, ',' ORDER BY id)) FROM orders" \
    -c "SELECT count(*) || ' events, ' || md5(string_agg(id::text, ',' ORDER BY id)) FROM events"
}

psql_on src -c "CREATE DATABASE app"
create_extension src app
psql_on src -d app -At <<'SQL'
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL);
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), order_id bigint REFERENCES orders);
CREATE VIEW recent_orders AS
  SELECT o.id, o.item, d.ts FROM orders o, LATERAL snowflake_decode(o.id) d
  WHERE o.id >= snowflake_from_timestamp(now() - interval '1 day');
INSERT INTO orders(item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
INSERT INTO events(order_id) SELECT id FROM orders;
SQL
contents src app >"$SCRATCH/src.contents"
catalog src app >"$SCRATCH/src.catalog"
echo "source: $(head -n 1 "$SCRATCH/src.contents" | cut -d, -f1), machine ids $(psql_on src -d app -At -c "SELECT string_agg(DISTINCT snowflake_machine_id(id)::text, ',') FROM orders")"

dump_args=(-h "$SCRATCH" -p "$(port_of src)" -U postgres -d app)
"$PG_BIN/pg_dump" "${dump_args[@]}" -Fc -f "$SCRATCH/app.dump" 2>"$SCRATCH/dump.err"
"$PG_BIN/pg_dump" "${dump_args[@]}" -Fp -f "$SCRATCH/app.sql" 2>>"$SCRATCH/dump.err"
echo "pg_dump (custom and plain): $(wc -l <"$SCRATCH/dump.err") lines on stderr"
echo "the plain dump creates the extension: $(grep -c '^CREATE EXTENSION IF NOT EXISTS pg_snowflake WITH SCHEMA snowflake;$' "$SCRATCH/app.sql")"
echo "... and none of its functions or types: $(grep -ciE '^CREATE (FUNCTION|TYPE) .*snowflake' "$SCRATCH/app.sql")"
echo "tables with DEFAULT snowflake_nextval(): $(grep -c 'DEFAULT snowflake.snowflake_nextval()' "$SCRATCH/app.sql")"

for format in custom plain; do
  echo "-- restored from the $format dump into the server with machine id 9"
  db="app_$format"
  # A dump of one database carries no ALTER DATABASE ... SET (pg_dump --create would): the new
  # database gets the README's search_path before the restore.
  psql_on dst -c "CREATE DATABASE $db" -c "ALTER DATABASE $db SET search_path = \"\$user\", public, snowflake"
  if [ "$format" = custom ]; then
    "$PG_BIN/pg_restore" -h "$SCRATCH" -p "$(port_of dst)" -U postgres -d "$db" --exit-on-error "$SCRATCH/app.dump" \
      >"$SCRATCH/restore.out" 2>&1 || echo "pg_restore failed"
  else
    psql_on dst -d "$db" -f "$SCRATCH/app.sql" >/dev/null 2>"$SCRATCH/restore.out" || echo "psql -f failed"
  fi
  echo "warnings and errors: $(grep -cE 'WARNING|ERROR|FATAL|error' "$SCRATCH/restore.out")"
  cat "$SCRATCH/restore.out"
  catalog dst "$db" | diff -q "$SCRATCH/src.catalog" - >/dev/null && echo "extension: the source's catalog (version, functions, types, ACLs, comments)"
  contents dst "$db" | diff -q "$SCRATCH/src.contents" - >/dev/null && echo "old rows: unchanged"
  psql_on dst -d "$db" -At <<'SQL'
SELECT max(id) AS old_max FROM orders \gset
CREATE TEMP TABLE new_ids (n serial, id bigint);
WITH i AS (INSERT INTO orders(item) SELECT 'new ' || g FROM generate_series(1, 500) g RETURNING id)
INSERT INTO new_ids(id) SELECT id FROM i;
INSERT INTO events(order_id) SELECT id FROM orders WHERE item LIKE 'new %';
SELECT 'new rows: machine id ' || string_agg(DISTINCT snowflake_machine_id(id)::text, ',')
       || ', above the old ids: ' || (min(id) > :old_max)
       || ', increasing: ' || bool_and(id > prev)
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM new_ids) t WHERE prev IS NOT NULL;
SELECT 'all ids distinct: ' || (count(DISTINCT id) = count(*)) FROM orders;
SELECT 'the view: ' || count(*) || ' rows' FROM recent_orders;
SQL
done

echo "-- bad input: restored into a server that does not preload the library"
psql_on nopreload -c "CREATE DATABASE app" -c "ALTER DATABASE app SET search_path = \"\$user\", public, snowflake"
"$PG_BIN/pg_restore" -h "$SCRATCH" -p "$(port_of nopreload)" -U postgres -d app --exit-on-error "$SCRATCH/app.dump" \
  >"$SCRATCH/restore.out" 2>&1 && echo "pg_restore: succeeded, $(wc -l <"$SCRATCH/restore.out") lines of output"
{ psql_on nopreload -d app -c "INSERT INTO orders(item) VALUES ('x')" 2>&1 || true; } | sed -n 's/^.*\(ERROR\|HINT\): */\1: /p'
