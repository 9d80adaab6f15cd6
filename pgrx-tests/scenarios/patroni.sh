# majors: 15
# alone: a real HA engine, whose timeouts the load of scenarios beside it could stretch
# Failover through Patroni, the HA engine most fleets run (Debian's patroni 3.0 and etcd-server
# 3.4, installed by the test command; everything on 127.0.0.1). One etcd, two Patroni nodes a and b
# of the tests' PostgreSQL 15, configured with the README's Patroni recipe (its ```yaml block, in
# the section "### Patroni", merged into each node's patroni.yml): pg_snowflake preloaded and
# machine id 7 in the cluster-wide postgresql.parameters, use_pg_rewind. b's clock runs 12 s behind
# (the test builds' snowflake.fault_clock_offset, in b's own postgresql.parameters).
#
# Under insert load from four connections (pgrx-tests/scenarios/patroni.py, which keeps every id it
# was given, those whose commit the failover lost included): a's postmaster and Patroni are killed
# (SIGKILL); Patroni promotes b, whose first calls fail with the clock error until its clock passes
# the last lease it replayed. a's Patroni is started again: it finishes a's crash recovery in
# single-user mode, rewinds a with pg_rewind against b and starts it as b's replica (its log must
# say so: another path fails the scenario). a's clock is then set 15 s behind, and under load
# `patronictl switchover` makes a the leader again; more load. The whole history (every row and
# every id a client was given, each with the timeline of the primary that issued it) has no id
# twice, and the ids of each timeline lie above every id of the timelines before it.
# Then synchronous replication as the README's second block adds it (synchronous_mode,
# snowflake.lease_sync): the same failover under load, no acknowledged commit lost, no id repeated.
# Then the machine id leased from Patroni's etcd (the recipe's third block): a holds one, b none;
# the same failover under load; b, promoted, claims one; no id repeated, every id of b above a's.
# Negative control: the same failover with the lease's WAL record switched off
# (snowflake.fault_skip_lease_wal) re-issues ids of the old leader. About two minutes.
export PGOPTIONS="-c client_min_messages=error"
PY=/usr/bin/python3 # Debian's, with the psycopg2 and yaml that Debian's patroni depends on
LOAD="$PROJECT_DIR/pgrx-tests/scenarios/patroni.py"
LIBDIR=$("$PG_CONFIG" --libdir)

