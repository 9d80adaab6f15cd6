#!/usr/bin/env bash
# The etcd proxy's own test (harness/etcd_proxy.py, the test tool that faults the requests of a
# server pointed at it): one real etcd (Debian's 3.4, or etcd 3.5 with ETCD_VERSION=3.5), the proxy
# in front of it, and curl (or a raw socket, where the bytes themselves are compared) as the
# client. What the proxy does not fault reaches etcd and comes back unchanged, byte for byte; each
# fault does what it says, and only to the requests its rule names, counted as the rule says.
# One line a check (ok: / FAILED:), then "N passed, N failed"; exits non-zero on any failure. About
# 20 s. Needs no PostgreSQL and no build.
#
# Usage: bash pgrx-tests/harness/etcd_proxy_test.sh        (ETCD_VERSION=3.5 for etcd 3.5)
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# etcd itself: the set-up's etcd 3.5, or Debian's etcd-server (installed here if missing: this is a
# tool's test, not a scenario, and runs outside test.sh's set-up).
if [ "$ETCD_VERSION" = 3.5 ]; then
  ensure_etcd35
elif ! command -v etcd >/dev/null; then
  say "installing Debian's etcd-server and etcd-client"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
fi

SCRATCH=$(mktemp -d /tmp/etcd_proxy_test.XXXXXX)
PROXY_PID=
finish() {
  [ -z "$PROXY_PID" ] || kill "$PROXY_PID" 2>/dev/null || true
  stop_etcd
  # The member gone before its data directory is removed (at most 5 s).
  local _
  for _ in $(seq 1 50); do
    [ -f "$SCRATCH/etcd-e1.pid" ] && kill -0 "$(etcd_pid 1)" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"
}
trap finish EXIT

plan_etcd 1
start_etcd
EPORT=${ETCD_CLIENT_PORTS[0]}
E=http://127.0.0.1:$EPORT
# The proxy, in a subshell (not a job of this shell, whose end would report its kill); it prints
# its ports once it listens.
(
  python3 "$HARNESS_DIR/etcd_proxy.py" --listen 127.0.0.1:0 --upstream "127.0.0.1:$EPORT" \
    --control 127.0.0.1:0 --log "$SCRATCH/proxy.log" >"$SCRATCH/proxy.out" 2>"$SCRATCH/proxy.err" &
  echo $! >"$SCRATCH/proxy.pid"
)
PROXY_PID=$(cat "$SCRATCH/proxy.pid")
for _ in $(seq 1 100); do
  grep -q '^listen=' "$SCRATCH/proxy.out" && break
  sleep 0.05
done
read -r LISTEN CONTROL < <(sed -n 's/^listen=\([0-9]*\) control=\([0-9]*\)$/\1 \2/p' "$SCRATCH/proxy.out") \
  || { cat "$SCRATCH/proxy.err" >&2; die "the proxy printed no ports"; }
P=http://127.0.0.1:$LISTEN
C=http://127.0.0.1:$CONTROL
echo "etcd $("$ETCD_BIN" --version | sed -n 's/^etcd Version: //p') at $E, the proxy at $P (control $C)"

passed=0 failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1${2:+ (got: $2)}"; failed=$((failed + 1)); }
# check WHAT DETAIL CONDITION...: ok if the condition (a command) holds, else FAILED with DETAIL.
check() {
  local what=$1 detail=$2
  shift 2
  if "$@"; then ok "$what"; else bad "$what" "$detail"; fi
}

