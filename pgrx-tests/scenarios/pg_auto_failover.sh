# majors: 15
# alone: a real HA engine, whose timeouts the load of scenarios beside it could stretch
# Failover through a real HA engine, pg_auto_failover (Debian's postgresql-15-auto-failover): a
# monitor and two nodes on this machine (loopback only), pg_snowflake preloaded on both with the
# same machine id, load from four connections on the primary, the secondary's clock 3 s behind,
# then the primary's keeper and postmaster killed (-9): the monitor promotes the secondary on its
# own. Every id the new primary issues lies above every id the old primary issued; none equals
# an id already in the table. (The negative control of the WAL record is in failover.sh.)
export PGOPTIONS="-c client_min_messages=error"
export XDG_CONFIG_HOME="$SCRATCH/xdg/config" XDG_DATA_HOME="$SCRATCH/xdg/data" PG_CONFIG
as_pg_owner mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME"
# tree PID: the process and all its descendants.
tree() { echo "$1"; local c; for c in $(pgrep -P "$1" || true); do tree "$c"; done; }
# At the end, every pg_autoctl process of this scenario (their titles change, their environment
# does not) is stopped; test.sh stops the postmasters left.
ours() {
  local pid
  for pid in $(pgrep -u postgres pg_autoctl || true); do
    { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" && echo "$pid"
  done
  return 0
}
stop_autoctl() {
  local pids i
  pids=$(ours)
  [ -n "$pids" ] && kill $pids 2>/dev/null
  for i in $(seq 1 100); do
    [ -z "$(ours)" ] && break
    sleep 0.1
  done
  pids=$(ours)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  # The postmasters they leave are stopped by the test command, like every scenario's.
  return 0
}
trap stop_autoctl EXIT

# The monitor's extension must be in the PostgreSQL under test: Debian's package installs it
# into Debian's PostgreSQL 15; copy it where it is missing (a PostgreSQL 15 of another build).
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/pgautofailover.control" ]; then
  cp /usr/lib/postgresql/15/lib/pgautofailover.so "$("$PG_CONFIG" --pkglibdir)/"
  cp /usr/share/postgresql/15/extension/pgautofailover* "$("$PG_CONFIG" --sharedir)/extension/"
fi

port_m=$(next_port); port_a=$((port_m + 1)); port_b=$((port_m + 2))
autoctl() { as_pg_owner env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" PG_CONFIG="$PG_CONFIG" \
  LD_LIBRARY_PATH="$("$PG_CONFIG" --libdir)" pg_autoctl "$@"; }
tcp_psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d postgres "${@:2}"; }
# reported NODE: the node's state as it last reported it to the monitor.
reported() { autoctl show state --pgdata "$SCRATCH/monitor" 2>/dev/null | awk -F'|' -v n="$1" '{gsub(/ /, "")} $1 == n {print $6}'; }
# wait_state NODE STATE... : at most 120 s.
wait_state() {
  local node=$1 s i
  shift
  for i in $(seq 1 240); do
    s=$(reported "$node")
    for want in "$@"; do [ "$s" = "$want" ] && return 0; done
    sleep 0.5
  done
  echo "node $node is $s, not $*"; autoctl show state --pgdata "$SCRATCH/monitor"; exit 1
}
# wait_tcp PORT: until the server on PORT accepts connections, at most 60 s.
wait_tcp() {
  for _ in $(seq 1 120); do tcp_psql "$1" -At -c "SELECT 1" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "no server on port $1"; exit 1
}
common=(--hostname 127.0.0.1 --listen 127.0.0.1 --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl")

autoctl create monitor --pgdata "$SCRATCH/monitor" --pgport "$port_m" "${common[@]}" >"$SCRATCH/monitor_create.log" 2>&1
autoctl run --pgdata "$SCRATCH/monitor" >"$SCRATCH/monitor_run.log" 2>&1 &
monitor="postgres://autoctl_node@127.0.0.1:$port_m/pg_auto_failover?sslmode=disable"
wait_tcp "$port_m"
tcp_psql "$port_m" -d pg_auto_failover -c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
  -c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 3000" -c "SELECT pg_reload_conf()" >/dev/null

autoctl create postgres --pgdata "$SCRATCH/a" --pgport "$port_a" --monitor "$monitor" --name a "${common[@]}" >"$SCRATCH/a_create.log" 2>&1
# pg_auto_failover's own settings preload pg_stat_statements; ours come after them.
printf '%s\n' "shared_preload_libraries = 'pg_stat_statements,pg_snowflake'" "snowflake.machine_id = 7" \
  | as_pg_owner tee -a "$SCRATCH/a/postgresql.auto.conf" >/dev/null
autoctl run --pgdata "$SCRATCH/a" >"$SCRATCH/a_run.log" 2>&1 &
wait_state a single
wait_tcp "$port_a"
create_extension_sql postgres | tcp_psql "$port_a"
tcp_psql "$port_a" \
  -c "CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int NOT NULL)"
autoctl create postgres --pgdata "$SCRATCH/b" --pgport "$port_b" --monitor "$monitor" --name b "${common[@]}" >"$SCRATCH/b_create.log" 2>&1
autoctl run --pgdata "$SCRATCH/b" >"$SCRATCH/b_run.log" 2>&1 &
wait_state b secondary
# a goes from wait_primary to primary only once it reports that b is its secondary; the monitor
# promotes no node while its primary is still in wait_primary (a CI run killed a there: b stayed
# secondary for the whole wait).
wait_state a primary
wait_tcp "$port_b"
echo "pg_auto_failover: a is the primary, b its secondary, both with machine id $(tcp_psql "$port_b" -At -c "SHOW snowflake.machine_id")"
echo "snowflake.fault_clock_offset = '-3s'" | as_pg_owner tee -a "$SCRATCH/b/postgresql.conf" >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/b" reload >/dev/null

echo 'INSERT INTO ids(conn) VALUES (:client_id);' >"$SCRATCH/insert.sql"
"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$port_a" -U postgres -c 4 -j 2 -t 300 -f "$SCRATCH/insert.sql" postgres \
  >"$SCRATCH/pgbench.log" 2>&1 || { cat "$SCRATCH/pgbench.log"; exit 1; }
lsn=$(tcp_psql "$port_a" -At -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 100); do
  [ "$(tcp_psql "$port_b" -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
  sleep 0.1
done
old_max=$(tcp_psql "$port_a" -At -c "SELECT max(id) FROM ids")
echo "the old primary issued over 1,000 ids: $(tcp_psql "$port_a" -At -c "SELECT count(*) > 1000 FROM ids")"

# Node a dies: its keeper and its postmaster, killed.
postmaster=$(head -n 1 "$SCRATCH/a/postmaster.pid")
keeper=$(pgrep -u postgres -f "^pg_autoctl run --pgdata $SCRATCH/a\$")
kill -9 $(tree "$keeper") "$postmaster"
started=$(date +%s)
wait_state b wait_primary primary
echo "the monitor promoted b after $(( $(date +%s) - started )) s" >>"$REPORT"
echo "pg_auto_failover promoted b"

tcp_psql "$port_b" -c "CREATE TABLE after (id bigint NOT NULL)"
issued=no
for _ in $(seq 1 30); do
  if tcp_psql "$port_b" -c "INSERT INTO after SELECT snowflake_nextval() FROM generate_series(1, 2000)" 2>"$SCRATCH/err"; then
    issued=yes
    break
  fi
  grep -q "behind the last snowflake id this server may have issued" "$SCRATCH/err" || { cat "$SCRATCH/err"; exit 1; }
  sleep 0.5
done
echo "the new primary issued ids: $issued"
tcp_psql "$port_b" -At <<SQL
SELECT 'its ids above every id the old primary issued: ' || (min(id) > $old_max) FROM after;
SELECT 'its ids equal to an id already in the table: ' || count(*) FROM after JOIN ids USING (id);
SQL