# The processes this scenario starts (etcd, each Patroni, the load), by pid; all stopped at the end,
# whatever happens (Patroni first, so that it restarts no postmaster; test.sh stops those left).
pids_dir="$SCRATCH/pids"
as_pg_owner mkdir -p "$pids_dir"
stop_pidfile() {
  local f=$1 pid i
  pid=$(cat "$f" 2>/dev/null) || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
stop_ours() {
  local f
  [ -z "${load_pid:-}" ] || kill "$load_pid" 2>/dev/null || true
  for f in "$pids_dir"/patroni_*; do [ -e "$f" ] && stop_pidfile "$f"; done
  for f in "$pids_dir"/*; do [ -e "$f" ] && stop_pidfile "$f"; done
  return 0
}
trap stop_ours EXIT
# start_bg NAME LOG CMD...: CMD in the background as the clusters' owner; its pid in $pids_dir/NAME.
start_bg() {
  local name=$1 log=$2
  shift 2
  as_pg_owner env LD_LIBRARY_PATH="$LIBDIR" sh -c 'echo $$ >"$0" || exit 1; exec "$@"' "$pids_dir/$name" "$@" >>"$log" 2>&1 &
  for _ in $(seq 1 50); do [ -s "$pids_dir/$name" ] && return 0; sleep 0.1; done
  echo "$name did not start"; exit 1
}

# Ports on 127.0.0.1 that are free now: etcd's two, and per run two nodes' PostgreSQL and REST API.
read -r etcd_client etcd_peer <<<"$(
  $PY -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')"
free_ports() {
  $PY -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}

start_bg etcd "$SCRATCH/etcd.log" etcd --name e1 --data-dir "$SCRATCH/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "e1=http://127.0.0.1:$etcd_peer"
for _ in $(seq 1 100); do
  curl -s --max-time 1 "http://127.0.0.1:$etcd_client/health" | grep -q '"health":"true"' && break
  sleep 0.1
done

# The manual's recipe: the ```yaml blocks of its section "Patroni" (on whichever page holds it,
# at any heading level), the first for every run, the second (synchronous replication) for the
# run `sync`.
recipe_page=$(cd "$PROJECT_DIR" && grep -lE '^#+ Patroni$' README.md $(ls docs/*.md 2>/dev/null))
"$PY" - "$PROJECT_DIR/$recipe_page" "$SCRATCH/recipe.yml" "$SCRATCH/sync.more.yml" "$SCRATCH/etcd.more.yml" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
i = next(n for n, l in enumerate(lines) if re.fullmatch(r"#+ Patroni", l))
end = next((n for n in range(i + 1, len(lines)) if re.match(r"#+ ", lines[n])), len(lines))
for out in sys.argv[2:]:
    start = lines.index("```yaml", i, end) + 1
    i = lines.index("```", start)
    open(out, "w").write("\n".join(lines[start:i]) + "\n")
PY
echo "-- the manual's Patroni recipe ($recipe_page, \"Patroni\"), merged into each node's patroni.yml:"
sed 's/^/   /' "$SCRATCH/recipe.yml"
echo "-- and for synchronous replication (the run sync):"
sed 's/^/   /' "$SCRATCH/sync.more.yml"
echo "-- and for the machine id leased from Patroni's etcd (the run etcd):"
sed 's/^/   /' "$SCRATCH/etcd.more.yml"

# write_config SCOPE NODE PG_PORT REST_PORT [local postgresql.parameters as name=value...]:
# $SCRATCH/SCOPE_NODE.yml, the scenario's own settings (ports, directories, trust on loopback,
# quick timeouts) with the README's recipe merged in, then $SCRATCH/SCOPE.more.yml if there is one
# (what the run adds: the synchronous recipe, a test build's switch).
write_config() {
  local scope=$1 node=$2
  "$PY" - "$SCRATCH" "$PG_BIN" "$etcd_client" "$@" <<'PY'
import sys, yaml
scratch, bin_dir, etcd, scope, node, pg_port, rest_port = sys.argv[1:8]
local = dict(p.split("=", 1) for p in sys.argv[8:])
config = {
    "scope": scope,
    "name": node,
    "log": {"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"},
    "restapi": {"listen": f"127.0.0.1:{rest_port}", "connect_address": f"127.0.0.1:{rest_port}"},
    "etcd3": {"hosts": f"127.0.0.1:{etcd}"},
    "bootstrap": {
        # Quick: the leader's key expires 6 s after its last renewal.
        "dcs": {"ttl": 6, "loop_wait": 1, "retry_timeout": 2, "maximum_lag_on_failover": 16777216,
                "postgresql": {"parameters": {"fsync": "off", "timezone": "UTC"}}},
        "initdb": ["no-sync", {"encoding": "UTF8"}],
    },
    "postgresql": {
        "listen": f"127.0.0.1:{pg_port}",
        "connect_address": f"127.0.0.1:{pg_port}",
        "data_dir": f"{scratch}/{scope}_{node}",
        "bin_dir": bin_dir,
        "basebackup": [{"checkpoint": "fast"}],
        "pgpass": f"{scratch}/{scope}_{node}.pgpass",
        "authentication": {"superuser": {"username": "postgres"}, "replication": {"username": "replicator"}},
        "parameters": {"unix_socket_directories": scratch, **local},
        "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust",
                   "host replication all 127.0.0.1/32 trust"],
    },
}


def merge(into, more):
    for k, v in more.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v


merge(config, yaml.safe_load(open(f"{scratch}/recipe.yml")))
try:
    merge(config, yaml.safe_load(open(f"{scratch}/{scope}.more.yml")))
except FileNotFoundError:
    pass
# The leased machine id's block replaces snowflake.machine_id (as it says), and leases from the
# scenario's etcd, Patroni's.
dcs = config["bootstrap"]["dcs"]["postgresql"]["parameters"]
if dcs.get("snowflake.machine_id_source") == "etcd":
    dcs.pop("snowflake.machine_id")
    dcs["snowflake.etcd_endpoints"] = f"http://127.0.0.1:{etcd}"
    dcs["snowflake.etcd_prefix"] = f"/pg_snowflake/{scope}"
with open(f"{scratch}/{scope}_{node}.yml", "w") as f:
    yaml.safe_dump(config, f)
PY
}

tcp_psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d postgres "${@:2}"; }
# rest PORT PATH: the HTTP status of Patroni's REST API (200: yes), 000 when it does not answer.
rest() { curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://127.0.0.1:$1$2" || true; }
# wait_for SECONDS WHAT CMD...: until CMD succeeds, at most SECONDS (then the scenario fails).
wait_for() {
  local seconds=$1 what=$2 i
  shift 2
  for i in $(seq 1 $((seconds * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "timed out after $seconds s waiting for: $what"
  exit 1
}
is_leader() { [ "$(rest "$1" /primary)" = 200 ]; }
# (A configuration reloaded before Patroni itself sees its replica running is not applied.)
is_running_replica() { [ "$(rest "$1" /replica)" = 200 ]; }
# sync_standby PG_PORT NODE: NODE is the synchronous standby of the primary on PG_PORT;
# streaming_to PG_PORT NODE: that primary streams to NODE (Patroni's application_name).
sync_standby() { [ "$(tcp_psql "$1" -At -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = '$2'")" = sync ]; }
streaming_to() { [ "$(tcp_psql "$1" -At -c "SELECT count(*) FROM pg_stat_replication WHERE application_name = '$2' AND state = 'streaming'")" = 1 ]; }
setting_is() { [ "$(tcp_psql "$1" -At -c "SHOW $2")" = "$3" ]; }
# count_on PORT TLI MIN: the primary on PORT holds at least MIN rows of timeline TLI.
count_on() { [ "$(tcp_psql "$1" -At -c "SELECT count(*) >= $3 FROM ids WHERE tli = $2")" = t ]; }
# above_on PORT TLI MIN: ... at least MIN rows of timeline TLI above every id of the timelines before.
above_on() { [ "$(tcp_psql "$1" -At -c "SELECT count(*) >= $3 FROM ids WHERE tli = $2 AND id > (SELECT max(id) FROM ids WHERE tli < $2)")" = t ]; }
# kill_node SCOPE NODE: SIGKILL to the node's Patroni and to its postmaster.
kill_node() {
  local postmaster
  postmaster=$(head -n 1 "$SCRATCH/$1_$2/postmaster.pid")
  kill -9 "$(cat "$pids_dir/patroni_$1_$2")" "$postmaster"
  rm -f "$pids_dir/patroni_$1_$2"
}
patroni_start() { start_bg "patroni_$1_$2" "$SCRATCH/patroni_$1_$2.log" patroni "$SCRATCH/$1_$2.yml"; }

# run SCOPE: one Patroni cluster named SCOPE, a its first leader, b (clock 12 s behind) its replica.
# Sets port_a port_b rest_a rest_b.
run_setup() {
  local scope=$1
  read -r port_a port_b rest_a rest_b <<<"$(free_ports 4)"
  write_config "$scope" a "$port_a" "$rest_a"
  write_config "$scope" b "$port_b" "$rest_b" "snowflake.fault_clock_offset=-12s"
  patroni_start "$scope" a
  wait_for 60 "a to bootstrap and lead" is_leader "$rest_a"
  # The timeline of the primary that issues each id, as the default of the row: promotions and
  # switchovers each begin a new one.
  create_extension_sql postgres | tcp_psql "$port_a"
  tcp_psql "$port_a" -c "
    CREATE FUNCTION current_timeline() RETURNS int LANGUAGE sql VOLATILE
      RETURN ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int" -c "
    CREATE TABLE ids (id bigint NOT NULL DEFAULT snowflake_nextval(), tli int NOT NULL DEFAULT current_timeline(),
                      label text NOT NULL, conn int NOT NULL, n int NOT NULL)"
  patroni_start "$scope" b
  wait_for 90 "b to stream from a" streaming_to "$port_a" b
  wait_for 30 "b's clock offset" setting_is "$port_b" snowflake.fault_clock_offset -12000
  if [ "$(tcp_psql "$port_a" -At -c "SHOW snowflake.machine_id_source")" = etcd ]; then
    wait_for 30 "a to hold a machine id" holds_id "$port_a"
    local held_b
    held_b=$(held_on "$port_b")
    echo "$scope: a leads and holds machine id $(held_on "$port_a") from etcd; b streams from it and holds ${held_b:-none}"
  else
    echo "$scope: a leads, b streams from it, both with machine id $(tcp_psql "$port_b" -At -c "SHOW snowflake.machine_id"), set in the DCS"
  fi
}
# held_on PORT: the machine id the server on PORT holds (leased), empty if none; holds_id PORT: one.
held_on() { tcp_psql "$1" -At -c "SELECT machine_id FROM snowflake_machine_id_status() WHERE held"; }
holds_id() { [ -n "$(held_on "$1")" ]; }

# load_start SCOPE LABEL: four connections inserting into the primary among a and b, in the
# background, until load_stop (its own bound, 600 s, is longer than every wait while it runs: under
# load, a bound of 120 s ran out while the switchover's waits still counted on it).
load_start() {
  rm -f "$SCRATCH/$1.ids.stop"
  "$PY" "$LOAD" "$SCRATCH/$1.ids" 600 4 "$2" "$port_a" "$port_b" >"$SCRATCH/$1.$2.load.log" 2>&1 &
  load_pid=$!
}
load_stop() {
  touch "$SCRATCH/$1.ids.stop"
  wait "$load_pid" || { echo "the load failed:"; cat "$SCRATCH/$1.$2.load.log"; exit 1; }
}

# failover SCOPE: under load, a's Patroni and postmaster killed; b promoted.
failover() {
  local scope=$1 started
  load_start "$scope" failover
  wait_for 60 "1,000 ids on a" count_on "$port_a" 1 1000
  sleep 2
  kill_node "$scope" a
  started=$(date +%s)
  wait_for 60 "Patroni to promote b" is_leader "$rest_b"
  echo "$scope: Patroni promoted b $(($(date +%s) - started)) s after a was killed" >>"$REPORT"
  echo "$scope: a killed (its Patroni and its postmaster, SIGKILL); Patroni promoted b"
  # Until b issued 1,000 ids above every id of a that it has (with the lease's record switched
  # off, its clock runs through a's last ids meanwhile).
  wait_for 120 "1,000 ids on b above a's" above_on "$port_b" 2 1000
  load_stop "$scope" failover
}

# history SCOPE PORT: every insert, from the table on the primary at PORT and from the clients'
# records (the ids of commits the failover lost are only there), one row each.
history() {
  local scope=$1 port=$2
  tcp_psql "$port" -c "CREATE TABLE acked (label text, conn int, n int, id bigint, tli int, port int)" \
    -c "\\copy acked FROM '$SCRATCH/$scope.ids' WITH (DELIMITER ' ')" -c "
    CREATE TABLE history AS
      SELECT label, conn, n, coalesce(i.id, a.id) AS id, coalesce(i.tli, a.tli) AS tli,
             i.id IS NULL AS lost, a.id IS NOT NULL AND i.id IS NOT NULL AND a.id <> i.id AS mismatch
      FROM ids i FULL JOIN acked a USING (label, conn, n)"
  tcp_psql "$port" -At <<SQL >>"$REPORT"
SELECT '$scope: timeline ' || tli || ': ' || count(*) || ' ids, ' || count(*) FILTER (WHERE lost) || ' of them given to a client in a commit lost by the failover'
FROM history GROUP BY tli ORDER BY tli;
SQL
}

# verdict SCOPE PORT: the history's checks (after history SCOPE PORT).
verdict() {
  tcp_psql "$2" -At <<SQL
SELECT '$1: ids given twice: ' || CASE WHEN count(*) = count(DISTINCT id) THEN 'none' ELSE 'some' END FROM history;
SELECT '$1: a row and its client disagree on its id: ' || count(*) FILTER (WHERE mismatch) FROM history;
SELECT '$1: timeline ' || t.tli || ': every id above every id of the timelines before it: '
       || (min(h.id) > (SELECT max(id) FROM history e WHERE e.tli < t.tli))
FROM (SELECT DISTINCT tli FROM history WHERE tli > 1) t JOIN history h USING (tli) GROUP BY t.tli ORDER BY t.tli;
SQL
  tcp_psql "$2" -At >>"$REPORT" <<SQL
SELECT '$1: ids of timeline 1 given again on timeline 2: ' || count(DISTINCT id) FROM history o
WHERE tli = 1 AND EXISTS (SELECT FROM history n WHERE n.tli = 2 AND n.id = o.id);
SQL
}

# What Patroni logged of the node's way back (in order), or what is missing.
patroni_path() {
  local log=$1 want line last=0
  for want in "doing crash recovery in a single user mode" "running pg_rewind from b" "pg_rewind exit code=0" \
      "starting as a secondary"; do
    line=$(grep -n -m 1 -F "$want" "$log" | cut -d: -f1 || true)
    if [ -z "$line" ]; then
      echo "a's Patroni log lacks: $want"
    elif [ "$line" -lt "$last" ]; then
      echo "a's Patroni log: $want (out of order)"
    else
      echo "a's Patroni log: $want"
      last=$line
    fi
  done
}

# The main run.
run_setup main
failover main
echo "main: b issued ids: $(tcp_psql "$port_b" -At -c "SELECT count(*) > 0 FROM ids WHERE tli = 2")"
sed -n 's/^failover clock_refusals /main: calls refused while the clock of b was behind: /p' "$SCRATCH/main.ids.counts" >>"$REPORT"
mark_before=$(mark_ms_of main_a)
# a back: Patroni finishes its crash recovery in single-user mode, rewinds it, starts it as a replica.
mv "$SCRATCH/patroni_main_a.log" "$SCRATCH/patroni_main_a.first.log"
patroni_start main a
wait_for 120 "a to stream from b" streaming_to "$port_b" a
patroni_path "$SCRATCH/patroni_main_a.log"
echo "main: a's mark after the rewind and the replay of b's WAL is above its own before: $([ "$(mark_ms_of main_a)" -gt "$mark_before" ] && echo true || echo false)"
# a's clock 15 s behind (its own postgresql.parameters, reloaded by Patroni): behind b's ids too.
wait_for 30 "Patroni to see a running as a replica" is_running_replica "$rest_a"
write_config main a "$port_a" "$rest_a" "snowflake.fault_clock_offset=-15s"
as_pg_owner env PATRONICTL_CONFIG_FILE="$SCRATCH/main_a.yml" patronictl reload main a --force >"$SCRATCH/reload.log" 2>&1 || { cat "$SCRATCH/reload.log"; exit 1; }
wait_for 30 "a's clock offset" setting_is "$port_a" snowflake.fault_clock_offset -15000
load_start main switchover
wait_for 60 "1,000 more ids on b" count_on "$port_b" 2 2000
as_pg_owner env PATRONICTL_CONFIG_FILE="$SCRATCH/main_a.yml" patronictl switchover main --leader b --candidate a --force \
  >"$SCRATCH/switchover.log" 2>&1 || { cat "$SCRATCH/switchover.log"; exit 1; }
wait_for 60 "a to lead" is_leader "$rest_a"
echo "main: patronictl switchover made a the leader again"
wait_for 120 "1,000 ids on a after the switchover" count_on "$port_a" 3 1000
load_stop main switchover
sed -n 's/^switchover clock_refusals /main: calls refused while the clock of a was behind after the switchover: /p' "$SCRATCH/main.ids.counts" >>"$REPORT"
load_start main after
sleep 2
load_stop main after
wait_for 60 "b to stream from a" streaming_to "$port_a" b
history main "$port_a"
echo "main: timelines (a, b, a again): $(tcp_psql "$port_a" -At -c "SELECT string_agg(DISTINCT tli::text, ' ') FROM history")"
verdict main "$port_a"
stop_pidfile "$pids_dir/patroni_main_a"
stop_pidfile "$pids_dir/patroni_main_b"

# Synchronous replication, as the README's second block adds it (synchronous_mode, lease_sync):
# the same failover under load; no commit a client was told of is lost, and no id repeats.
run_setup sync
wait_for 30 "b to be the synchronous standby" sync_standby "$port_a" b
echo "sync: b is a's synchronous standby; snowflake.lease_sync is $(tcp_psql "$port_a" -At -c "SHOW snowflake.lease_sync") on a, $(tcp_psql "$port_b" -At -c "SHOW snowflake.lease_sync") on b"
failover sync
history sync "$port_b"
echo "sync: commits lost by the failover though a client was told they committed: $(tcp_psql "$port_b" -At -c "SELECT count(*) FILTER (WHERE lost) FROM history")"
verdict sync "$port_b"
stop_pidfile "$pids_dir/patroni_sync_a"
stop_pidfile "$pids_dir/patroni_sync_b"

# The machine id leased from Patroni's etcd (the recipe's last block): the same failover under
# load; b, promoted, claims a machine id of its own (a's is held until its lease expires).
run_setup etcd
failover etcd
wait_for 30 "b to hold a machine id" holds_id "$port_b"
echo "etcd: promoted, b holds machine id $(held_on "$port_b") from etcd; a held $(tcp_psql "$port_b" -At -c "SELECT string_agg(DISTINCT snowflake_machine_id(id)::text, ' ') FROM ids WHERE tli = 1"), b issued under $(tcp_psql "$port_b" -At -c "SELECT string_agg(DISTINCT snowflake_machine_id(id)::text, ' ') FROM ids WHERE tli = 2")"
history etcd "$port_b"
verdict etcd "$port_b"
stop_pidfile "$pids_dir/patroni_etcd_a"
stop_pidfile "$pids_dir/patroni_etcd_b"

# The negative control: the same failover, the lease's WAL record switched off in the DCS.
printf '%s\n' "bootstrap:" "  dcs:" "    postgresql:" "      parameters:" "        snowflake.fault_skip_lease_wal: 'on'" \
  >"$SCRATCH/no_wal_record.more.yml"
run_setup no_wal_record
failover no_wal_record
history no_wal_record "$port_b"
verdict no_wal_record "$port_b"
