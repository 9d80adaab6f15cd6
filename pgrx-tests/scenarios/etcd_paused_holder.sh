# majors: 15
# long: half a minute or more, queued first (it passed twice beside stress-ng --cpu 2 --io 1)
# The paused holder of a machine id leased from etcd (3 members on 127.0.0.1). Server a holds id 0
# (lease TTL 3 s) and inserts under load; every process of a is stopped (SIGSTOP: a VM pause, a
# stalled host) together with the etcd member it talks to, past its TTL. The other members expire
# a's lease; server b claims id 0 and inserts under load. a resumes (its etcd member still stopped,
# as after a partition): its pending inserts go on. With the lease's local deadline (checked on
# every id) a issues nothing under id 0 once the deadline passed: its inserts are refused (55000)
# until it claims another id, and across a and b no id repeats. Negative control: the deadline
# switched off (snowflake.fault_no_lease_deadline, test builds only): a goes on under id 0 beside
# b, and ids repeat. About 40 s.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 3
start_etcd
a_endpoint="http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}"
b_endpoints="http://127.0.0.1:${ETCD_CLIENT_PORTS[1]},http://127.0.0.1:${ETCD_CLIENT_PORTS[2]}"

# pids_of NAME: the postmaster of cluster NAME and its children.
pids_of() {
  local pm
  pm=$(head -n 1 "$SCRATCH/$1/postmaster.pid")
  echo "$pm" $(pgrep -P "$pm")
}
# load NAME SECONDS: single-row inserts, one after another, errors printed and skipped.
load() {
  local end=$((SECONDS + $2))
  while [ $SECONDS -lt $end ]; do
    for _ in $(seq 1 500); do echo "INSERT INTO t(node) VALUES ('$1');"; done
  done | psql_on "$1" -v ON_ERROR_STOP=0 >/dev/null 2>>"$SCRATCH/$1.errors" || true
}

run() { # run CONTROL(on|off)
  local control=$1 a=a_$1 b=b_$1 prefix=/pg_snowflake/paused_$1
  for c in "$a" "$b"; do
    local endpoints=$a_endpoint
    [ "$c" = "$b" ] && endpoints=$b_endpoints
    init_cluster "$c" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'etcd'" \
      "snowflake.etcd_endpoints = '$endpoints'" "snowflake.etcd_prefix = '$prefix'" "snowflake.etcd_lease_ttl = 3" \
      "snowflake.fault_no_lease_deadline = $control"
  done
  start_cluster "$a"
  create_extension "$a"
  psql_on "$a" -c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), node text NOT NULL)"
  echo "a holds machine id $(held_id "$a")"
  load "$a" 14 &
  local load_a=$!
  sleep 1
  # a and its etcd member stop; the other two expire a's lease.
  kill -STOP $(pids_of "$a") "$(etcd_pid 1)"
  local gone=no keys
  for _ in $(seq 1 300); do
    # Through a member that is running; a read during an election may fail: read again.
    if keys=$(etcd_keys "$prefix/claim/" 2) && ! grep -q "/claim/0$" <<<"$keys"; then
      gone=yes
      break
    fi
    sleep 0.1
  done
  echo "a's claim expired in etcd while a was stopped: $gone"
  start_cluster "$b"
  create_extension "$b"
  psql_on "$b" -c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), node text NOT NULL)"
  echo "b holds machine id $(held_id "$b")"
  load "$b" 6 &
  local load_b=$!
  sleep 1
  # a resumes; its etcd member stays stopped for 3 s more (a partition), then resumes too.
  kill -CONT $(pids_of "$a")
  sleep 3
  kill -CONT "$(etcd_pid 1)"
  wait "$load_b" "$load_a"
  psql_on "$b" -c "CREATE TABLE a_ids (id bigint NOT NULL)"
  psql_on "$a" -c "\\copy (SELECT id FROM t) TO STDOUT" | psql_on "$b" -c "\\copy a_ids FROM STDIN"
  psql_on "$b" -At -c "SELECT 'ids that a and b both issued: ' || CASE WHEN count(*) > 0 THEN 'some' ELSE 'none' END FROM a_ids JOIN t USING (id)"
  psql_on "$b" -At -c "SELECT 'deadline off = $control: ' || count(*) || ' ids both a and b issued, of ' || (SELECT count(*) FROM a_ids) || ' by a' FROM a_ids JOIN t USING (id)" >>"$REPORT"
  if [ "$control" = off ]; then
    echo "a's inserts were refused for want of an id: $(grep -c 'no machine id is held' "$SCRATCH/$a.errors" | awk '{print ($1 > 0) ? "yes" : "no"}')"
    grep -m 1 -o 'ERROR:  no machine id is held: it is leased from etcd at [^ ]* (id space [^)]*)' "$SCRATCH/$a.errors" \
      | sed "s/${ETCD_CLIENT_PORTS[0]}/P1/"
    psql_on "$a" -At -c "SELECT 'a lost its lease and claimed another id: ' || (leases_lost >= 1 AND machine_id <> 0) FROM snowflake_machine_id_status()"
    # (Which refusals a meets depends on timing: its deadline passed with a renewal under way or
    # failed, its lease lost; each, with its hint, is a row of the Errors page.)
    python3 "$PROJECT_DIR/pgrx-tests/harness/errors_in_page.py" "a's refusals" "$SCRATCH/$a.errors" 2>>"$REPORT"
    grep -c 'no machine id is held' "$SCRATCH/$a.errors" | sed 's/^/refused inserts of a: /' >>"$REPORT"
  fi
  stop_cluster "$a"
  stop_cluster "$b"
}

echo "== with the deadline"
run off
echo "== negative control: the deadline switched off"
run on
