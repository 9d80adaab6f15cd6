# majors: 16 18
# Active-active on PostgreSQL's own logical replication (16+: CREATE SUBSCRIPTION ... WITH
# (origin = none) sends back only the changes made on the publisher itself, so that two servers can
# subscribe to each other). Two servers, machine ids 1 and 2, each publishing `events` and
# subscribing to the other's; both insert 2,000 rows through DEFAULT snowflake_nextval() at the same
# time, in 20 transactions each, and again with the link between them down while both insert. Every
# row arrives on both, no apply error, no duplicate key in either log, and the two tables are the
# same. The negative control: the same with a bigserial key (each server's own sequence, which
# logical replication does not carry) conflicts both ways, and the tables differ.
export PGOPTIONS="-c client_min_messages=warning"
for n in 1 2; do
  init_cluster "n$n" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = $n" "wal_level = logical" \
    "wal_retrieve_retry_interval = 500ms"
  start_cluster "n$n"
  create_extension "n$n"
  psql_on "n$n" <<'SQL'
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), node int NOT NULL, payload text);
CREATE TABLE serial_live (id bigserial PRIMARY KEY, node int NOT NULL, payload text);
CREATE TABLE serial_events (id bigserial PRIMARY KEY, node int NOT NULL, payload text);
CREATE PUBLICATION events FOR TABLE events;
CREATE PUBLICATION serial_live FOR TABLE serial_live;
CREATE PUBLICATION serial_events FOR TABLE serial_events;
SQL
done
# Each server subscribes to the other's publications: one subscription per table, so that the
# controls' errors cannot hold up the other tables' replication.
for pair in "1 2" "2 1"; do
  read -r me other <<<"$pair"
  conn="host=$SCRATCH port=$(port_of "n$other") dbname=postgres user=postgres"
  for t in events serial_live serial_events; do
    psql_on "n$me" -c "CREATE SUBSCRIPTION ${t}_from_n$other CONNECTION '$conn' PUBLICATION $t WITH (origin = none, copy_data = false)"
  done
done
# Until every subscription's apply worker is streaming (at most 60 s).
for _ in $(seq 1 120); do
  [ "$(psql_on n1 -At -c "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL")$(psql_on n2 -At -c "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL")" = 33 ] && break
  sleep 0.5
done
echo "two servers, machine ids $(psql_on n1 -At -c "SHOW snowflake.machine_id") and $(psql_on n2 -At -c "SHOW snowflake.machine_id"), each subscribed to the other (origin = none)"

# load TABLE [psql args]: both servers insert 2,000 rows into TABLE at the same time, 20 transactions of 100.
load() {
  local table=$1 n pids=()
  shift
  for n in 1 2; do
    {
      for t in $(seq 1 20); do
        echo "INSERT INTO $table(node, payload) SELECT $n, 'n$n-t$t-' || g FROM generate_series(1, 100) g;"
        echo "SELECT pg_sleep(0.01);"
      done
    } >"$SCRATCH/load_${table}_n$n.sql"
    psql_on "n$n" "$@" -f "$SCRATCH/load_${table}_n$n.sql" >/dev/null 2>"$SCRATCH/load_${table}_n$n.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "the load on $table failed"; cat "$SCRATCH"/load_*.err; exit 1; }; done
}
# dump NODE TABLE: the table's rows, sorted, into a file.
dump() { psql_on "n$1" -At -c "SELECT id, node, payload FROM $2 ORDER BY id" >"$SCRATCH/$2_n$1.txt"; }
rows_differing() { dump 1 "$1"; dump 2 "$1"; { diff "$SCRATCH/$1_n1.txt" "$SCRATCH/$1_n2.txt" || true; } | grep -c '^[<>]' || true; }
apply_errors() { psql_on "n$1" -At -c "SELECT coalesce(sum(apply_error_count), 0) FROM pg_stat_subscription_stats WHERE subname LIKE '$2%'"; }

# wait_rows TABLE N: until both servers have N rows in TABLE (at most 60 s); prints yes or no.
wait_rows() {
  local _
  for _ in $(seq 1 120); do
    if [ "$(psql_on n1 -At -c "SELECT count(*) FROM $1")" = "$2" ] && [ "$(psql_on n2 -At -c "SELECT count(*) FROM $1")" = "$2" ]; then
      echo yes
      return 0
    fi
    sleep 0.5
  done
  echo no
}
# link ON|OFF PREFIX: enables or disables both servers' subscriptions PREFIX_from_nX; OFF waits until
# their apply workers are gone (at most 60 s).
link() {
  local _
  psql_on n1 -c "ALTER SUBSCRIPTION $2_from_n2 $([ "$1" = ON ] && echo ENABLE || echo DISABLE)"
  psql_on n2 -c "ALTER SUBSCRIPTION $2_from_n1 $([ "$1" = ON ] && echo ENABLE || echo DISABLE)"
  [ "$1" = ON ] && return 0
  for _ in $(seq 1 120); do
    [ "$(psql_on n1 -At -c "SELECT count(*) FROM pg_stat_subscription WHERE subname LIKE '$2_from%' AND pid IS NOT NULL")$(psql_on n2 -At -c "SELECT count(*) FROM pg_stat_subscription WHERE subname LIKE '$2_from%' AND pid IS NOT NULL")" = 00 ] && return 0
    sleep 0.5
  done
  echo "the $2 subscriptions did not stop"; exit 1
}
# A duplicate key of TABLE, as a log says it: a local INSERT's or an apply worker's (up to 17)
# "duplicate key value violates unique constraint", or an apply worker's "conflict=insert_exists" (18+).
dup_pattern() { echo "duplicate key value violates unique constraint \"$1_pkey\"|conflict detected on relation \"public\.$1\": conflict=insert_exists"; }
# dup_in_log TABLE LOG...: true when one of the logs has a duplicate key of TABLE.
dup_in_log() { local t=$1; shift; grep -qE "$(dup_pattern "$t")" "$@"; }
# same_on_both TABLE TOTAL: what both servers hold in TABLE.
same_on_both() {
  local n
  for n in 1 2; do
    psql_on "n$n" -At -c "SELECT 'n$n: ' || count(*) || ' rows, ' || count(*) FILTER (WHERE node = 1) || ' from n1, ' || count(*) FILTER (WHERE node = 2) || ' from n2; machine field is the minting server: ' || bool_and(snowflake_machine_id(id) = node) FROM $1"
    echo "n$n: apply errors of its $1 subscription: $(apply_errors "$n" "$1_from")"
  done
  echo "rows that differ between n1 and n2: $(rows_differing "$1")"
}

