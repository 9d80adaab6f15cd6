# alone: it bounds each peer's answer in time, with nothing beside it
# majors: 14 15 16 18 (dblink and libpq differ: a connect deadline of our own on 14 and 15, other option tables on 14, 15-16 and 17-18, blocking and deaf to cancel before 17; 17 and 18 share every cfg)
# snowflake_check_peers() pointed at anything: no password shown in any form libpq reads, a peer
# that accepts TCP but never answers flagged within the timeout, statement_timeout ends a call
# waiting on a peer, remote calls go to the remote extension's schema, this server or one server
# listed twice is counted once, and hostile peers (check_peers_safety.py: an answer that never
# ends, a second result, more rows, a row declaring 1 GB, floods of ParameterStatus or notices)
# are flagged, each bounded in time and memory, and the call goes on to the next peer; and so is a
# peer that floods the connect while this backend holds more than 1024 descriptors.
export PGOPTIONS="-c client_min_messages=error"
init_cluster peer_a "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 1" "max_files_per_process = 3000"
init_cluster peer_b "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 2"
# Peer a may hold 3000 descriptors (many relations touched in one session): its server starts
# with a soft limit of 4096 (within the hard limit; as root, runuser's PAM session would give it
# init's, often 1024, with which PostgreSQL would keep fewer files open).
server_env bash -c 'h=$(ulimit -Hn); { [ "$h" != unlimited ] && [ "$h" -lt 4096 ]; } || h=4096; ulimit -Sn "$h" && exec "$@"' _ \
  "$PG_BIN/pg_ctl" -D "$SCRATCH/peer_a" -l "$SCRATCH/peer_a.log" -w -t 60 start >/dev/null 2>&1 \
  || { cat "$SCRATCH/peer_a.log" >&2; die "cluster peer_a did not start"; }
start_cluster peer_b
create_extension peer_a
psql_on peer_a -c "CREATE EXTENSION dblink"
# Peer b has pg_snowflake in a schema of its own, and a decoy snowflake_stats() in public, which
# an unqualified remote call would reach first.
psql_on peer_b -c "CREATE SCHEMA snow" -c "CREATE EXTENSION pg_snowflake SCHEMA snow" -c "
  CREATE FUNCTION public.snowflake_stats() RETURNS TABLE (machine_id integer, layout text)
  LANGUAGE sql AS \$\$ SELECT 666, 'decoy' \$\$"
psql_on peer_b -d template1 -c "SELECT 1" >/dev/null # a database without pg_snowflake

sock=$SCRATCH
pa=$(port_of peer_a)
pb=$(port_of peer_b)
enc_sock=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$sock")
# The output shows placeholders for what changes from run to run.
stable() { sed -e "s|$enc_sock|SOCK|g" -e "s|$sock|SOCK|g" -e "s|$pa|PORT_A|g" -e "s|$pb|PORT_B|g"; }
check() { psql_on peer_a -At -F ' | ' -c "$1"; }

