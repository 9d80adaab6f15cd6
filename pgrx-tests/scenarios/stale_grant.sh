# majors: 15
# One id, once, from every backend of a server (issue 56), on a real server leasing its machine id
# from etcd (one member, TTL 10 s). A backend loads the grant (machine id 0, held until its local
# deadline U) and is stopped right there, between its load of the grant and its compare-and-swap
# (the test builds' hold point snowflake.fault_hold_at = 'grant_loaded', then SIGSTOP of that
# backend, as a stall of the scheduler or a page fault would). Meanwhile the lease of id 0 is
# revoked in etcd and another server's claim put in its place, as the review did; the worker loses
# id 0 and claims id 1; once the clock has passed U, other backends issue under id 1, at ticks at
# or above U. The stalled backend resumes (SIGCONT). With the grant checked at the tick issued and
# again after the compare-and-swap, its id is under id 1: no id of machine id 0 at or above U.
# Negative control: the check as before the fix (snowflake.fault_stale_grant, test builds only):
# the stalled backend issues under machine id 0 at a tick at or above U, an id the next holder of
# id 0 may issue too (it issues above id 0's mark, which is U). About 20 s.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
endpoint="http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}"

# etcd_json PATH JSON: a call of etcd's JSON gateway; prints the answer.
etcd_json() { etcd_curl "$endpoint$1" -sf --max-time 5 -d "$2"; }
b64() { printf '%s' "$1" | base64 -w0; }

run() { # run CONTROL(off|on)
  local control=$1 c=a_$1 prefix=/pg_snowflake/stale_$1
  init_leased "$c" "$prefix" "snowflake.etcd_lease_ttl = 10"
  start_cluster "$c"
  create_extension "$c"
  psql_on "$c" -q -c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), who text NOT NULL)"
  echo "the server holds machine id $(held_id "$c")"
  psql_on "$c" -q -c "INSERT INTO t (who) VALUES ('before')"
  # The stalled backend: it pauses after loading the grant (8 s), and is stopped there.
  : >"$SCRATCH/$c.stalled"
  psql_on "$c" -At -c "SET snowflake.fault_stale_grant = $control" -c "SET snowflake.fault_hold_at = 'grant_loaded'" \
    -c "SET snowflake.fault_hold_ms = 8000" -c "INSERT INTO t (who) VALUES ('stalled') RETURNING id" \
    >"$SCRATCH/$c.stalled" 2>&1 &
  local insert=$! pid="" i
  for i in $(seq 1 100); do
    pid=$(sed -n 's/.*process \([0-9]*\) pauses after loading the grant.*/\1/p' "$SCRATCH/$c.log" | tail -n 1)
    [ -z "$pid" ] || break
    sleep 0.1
  done
  [ -n "$pid" ] || die "the backend did not reach its hold point"
  kill -STOP "$pid"
  # The grant it loaded: machine id 0 until U (the status's deadline, ms since 1970).
  local until_ms lease
  read -r until_ms lease < <(psql_on "$c" -At -F ' ' -c "SELECT (extract(epoch FROM deadline) * 1000)::bigint, lease_id FROM snowflake_machine_id_status()")
  # The lease of id 0 revoked, and another server's claim put in its place (with a lease of its own).
  etcd_json /v3/kv/lease/revoke "{\"ID\": \"$((16#$lease))\"}" >/dev/null
  local other
  other=$(etcd_json /v3/lease/grant '{"TTL": 60}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["ID"])')
  local holder='{"system_identifier":"1","host":"another.example","port":5432,"data_directory":"/srv/other","postmaster":""}'
  etcd_json /v3/kv/txn "{\"compare\": [{\"key\": \"$(b64 "$prefix/claim/0")\", \"target\": \"CREATE\", \"create_revision\": \"0\"}],
    \"success\": [{\"request_put\": {\"key\": \"$(b64 "$prefix/claim/0")\", \"value\": \"$(b64 "$holder")\", \"lease\": \"$other\"}}]}" \
    | python3 -c 'import json, sys; print("another server claims id 0 in etcd:", json.load(sys.stdin).get("succeeded", False))'
  # The worker finds its lease gone and claims id 1.
  local now_id=""
  for i in $(seq 1 300); do
    now_id=$(psql_on "$c" -At -c "SELECT machine_id FROM snowflake_machine_id_status() WHERE held AND machine_id <> 0")
    [ -z "$now_id" ] || break
    sleep 0.1
  done
  echo "the server lost id 0 and holds machine id ${now_id:-none}"
  # Once the clock has passed U, other backends issue under id 1, at ticks at or above U.
  while [ "$(date +%s%3N)" -le $((until_ms + 50)) ]; do sleep 0.1; done
  for i in $(seq 1 20); do echo "INSERT INTO t (who) VALUES ('other');"; done | psql_on "$c" -q
  psql_on "$c" -At -c "SELECT 'other backends issued under id 1 at or above the old grant''s end: ' || bool_and((snowflake_decode(id)).machine_id = 1 AND (extract(epoch FROM snowflake_timestamp(id)) * 1000)::bigint >= $until_ms) FROM t WHERE who = 'other'"
  # The stalled backend resumes.
  kill -CONT "$pid"
  wait "$insert" || true
  psql_on "$c" -At -c "SELECT 'the stalled backend''s id: machine id ' || (snowflake_decode(id)).machine_id || CASE WHEN (extract(epoch FROM snowflake_timestamp(id)) * 1000)::bigint >= $until_ms THEN ', at or above' ELSE ', below' END || ' the old grant''s end' FROM t WHERE who = 'stalled'"
  psql_on "$c" -At -c "SELECT 'ids of machine id 0 at or above its grant''s end: ' || count(*) FROM t WHERE (snowflake_decode(id)).machine_id = 0 AND (extract(epoch FROM snowflake_timestamp(id)) * 1000)::bigint >= $until_ms"
  psql_on "$c" -At -c "SELECT 'no id twice on the server: ' || (count(*) = count(DISTINCT id)) FROM t"
  stop_cluster "$c"
}

echo "== the grant checked at the tick issued and after the compare-and-swap"
run off
echo "== negative control: the grant checked as before (snowflake.fault_stale_grant)"
run on