echo "-- DEFAULT snowflake_nextval(), both servers inserting at the same time"
started=$(date +%s%N)
load events
arrived=$(wait_rows events 4000)
echo "snowflake ids: both servers' rows on both, in $(( ($(date +%s%N) - started) / 1000000 )) ms (load included)" >>"$REPORT"
echo "every row arrived on both servers (at most 60 s): $arrived"
same_on_both events
# The two servers' transactions interleave: ids of both servers alternate in id order.
psql_on n1 -At -c "SELECT 'the two servers inserted at the same time (their rows interleave in id order): ' || (count(*) FILTER (WHERE node <> prev) > 1)
                   FROM (SELECT node, lag(node) OVER (ORDER BY id) AS prev FROM events) s"

echo "-- the same with the link down while both insert (subscriptions disabled), then up again"
link OFF events
load events
link ON events
echo "every row arrived on both servers (at most 60 s): $(wait_rows events 8000)"
same_on_both events

echo "-- the negative control: bigserial, both servers inserting at the same time"
# Both sequences issue 1, 2, 3, ...: a replicated row meets a local one with its id, in the apply
# worker (an apply error; it retries and fails again) or, when the other's row came first, in the
# local INSERT (which is why this load does not stop at an error). Either way the message is in a log.
load serial_live -v ON_ERROR_STOP=0
conflicts=no
for _ in $(seq 1 120); do
  dup_in_log serial_live "$SCRATCH/n1.log" "$SCRATCH/n2.log" && { conflicts=yes; break; }
  sleep 0.5
done
echo "conflicts seen (a duplicate key in a log): $conflicts"
echo "all 4,000 rows on both servers: $([ "$(psql_on n1 -At -c "SELECT count(*) FROM serial_live")$(psql_on n2 -At -c "SELECT count(*) FROM serial_live")" = 40004000 ] && echo yes || echo no)"
echo "bigserial, live: apply errors n1 $(apply_errors 1 serial_live_from), n2 $(apply_errors 2 serial_live_from); rows n1 $(psql_on n1 -At -c "SELECT count(*) FROM serial_live"), n2 $(psql_on n2 -At -c "SELECT count(*) FROM serial_live")" >>"$REPORT"

echo "-- the negative control: bigserial, with the link down while both insert, then up again"
link OFF serial_events
load serial_events
link ON serial_events
# Until both subscriptions have met the conflict (at most 60 s).
for _ in $(seq 1 120); do
  [ "$(apply_errors 1 serial_events_from)" -gt 0 ] && [ "$(apply_errors 2 serial_events_from)" -gt 0 ] && break
  sleep 0.5
done
conflicts=no
if [ "$(apply_errors 1 serial_events_from)" -gt 0 ] && [ "$(apply_errors 2 serial_events_from)" -gt 0 ] \
  && dup_in_log serial_events "$SCRATCH/n1.log" && dup_in_log serial_events "$SCRATCH/n2.log"; then
  conflicts=yes
fi
echo "conflicts seen on both servers (apply_error_count > 0, a duplicate key in the log): $conflicts"
echo "bigserial, link down: apply errors n1 $(apply_errors 1 serial_events_from), n2 $(apply_errors 2 serial_events_from)" >>"$REPORT"
echo "the tables differ: $([ "$(rows_differing serial_events)" -gt 0 ] && echo yes || echo no)"

echo "-- and with snowflake ids, not one duplicate key in either log"
for n in 1 2; do
  echo "n$n: duplicate keys of events in the log: $(grep -cE "$(dup_pattern events)" "$SCRATCH/n$n.log" || true)"
done

# The subscriptions go first (each drops its slot on the other server), then test.sh stops the servers.
for pair in "1 2" "2 1"; do
  read -r me other <<<"$pair"
  for t in events serial_live serial_events; do psql_on "n$me" -c "DROP SUBSCRIPTION ${t}_from_n$other"; done
done
echo "replication slots left: $(( $(psql_on n1 -At -c "SELECT count(*) FROM pg_replication_slots") + $(psql_on n2 -At -c "SELECT count(*) FROM pg_replication_slots") ))"
rm -f "$SCRATCH"/load_* "$SCRATCH"/events_n?.txt "$SCRATCH"/serial_*_n?.txt