echo "-- every form of password: shown masked, never in the output"
secrets=(kv-secret-1 "q w-secret-2" "it's-secret-3" uri-secret-4 pgs-secret-5 query-secret-6 "p@ct-secret-7" ssl-secret-8 unreach-secret-9 unparsed-secret-10)
peers=(
  "host=$sock port=$pb dbname=postgres user=postgres password=kv-secret-1"
  "host=$sock port=$pb dbname=postgres password = 'q w-secret-2'"
  "host=$sock port=$pb dbname=postgres password='it\\'s-secret-3'"
  "postgresql://postgres:uri-secret-4@$enc_sock:$pb/postgres"
  "postgres://postgres:pgs-secret-5@$enc_sock:$pb/postgres"
  "postgresql:///postgres?host=$enc_sock&port=$pb&password=query-secret-6&user=postgres"
  "postgresql://postgres:p%40ct-secret-7@$enc_sock:$pb/postgres"
  "host=$sock port=$pb dbname=postgres sslpassword=ssl-secret-8"
  "postgresql://alice:unreach-secret-9@127.0.0.1:1/db"
  "host=$sock password 'unparsed-secret-10'"
)
array=$(printf '%s\n' "${peers[@]}" | python3 -c 'import sys; print("ARRAY[" + ",".join("$p$" + l.rstrip("\n") + "$p$" for l in sys.stdin) + "]")')
check "SELECT peer, machine_id, problems FROM snowflake_check_peers($array)" >"$SCRATCH/forms.out"
# libpq's own words for a refused connection span lines; they are not ours to compare.
perl -0pe 's/(cannot ask it: could not establish connection).*?"\}$/$1 (...)"}/gms' "$SCRATCH/forms.out" | stable
leaked=0
for s in "${secrets[@]}" "p%40ct-secret-7" "it\\'s-secret-3"; do
  if grep -qF -- "$s" "$SCRATCH/forms.out"; then echo "LEAKED: $s"; leaked=$((leaked + 1)); fi
done
echo "passwords found in the output: $leaked of ${#secrets[@]}"

echo "-- a peer that accepts TCP and never answers (127.0.0.1, stops by itself after 40 s)"
# (The scratch dir serves every major of a run: the port file of the one before must go.)
rm -f "$SCRATCH/silent.port"
python3 - "$SCRATCH/silent.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
s.settimeout(0.2)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held, end = [], time.time() + 40
while time.time() < end:
    try:
        held.append(s.accept()[0])  # accepted, never read, never answered
    except socket.timeout:
        pass
PY
silent_pid=$!
for _ in $(seq 1 50); do [ -s "$SCRATCH/silent.port" ] && break; sleep 0.1; done
silent="host=127.0.0.1 port=$(cat "$SCRATCH/silent.port") dbname=postgres password=silent-secret"
# timed CALL: runs it, prints its output, and writes how long it took to $SCRATCH/elapsed.
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  check "$1"
  t1=$(date +%s.%N)
  python3 -c "print(round($t1 - $t0, 1))" >"$SCRATCH/elapsed"
}
timed "SELECT problems FROM snowflake_check_peers(ARRAY['$silent'], timeout_s => 2) WHERE peer <> 'this server'" \
  | sed -E 's/(cannot ask it: could not establish connection).*(timeout expired|did not answer within 2 s).*/\1: timed out"}/'
echo "timeout_s => 2: returned within 4 s: $(python3 -c "print($(cat "$SCRATCH/elapsed") < 4)")"
echo "silent peer, timeout_s => 2: $(cat "$SCRATCH/elapsed") s" >>"$REPORT"
timed "SELECT count(*) FILTER (WHERE problems[1] ~ 'cannot ask it:.*(timeout expired|did not answer within 5 s)') || ' flagged unreachable' FROM snowflake_check_peers(ARRAY['$silent'])"
echo "default timeout (5 s): returned within 7 s: $(python3 -c "print($(cat "$SCRATCH/elapsed") < 7)")"
echo "silent peer, default timeout: $(cat "$SCRATCH/elapsed") s" >>"$REPORT"

echo "-- a peer whose answer does not come: statement_timeout ends the call, timeout_s flags it"
# Peer b's catalog of extensions is locked, so the remote lookup waits.
psql_on peer_b -c "BEGIN" -c "LOCK TABLE pg_catalog.pg_extension IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(12)" -c "COMMIT" >/dev/null &
locker=$!
sleep 1
b="host=$sock port=$pb dbname=postgres"
t0=$(date +%s.%N)
psql_on peer_a -At -v ON_ERROR_STOP=0 -v VERBOSITY=terse -c "SET statement_timeout = '1s'" \
  -c "SELECT * FROM snowflake_check_peers(ARRAY['$b'], timeout_s => 60)" \
  -c "RESET statement_timeout" \
  -c "SELECT problems FROM snowflake_check_peers(ARRAY['$b'], timeout_s => 1) WHERE peer <> 'this server'" 2>&1 | sed 's/^psql:[^E]*ERROR/ERROR/'
