# A conversion on a logical replication publisher, with a real subscriber (issue 60, item 5): two
# servers, pub (pg_snowflake, machine id 3) publishing two integer-keyed tables and a table that
# references one, and sub subscribed to them (integer columns, as the publisher's were). The dry run
# on pub refuses (55000) while a slot exists, naming the statements to run on the subscribers; run
# there first, then the conversion with subscribers_widened => true: new ids replicate. The negative
# control: the same on another table whose subscriber was not widened (subscribers_widened => true
# said anyway): the subscription stops at the first new id (its apply worker's "out of range for
# type integer" in sub's log) and pub's slot keeps its WAL; widening the subscriber's column lets it
# catch up, no row lost.
export PGOPTIONS="-c client_min_messages=warning"
for n in pub sub; do
  init_cluster "$n" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 3" "wal_level = logical" \
    "wal_retrieve_retry_interval = 500ms"
  start_cluster "$n"
done
create_extension pub >/dev/null
psql_on pub -q -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" >/dev/null
schema="CREATE TABLE orders (id serial PRIMARY KEY, note text);
CREATE TABLE order_lines (id serial PRIMARY KEY, order_id int NOT NULL REFERENCES orders, sku text);
CREATE TABLE tickets (id serial PRIMARY KEY, note text);"
psql_on pub -q -c "$schema" -c "CREATE PUBLICATION shop FOR TABLE orders, order_lines" -c "CREATE PUBLICATION desk FOR TABLE tickets" \
  -c "INSERT INTO orders (note) SELECT 'old' FROM generate_series(1, 5)" -c "INSERT INTO order_lines (order_id, sku) SELECT id, 'x' FROM orders" \
  -c "INSERT INTO tickets (note) SELECT 'old' FROM generate_series(1, 5)"
psql_on sub -q -c "$schema"
conn="host=$SCRATCH port=$(port_of pub) dbname=postgres user=postgres"
for p in shop desk; do
  psql_on sub -q -c "CREATE SUBSCRIPTION ${p}_sub CONNECTION '$conn' PUBLICATION $p"
done
# rows_on_sub TABLE N: until sub has N rows in TABLE (at most 60 s); prints yes or no.
rows_on_sub() {
  local _
  for _ in $(seq 1 300); do
    [ "$(psql_on sub -At -c "SELECT count(*) FROM $1")" = "$2" ] && { echo yes; return 0; }
    sleep 0.2
  done
  echo no
}
echo "the subscriber has the rows: orders $(rows_on_sub orders 5), order_lines $(rows_on_sub order_lines 5), tickets $(rows_on_sub tickets 5)"

echo "== the dry run on the publisher: refused, with the subscribers' statements"
psql_on pub -At -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('orders', 'id')\$\$)"
echo "== the subscriber widened first (the hint's statements), then the conversion here"
psql_on pub -At -c "SELECT substring(hint FROM 'first: (.*) \\(a bigint column') FROM error_of(\$\$SELECT snowflake_convert_column('orders', 'id')\$\$)" \
  | tee "$SCRATCH/on_sub.sql"
psql_on sub -q -f "$SCRATCH/on_sub.sql"
psql_on pub -At -c "SELECT * FROM snowflake_convert_column('orders', 'id', dry_run => false, subscribers_widened => true)"
psql_on pub -q -c "INSERT INTO orders (note) SELECT 'new' FROM generate_series(1, 5)" \
  -c "INSERT INTO order_lines (order_id, sku) SELECT id, 'y' FROM orders WHERE note = 'new'"
echo "new ids on the subscriber: orders $(rows_on_sub orders 10), order_lines $(rows_on_sub order_lines 10)"
psql_on sub -At -c "SELECT 'the same rows: ' || (SELECT count(*) FROM orders WHERE id > 2^53) || ' orders with snowflake ids, '
                    || (SELECT count(*) FROM order_lines l JOIN orders o ON o.id = l.order_id WHERE o.note = 'new') || ' lines joined'"

echo "== negative control: tickets converted without widening the subscriber"
psql_on pub -At -c "SELECT count(*) AS statements FROM snowflake_convert_column('tickets', 'id', dry_run => false, subscribers_widened => true)"
psql_on pub -q -c "INSERT INTO tickets (note) VALUES ('new')"
for _ in $(seq 1 300); do
  grep -q 'out of range for type integer' "$SCRATCH/sub.log" && break
  sleep 0.2
done
echo "the subscriber's apply worker stopped: $(grep -c 'out of range for type integer' "$SCRATCH/sub.log" | sed 's/^0$/no/; s/^[1-9][0-9]*$/yes/')"
psql_on pub -q -c "INSERT INTO tickets (note) VALUES ('newer')"
echo "tickets on the subscriber: $(psql_on sub -At -c "SELECT count(*) FROM tickets")"
lsn=$(psql_on pub -At -c "SELECT pg_current_wal_lsn()")
echo "the publisher's slot keeps its WAL: $(psql_on pub -At -c "SELECT confirmed_flush_lsn < '$lsn' FROM pg_replication_slots WHERE slot_name = 'desk_sub'")"
echo "== the subscriber's column widened: it catches up"
psql_on sub -q -c "ALTER TABLE tickets ALTER COLUMN id TYPE bigint"
echo "tickets on the subscriber: 7 $(rows_on_sub tickets 7)"
for _ in $(seq 1 300); do
  [ "$(psql_on pub -At -c "SELECT confirmed_flush_lsn >= '$lsn' FROM pg_replication_slots WHERE slot_name = 'desk_sub'")" = t ] && break
  sleep 0.2
done
echo "the publisher's slot caught up: $(psql_on pub -At -c "SELECT confirmed_flush_lsn >= '$lsn' FROM pg_replication_slots WHERE slot_name = 'desk_sub'")"