b64() { printf %s "$1" | base64 -w0; }
# The bodies of a put, a range and a txn that creates KEY if it is absent.
put() { printf '{"key":"%s","value":"%s"}' "$(b64 "/proxy-test/$1")" "$(b64 "$2")"; }
range() { printf '{"key":"%s"}' "$(b64 "/proxy-test/$1")"; }
create_txn() {
  printf '{"compare":[{"key":"%s","target":"CREATE","create_revision":"0"}],"success":[{"request_put":{"key":"%s","value":"%s"}}]}' \
    "$(b64 "/proxy-test/$1")" "$(b64 "/proxy-test/$1")" "$(b64 "$2")"
}
# in_etcd KEY: the value of /proxy-test/KEY, read from etcd directly (nothing if absent).
in_etcd() {
  curl -s --max-time 2 "$E/v3/kv/range" -d "$(range "$1")" | python3 -c 'import base64, json, sys
kvs = json.load(sys.stdin).get("kvs", [])
print(base64.b64decode(kvs[0]["value"]).decode() if kvs else "")'
}
# wait_in_etcd KEY VALUE: until /proxy-test/KEY holds VALUE (at most 5 s).
wait_in_etcd() {
  local _
  for _ in $(seq 1 50); do
    [ "$(in_etcd "$1")" = "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
# rule JSON: sets a rule; prints its id.
rule() {
  curl -sf --max-time 2 "$C/rule" -d "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' \
    || die "the proxy refused the rule $1"
}
control() { curl -sf --max-time 2 -X POST "$C$1" ${2:+-d "$2"}; }
# in_log EXPR: whether a line e of the proxy's log makes the Python expression EXPR true.
in_log() {
  curl -s --max-time 2 "$C/log" | python3 -c 'import json, sys
found = False
for line in sys.stdin:
    e = json.loads(line)
    try:
        found = found or bool(eval(sys.argv[1], {}, {"e": e}))
    except (KeyError, TypeError):
        pass
sys.exit(0 if found else 1)' "$1"
}
wait_log() {
  local _
  for _ in $(seq 1 50); do
    in_log "$1" && return 0
    sleep 0.1
  done
  return 1
}
# raw PORT PATH BODY: the whole answer to a POST sent as pg_snowflake sends it (Connection: close),
# its bytes as they came (CR and LF shown), the Date masked.
raw() {
  python3 - "$@" <<'PY'
import re, socket, sys
port, path, body = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
          b"Connection: close\r\n\r\n" % (path.encode(), port, len(body)) + body)
out = b""
while True:
    data = s.recv(65536)
    if not data:
        break
    out += data
out = re.sub(rb"\r\nDate: [^\r]*\r\n", b"\r\nDate: D\r\n", out)
print(out.decode("latin-1").replace("\r", "\\r").replace("\n", "\\n"))
PY
}
# curl_rc OUT CURL-ARGS...: curl's exit status, its output in $SCRATCH/OUT and its errors in OUT.err.
curl_rc() {
  local out=$1 rc=0
  shift
  curl -s -S "$@" >"$SCRATCH/$out" 2>"$SCRATCH/$out.err" || rc=$?
  echo "$rc"
}
ms() { date +%s%3N; }

# --- What is not faulted goes through unchanged.
answer=$(curl -s --max-time 5 "$P/v3/kv/put" -d "$(put pass v1)")
check "pass-through: a put through the proxy is answered by etcd and read back from etcd directly" "$answer; in etcd: $(in_etcd pass)" \
  test "$(in_etcd pass)" = v1 -a "${answer#*\"header\"}" != "$answer"
direct=$(raw "$EPORT" /v3/kv/range "$(range pass)")
proxied=$(raw "$LISTEN" /v3/kv/range "$(range pass)")
check "pass-through: a range's answer through the proxy is etcd's, byte for byte (the Date aside)" "$proxied vs $direct" \
  test "$proxied" = "$direct" -a "${direct:0:15}" = "HTTP/1.1 200 OK"
direct=$(raw "$EPORT" /v3/kv/lease/revoke '{"ID":"12345"}')
proxied=$(raw "$LISTEN" /v3/kv/lease/revoke '{"ID":"12345"}')
check "pass-through: etcd's own error (a revoke of no lease) comes back byte for byte, framing and all" "$proxied vs $direct" \
  test "$proxied" = "$direct" -a "${direct:0:22}" = "HTTP/1.1 404 Not Found"
answer=$(curl -s --max-time 5 -H 'Expect: 100-continue' "$P/v3/kv/range" -d "$(range pass)")
check "pass-through: a request with Expect: 100-continue gets etcd's whole answer after its 100 Continue" "$answer" \
  test "${answer#*\"kvs\"}" != "$answer"
curl -s --max-time 5 "$P/v3/auth/authenticate" -d '{"name":"root","password":"Planted-Pw"}' >/dev/null
check "the log names an authenticate's user, never its password" "$(grep -F authenticate "$SCRATCH/proxy.log")" \
  test "$(grep -c '"name": "root", "password": "\*\*\*"' "$SCRATCH/proxy.log")" = 1 -a "$(grep -c Planted-Pw "$SCRATCH/proxy.log")" = 0
check "the log names a forwarded put by its decoded key and value, and etcd's status" "$(cat "$SCRATCH/proxy.log")" \
  in_log 'e["event"] == "request" and e["path"] == "/v3/kv/put" and e["summary"] == {"key": "/proxy-test/pass", "value": "v1"} and e["upstream_status"] == 200'

# --- delay: a slow etcd. A put of another key is not held.
rule '{"path": "/v3/kv/put", "contains_b64": "/proxy-test/slow", "fault": {"kind": "delay", "ms": 1500}}' >/dev/null
t0=$(ms)
curl -s --max-time 5 "$P/v3/kv/put" -d "$(put fast f)" >/dev/null
fast=$(($(ms) - t0))
t0=$(ms)
answer=$(curl -s --max-time 5 "$P/v3/kv/put" -d "$(put slow s)")
slow=$(($(ms) - t0))
check "delay: the put of the rule's key is answered by etcd after 1.5 s ($slow ms), another key's at once ($fast ms)" "$answer" \
  test "$slow" -ge 1450 -a "$fast" -lt 1000 -a "$(in_etcd slow)" = s -a "${answer#*\"header\"}" != "$answer"

# --- late: never answered; applied after the client gave up.
rule '{"path": "/v3/kv/put", "contains_b64": "/proxy-test/late", "fault": {"kind": "late", "ms": 2500, "answer_after_ms": -1}}' >/dev/null
t0=$(ms)
rc=$(curl_rc late --max-time 1 "$P/v3/kv/put" -d "$(put late l)")
gave_up=$(($(ms) - t0))
before=$(in_etcd late)
wait_log 'e["event"] == "late_forwarded" and e["summary"]["key"] == "/proxy-test/late" and e["upstream_status"] == 200' || true
after=$(in_etcd late)
forwarded_at=$(curl -s "$C/log" | python3 -c 'import json, sys
print(*[e["after_ms"] for e in map(json.loads, sys.stdin) if e["event"] == "late_forwarded"])')
check "late: curl --max-time 1 gives up (exit 28 after $gave_up ms), the put is not in etcd then, and is after the proxy forwards it ($forwarded_at ms after it came)" \
  "curl exit $rc, before: '$before', after: '$after'" test "$rc" = 28 -a -z "$before" -a "$after" = l -a "${forwarded_at:-0}" -ge 2500
rule '{"path": "/v3/kv/put", "contains_b64": "/proxy-test/held", "fault": {"kind": "late"}}' >/dev/null
rc=$(curl_rc held --max-time 5 "$P/v3/kv/put" -d "$(put held h)")
sleep 0.5
before=$(in_etcd held)
pending=$(curl -s "$C/status")
released=$(control /release)
wait_in_etcd held h || true
check "late until POST /release: the connection closed without an answer (curl exit 52), the put held, then applied when released" \
  "curl exit $rc, before: '$before', $pending, $released, after: '$(in_etcd held)'" \
  test "$rc" = 52 -a -z "$before" -a "$released" = '{"released": 1}' -a "$(in_etcd held)" = h -a "${pending#*\"pending_late\": 1}" != "$pending"

# --- lose_answer: applied, and the client hears nothing.
rule '{"path": "/v3/kv/put", "contains_b64": "/proxy-test/lost", "fault": {"kind": "lose_answer"}}' >/dev/null
rc=$(curl_rc lost --max-time 5 "$P/v3/kv/put" -d "$(put lost x)")
check "lose_answer: curl gets no byte (exit 52, an empty reply), the put is in etcd" "curl exit $rc, $(wc -c <"$SCRATCH/lost") bytes, in etcd: '$(in_etcd lost)'" \
  test "$rc" = 52 -a ! -s "$SCRATCH/lost" -a "$(in_etcd lost)" = x

# --- etcd's error forms.
# error_check KIND FAULT-FIELDS STATUS BODY HEADER: a range answered by the fault KIND with HTTP
# STATUS, exactly BODY (curl undoes the chunks) and HEADER among its headers (length: the body's
# Content-Length); not forwarded.
error_check() {
  local kind=$1 fields=$2 status=$3 body=$4 header=$5 code
  [ "$header" != length ] || header="Content-Length: ${#body}"
  rule "{\"path\": \"/v3/kv/range\", \"contains\": \"/proxy-test/$kind\", \"fault\": {\"kind\": \"$kind\"$fields}}" >/dev/null
  code=$(curl -s --max-time 5 -D "$SCRATCH/$kind.head" -o "$SCRATCH/$kind.body" -w '%{http_code}' "$P/v3/kv/range" -d "$(range "$kind")")
  check "$kind$fields: HTTP $status, the body exactly $body" "HTTP $code, $(cat "$SCRATCH/$kind.body"), headers: $(tr -d '\r' <"$SCRATCH/$kind.head" | tr '\n' '|')" \
    test "$code" = "$status" -a "$(cat "$SCRATCH/$kind.body")" = "$body" -a "$(grep -ci "^$header" "$SCRATCH/$kind.head")" = 1
}
leader='"etcdserver: leader changed"'
error_check error34 ', "status": 503, "code": 14, "message": "etcdserver: leader changed"' 503 \
  "{\"error\":$leader,\"message\":$leader,\"code\":14}" "Transfer-Encoding: chunked"
error_check error35 ', "status": 503, "code": 14, "message": "etcdserver: leader changed"' 503 \
  "{\"error\":$leader,\"code\":14,\"message\":$leader}" length
error_check error36 ', "status": 503, "code": 14, "message": "etcdserver: leader changed"' 503 \
  "{\"code\":14,\"message\":$leader}" length
# (Another rule of the same kind: the first one, spent, is passed over.)
error_check error36 ', "code": 16, "message": "etcdserver: invalid auth token", "details": true' 401 \
  '{"code":16,"message":"etcdserver: invalid auth token","details":[]}' "WWW-Authenticate: etcdserver: invalid auth token"
# The form of this etcd's own version, against etcd itself: the same bytes but for the Date.
own=error${ETCD_VERSION/./}
rule "{\"path\": \"/v3/kv/lease/revoke\", \"fault\": {\"kind\": \"$own\", \"code\": 5, \"message\": \"etcdserver: requested lease not found\"}}" >/dev/null
faked=$(raw "$LISTEN" /v3/kv/lease/revoke '{"ID":"12345"}')
real=$(raw "$EPORT" /v3/kv/lease/revoke '{"ID":"12345"}')
check "$own: a faked revoke of no lease is etcd $ETCD_VERSION's own answer, byte for byte (the Date aside)" "$faked vs $real" \
  test "$faked" = "$real" -a "${real:0:22}" = "HTTP/1.1 404 Not Found"

# --- Answers that never end, or never stop.
rule '{"path": "/v3/kv/range", "contains": "/proxy-test/drip", "fault": {"kind": "drip", "interval_ms": 300}}' >/dev/null
rc=$(curl_rc drip.body --max-time 2 -D "$SCRATCH/drip.head" "$P/v3/kv/range" -d "$(range drip)")
dripped=$(wc -c <"$SCRATCH/drip.body")
check "drip: curl --max-time 2 gets the status line, Content-Length 1000000 and a few bytes ($dripped), then times out (exit 28)" \
  "curl exit $rc, $(head -c 200 "$SCRATCH/drip.head")" \
  test "$rc" = 28 -a "$(head -n 1 "$SCRATCH/drip.head" | tr -d '\r')" = "HTTP/1.1 200 OK" -a "$(grep -c '^Content-Length: 1000000' "$SCRATCH/drip.head")" = 1 \
  -a "$dripped" -ge 3 -a "$dripped" -le 8
rule '{"path": "/v3/kv/range", "contains": "/proxy-test/flood", "fault": {"kind": "flood"}}' >/dev/null
rc=0
flooded=$(curl -s --max-time 2 -o /dev/null -w '%{size_download}' "$P/v3/kv/range" -d "$(range flood)") || rc=$?
check "flood: curl --max-time 2 receives more than 10 MB ($((flooded / 1000000)) MB), then times out (exit 28)" "curl exit $rc, $flooded bytes" \
  test "$rc" = 28 -a "$flooded" -gt 10000000
check "flood: the proxy stops when the client closes, and logs how much it sent" "$(tail -n 3 "$SCRATCH/proxy.log")" \
  wait_log '"flood" in e.get("outcome", "") and "before the client closed" in e["outcome"]'

# --- No answer at all.
rule '{"path": "/v3/kv/range", "contains": "/proxy-test/reset", "fault": {"kind": "reset"}}' >/dev/null
rc=$(curl_rc reset --max-time 5 "$P/v3/kv/range" -d "$(range reset)")
check "reset: curl reports a reset (exit 56, $(cat "$SCRATCH/reset.err"))" "curl exit $rc" \
  test "$rc" = 56 -a "$(grep -c 'reset by peer' "$SCRATCH/reset.err")" = 1
rule '{"path": "/v3/kv/range", "contains": "/proxy-test/hole", "fault": {"kind": "blackhole"}}' >/dev/null
rc=$(curl_rc hole --max-time 1 "$P/v3/kv/range" -d "$(range hole)")
check "blackhole: curl --max-time 1 gets nothing and times out (exit 28); the proxy held the connection until then" \
  "curl exit $rc, $(wc -c <"$SCRATCH/hole") bytes" \
  test "$rc" = 28 -a ! -s "$SCRATCH/hole" -a "$(wait_log '"blackhole until the client closed" in e.get("outcome", "")' && echo y)" = y

# --- An answer that is not etcd's.
rule '{"path": "/v3/kv/put", "contains_b64": "/proxy-test/hollow", "fault": {"kind": "status_only"}}' >/dev/null
code=$(curl -s --max-time 5 -o "$SCRATCH/hollow" -w '%{http_code}' "$P/v3/kv/put" -d "$(put hollow y)")
check "status_only: HTTP 200 with the body {} and no header, the put never forwarded" "HTTP $code, $(cat "$SCRATCH/hollow"), in etcd: '$(in_etcd hollow)'" \
  test "$code" = 200 -a "$(cat "$SCRATCH/hollow")" = "{}" -a -z "$(in_etcd hollow)"

# --- Matching and counting.
id=$(rule '{"path": "/v3/kv/range", "contains": "/proxy-test/count", "nth": 2, "times": 2, "fault": {"kind": "error36"}}')
codes=$(for _ in 1 2 3 4 5; do curl -s --max-time 5 -o /dev/null -w '%{http_code} ' "$P/v3/kv/range" -d "$(range count)"; done)
applied=$(curl -s "$C/rules" | python3 -c 'import json, sys; print(*[r["applied"] for r in json.load(sys.stdin) if r["id"] == int(sys.argv[1])])' "$id")
check "nth 2, times 2: of five matching requests the 2nd and 3rd are faulted (GET /rules: applied $applied)" "$codes" \
  test "$codes" = "200 503 503 200 200 " -a "$applied" = 2
rule '{"path": "/v3/kv/range", "contains": "/proxy-test/ever", "times": -1, "fault": {"kind": "status_only"}}' >/dev/null
bodies=$(for _ in 1 2 3; do curl -s --max-time 5 "$P/v3/kv/range" -d "$(range ever)"; done)
cleared=$(control /clear)
after=$(curl -s --max-time 5 "$P/v3/kv/range" -d "$(range ever)")
check "times -1: every matching request is faulted until POST /clear; then etcd answers" "$bodies; $cleared; $after" \
  test "$bodies" = "{}{}{}" -a "${after#*\"header\"}" != "$after"
id=$(rule '{"path": "/v3/kv/txn", "contains": "/proxy-test/claim/", "fault": {"kind": "status_only"}}')
body=$(curl -s --max-time 5 "$P/v3/kv/txn" -d "$(create_txn claim/3 mine)")
check "contains: matches the key decoded from base64; the log shows the txn's compare and put" "$body; $(tail -n 1 "$SCRATCH/proxy.log")" \
  in_log "e['event'] == 'request' and e.get('rule') == $id and e['summary']['compare'] == ['CREATE(/proxy-test/claim/3) EQUAL 0'] and e['summary']['success'] == ['put /proxy-test/claim/3=mine'] and '$body' == '{}'"
rc=$(curl_rc unmatched --max-time 5 "$P/v3/kv/txn" -d "$(create_txn other/3 mine)")
check "contains: a txn on another key is not matched, and etcd applies it" "curl exit $rc, $(cat "$SCRATCH/unmatched")" \
  test "$(in_etcd other/3)" = mine

# --- The whole proxy down, then up.
control /down >/dev/null
rc=$(curl_rc down --max-time 5 "$P/v3/kv/put" -d "$(put down d)")
check "down: a connection is closed at once, unanswered (curl exit $rc), nothing reaches etcd" "$(cat "$SCRATCH/down.err")" \
  test \( "$rc" = 52 -o "$rc" = 56 \) -a -z "$(in_etcd down)"
control /up >/dev/null
curl -s --max-time 5 "$P/v3/kv/put" -d "$(put down u)" >/dev/null
check "up: requests go through again" "in etcd: '$(in_etcd down)'" test "$(in_etcd down)" = u
control /down '{"how": "refuse"}' >/dev/null
rc=$(curl_rc refused --max-time 5 "$P/v3/kv/put" -d "$(put down r)")
check "down (refuse): a connect is refused, as by a member that is not running (curl exit 7)" "curl exit $rc, $(cat "$SCRATCH/refused.err")" \
  test "$rc" = 7 -a "$(in_etcd down)" = u
control /up >/dev/null
curl -s --max-time 5 "$P/v3/kv/put" -d "$(put down u2)" >/dev/null
check "up: the same port listens again" "in etcd: '$(in_etcd down)'" test "$(in_etcd down)" = u2

check "the proxy wrote nothing to its stderr" "$(head -c 500 "$SCRATCH/proxy.err")" test ! -s "$SCRATCH/proxy.err"
echo "etcd_proxy_test (etcd $ETCD_VERSION): $passed passed, $failed failed"
[ "$failed" = 0 ]