t1=$(date +%s.%N)
echo "both calls ended within 5 s: $(python3 -c "print($t1 - $t0 < 5)")"
wait "$locker"
echo "once the lock is gone, the same session asks again:"
psql_on peer_a -At -F ' | ' -c "SET statement_timeout = '1s'" -c "SELECT * FROM snowflake_check_peers(ARRAY['$b'], timeout_s => 60) WHERE false" \
  -c "RESET statement_timeout" -c "SELECT machine_id, problems FROM snowflake_check_peers(ARRAY['$b']) WHERE peer <> 'this server'" 2>&1 | sed 's/^psql:[^E]*ERROR/ERROR/'

echo "-- remote calls go to the remote extension's schema; a database without it is flagged"
check "SELECT machine_id, problems FROM snowflake_check_peers(ARRAY['$b', 'host=$sock port=$pb dbname=template1']) WHERE peer <> 'this server'"

echo "-- this server listed as a peer, and one peer listed twice: counted once"
a="host=$sock port=$pa dbname=postgres"
check "SELECT peer, machine_id, problems FROM snowflake_check_peers(ARRAY['$a', '$b', '$b application_name=again', 'postgresql://postgres@$enc_sock:$pb/postgres'])" | stable
echo "-- a peer that streams rows (64 MB, a result that never ends) is refused; this backend does not hold them"
rm -f "$SCRATCH/streaming.port"
python3 "$PROJECT_DIR/pgrx-tests/scenarios/check_peers_safety.py" "$SCRATCH/streaming.port" $((64 * 1024 * 1024)) 120 &
streaming_pid=$!
for _ in $(seq 1 50); do [ -s "$SCRATCH/streaming.port" ] && break; sleep 0.1; done
streaming="host=127.0.0.1 port=$(cat "$SCRATCH/streaming.port") dbname=postgres sslmode=disable"
# The backend's peak resident memory (VmHWM, kB) before and after, read by the backend itself.
psql_on peer_a -At <<SQL
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]::bigint AS before \gset
SELECT problems FROM snowflake_check_peers(ARRAY['$streaming'], timeout_s => 5) WHERE peer <> 'this server';
SELECT 'peak memory grew by less than 16 MB: ' || ((regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]::bigint - :before < 16384);
SQL
echo "-- hostile peers, each followed by a good one: each flagged, the good one asked"
# Each attacks the end of an answer (after a well-formed first result) but connect_params (the
# connect) and two_rows (the first result); the peak
# memory of the backend (warmed up by a call first) grows by less than 16 MB. Their times, the
# memory and the server log's growth go to the report.
for mode in connect_params stall_end second_stream second_result second_empty two_rows huge_row params notices; do
  hostile="host=127.0.0.1 port=$(cat "$SCRATCH/streaming.port") dbname=$mode sslmode=disable"
  t0=$(date +%s.%N)
  log0=$(stat -c %s "$SCRATCH/peer_a.log")
  psql_on peer_a -At -F ' | ' <<SQL | tee "$SCRATCH/hostile.out" | sed -E 's/ \(grew by -?[0-9]+ kB\)$//'
