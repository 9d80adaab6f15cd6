# long: half a minute or more, queued first
# Four servers, each with its own machine id, insert into their own table keyed by
# DEFAULT snowflake_nextval() at the same time (pgbench, 2 clients each, 4 seconds); every id is
# then gathered into one table with a unique index: no duplicate, each id's machine field is the
# server that minted it, and each server's ids increase in insertion order. The negative control:
# two servers sharing a machine id, driven at the same time, do mint duplicates, and the check
# finds them. snowflake_check_peers() is asked about both setups.
export PGOPTIONS="-c client_min_messages=error"
for n in 1 2 3 4; do
  init_cluster "node$n" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = $n"
done
init_cluster twin_a "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 9"
init_cluster twin_b "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 9"
init_cluster other_layout "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 5" \
  "snowflake.machine_bits = 7" "snowflake.sequence_bits = 14"
for c in node1 node2 node3 node4 twin_a twin_b other_layout; do
  start_cluster "$c"
  create_extension "$c"
  psql_on "$c" \
    -c "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int NOT NULL, ord bigserial)"
done
echo 'INSERT INTO orders(conn) VALUES (:client_id);' >"$SCRATCH/insert.sql"

# drive SECONDS CLUSTER...: pgbench on every cluster at once.
drive() {
  local seconds=$1 c pids=()
  shift
  for c in "$@"; do
    "$PG_BIN/pgbench" -n -h "$SCRATCH" -p "$(port_of "$c")" -U postgres -c 2 -j 1 -T "$seconds" \
      -f "$SCRATCH/insert.sql" postgres >"$SCRATCH/pgbench-$c.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "pgbench failed"; cat "$SCRATCH"/pgbench-*.log; exit 1; }; done
}

# gather INTO_TABLE CLUSTER...: copy every cluster's ids into a table of node1's.
gather() {
  local into=$1 c
  shift
  psql_on node1 -c "CREATE TABLE $into (id bigint NOT NULL, node text NOT NULL, conn int NOT NULL, ord bigint NOT NULL)"
  for c in "$@"; do
    psql_on "$c" -c "\\copy (SELECT id, '$c', conn, ord FROM orders) TO STDOUT" | psql_on node1 -c "\\copy $into FROM STDIN"
  done
}

drive 4 node1 node2 node3 node4
gather all_ids node1 node2 node3 node4
psql_on node1 -At -c "SELECT 'four servers: ' || count(*) || ' ids checked, ' || count(DISTINCT id) || ' distinct'  FROM all_ids" >>"$REPORT"
psql_on node1 -At <<'SQL'
SELECT 'ids checked: more than 10,000: ' || (count(*) > 10000) || ', from 4 servers: ' || (count(DISTINCT node) = 4) FROM all_ids;
SELECT 'duplicates: ' || (count(*) - count(DISTINCT id)) FROM all_ids;
CREATE UNIQUE INDEX ON all_ids (id);
SELECT 'unique index built';
SELECT 'machine field is the minting server: ' || bool_and((snowflake_decode(id)).machine_id = substr(node, 5)::int) FROM all_ids;
-- A connection's inserts are in order; two connections' defaults may interleave.
SELECT 'out of insertion order within a connection: ' || count(*)
FROM (SELECT id, lag(id) OVER (PARTITION BY node, conn ORDER BY ord) AS prev FROM all_ids) s WHERE id <= prev;
SQL

echo "-- negative control: two servers with machine id 9"
drive 3 twin_a twin_b
gather twin_ids twin_a twin_b
psql_on node1 -At -c "SELECT 'duplicates found: ' || (count(*) > count(DISTINCT id)) FROM twin_ids"
psql_on node1 -At -c "SELECT 'negative control: ' || count(*) || ' ids, ' || count(*) - count(DISTINCT id) || ' duplicates' FROM twin_ids" >>"$REPORT"

echo "-- snowflake_check_peers()"
conn() { echo "host=$SCRATCH port=$(port_of "$1") dbname=postgres user=postgres"; }
psql_on node1 -At -F ' | ' -c "CREATE EXTENSION dblink" -c "
  SELECT peer = 'this server' AS local, machine_id, problems FROM snowflake_check_peers(ARRAY['$(conn node2)', '$(conn node3)', '$(conn node4)'])"
psql_on twin_a -At -F ' | ' -c "CREATE EXTENSION dblink" -c "
  SELECT machine_id, problems FROM snowflake_check_peers(ARRAY['$(conn twin_b) password=secret', '$(conn other_layout)', 'host=$SCRATCH port=1 dbname=postgres'])" \
  | perl -0pe 's/cannot ask it: .*?"\}$/cannot ask it: (connection error)"}/gms'
psql_on twin_a -At -c "SELECT 'passwords hidden: ' || bool_and(peer NOT LIKE '%secret%') FROM snowflake_check_peers(ARRAY['$(conn twin_b) password=secret'])"
# A peer whose clock (as the generator reads it) is 5 s ahead.
psql_on node4 -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '5s'" -c "SELECT pg_reload_conf()" >/dev/null
psql_on node1 -At -c "SELECT machine_id, problems FROM snowflake_check_peers(ARRAY['$(conn node4)'], 1000) WHERE peer <> 'this server'" \
  | sed -E 's/clock is [0-9.]+ ms off/clock is N ms off/; s/give or take [0-9.]+ ms/give or take U ms/'
# The same clock, the same machine: never flagged, however slow the answer (its uncertainty, half
# the round trip, is shown beside the offset; CI under load once saw 123.5 ms "off" a peer on the
# same machine when the bare midpoint was compared).
psql_on node1 -At -c "SELECT 'a peer on the same clock flagged: ' || (problems <> '{}') || ', its offset within its uncertainty: ' || (abs(clock_offset_ms) <= clock_uncertainty_ms + 1) FROM snowflake_check_peers(ARRAY['$(conn node3)'], 1) WHERE peer <> 'this server'"
{ psql_on node2 -c "SELECT snowflake_check_peers('{}')" 2>&1 || true; } | sed -n 's/^.*ERROR: */without dblink: /p'