SELECT count(*) AS warm FROM snowflake_check_peers(ARRAY['$b']) \gset
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]::bigint AS before \gset
SELECT '$mode: ' || string_agg(coalesce(machine_id::text, '-') || ' ' || problems::text, ', ' ORDER BY ord)
FROM snowflake_check_peers(ARRAY['$hostile', '$b'], timeout_s => 2) WITH ORDINALITY AS r(peer, machine_id, layout, clock_offset_ms, clock_uncertainty_ms, problems, ord)
WHERE peer <> 'this server';
SELECT format('$mode: peak memory grew by less than 16 MB: %s (grew by %s kB)', (g < 16384)::text, g)
FROM (SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]::bigint - :before AS g) m;
SQL
  t1=$(date +%s.%N)
  echo "hostile peer $mode, timeout_s => 2: $(python3 -c "print(round($t1 - $t0, 1))") s, peak memory $(sed -n 's/.*(grew by \(-\?[0-9]*\) kB)$/\1/p' "$SCRATCH/hostile.out") kB more, server log $(( $(stat -c %s "$SCRATCH/peer_a.log") - log0 )) bytes more" >>"$REPORT"
done
kill "$streaming_pid" 2>/dev/null || true
wait "$streaming_pid" 2>/dev/null || true
echo "-- more than 1024 descriptors open in this backend: the connect deadline still ends a flooded connect"
# Before PostgreSQL 16 the deadline shuts down the sockets opened since it was armed; libpq's
# socket takes the lowest free descriptor, here above 1100: one session touches 1100 tables (a
# file each, kept open: max_files_per_process = 3000), then asks a peer that floods the connect
# with ParameterStatus messages, and a good one. A connect that the deadline does not end goes on
# parsing the flood (neither a cancel nor pg_terminate_backend() ends it; the flooding peer stops
# by itself after 40 s, which leaves what it sent to parse): the client gives up after 30 s, and
# the scenario fails.
psql_on peer_a -c "CREATE SCHEMA many" -c "DO \$\$ BEGIN FOR i IN 1 .. 1100 LOOP EXECUTE format('CREATE TABLE many.t%s ()', i); END LOOP; END \$\$"
rm -f "$SCRATCH/flooding.port"
python3 "$PROJECT_DIR/pgrx-tests/scenarios/check_peers_safety.py" "$SCRATCH/flooding.port" $((64 * 1024 * 1024)) 40 &
flooding_pid=$!
for _ in $(seq 1 50); do [ -s "$SCRATCH/flooding.port" ] && break; sleep 0.1; done
flooding="host=127.0.0.1 port=$(cat "$SCRATCH/flooding.port") dbname=connect_params sslmode=disable"
timeout 30 "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$pa" -U postgres -d postgres -At -F ' | ' <<SQL | tee "$SCRATCH/many_fds.out" | sed -E 's/ \(took [0-9.]+ s\)$//'
DO \$\$ BEGIN FOR i IN 1 .. 1100 LOOP EXECUTE format('SELECT FROM many.t%s', i); END LOOP; END \$\$;
SELECT 'descriptors open in this backend: more than 1100: ' || (count(*) > 1100) FROM pg_ls_dir('/proc/self/fd');
SELECT clock_timestamp() AS t0 \gset
SELECT 'connect_params: ' || string_agg(coalesce(machine_id::text, '-') || ' ' || problems::text, ', ' ORDER BY ord)
FROM snowflake_check_peers(ARRAY['$flooding', '$b'], timeout_s => 2) WITH ORDINALITY AS r(peer, machine_id, layout, clock_offset_ms, clock_uncertainty_ms, problems, ord)
WHERE peer <> 'this server';
SELECT format('returned within 5 s: %s (took %s s)', (e < 5)::text, round(e, 1))
FROM (SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS e) d;
SQL
echo "flooding peer with more than 1100 descriptors open, timeout_s => 2: $(sed -n 's/.*(took \([0-9.]*\) s)$/\1/p' "$SCRATCH/many_fds.out") s" >>"$REPORT"
kill "$flooding_pid" 2>/dev/null || true
wait "$flooding_pid" 2>/dev/null || true
echo "-- timeout_s out of range"
{ check "SELECT snowflake_check_peers('{}', timeout_s => 0)" 2>&1 || true; } | sed 's/^psql:[^E]*ERROR/ERROR/' | sed '/^CONTEXT:/d'
kill "$silent_pid" 2>/dev/null || true
