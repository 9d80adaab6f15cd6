# majors: 15
# long: half a minute or more, queued first
# A leased machine id in every life a server has (issue 51, finding 1), against a real etcd (one
# member, Debian's 3.4): no id is issued at any start before the worker holds a claim, and every
# id is issued under the machine id it holds. At each start below, a backend asks for ids from the
# moment the server accepts connections, until its first id: each call is refused (55000, "no machine
# id is held") or issues under the id the server holds, above its earlier ids.
# 1. A crash-restart (a backend killed with SIGKILL; the claim of the crashed instance still lives
#    in etcd): the same postmaster takes its own claim back at once (its log says why), not a TTL
#    later, and issues above its ids before the crash.
# 2. A clean restart with etcd unreachable: every call refused, none under machine id 0 (the
#    server held 2). Negative control: the start before the fix (the test builds'
#    snowflake.fault_start_grant) issues ids under machine id 0. etcd back: the claim of the
#    earlier run (another postmaster) is waited out, said in the status and the refusal's hint,
#    then the server holds its id again.
# 3. A standby made from a base backup of a leased primary (machine id 3 of the space): in recovery
#    it holds nothing; promoted (its primary stopped cleanly, 3 freed), its first id is under the id
#    it claims (3), not 0, and above its primary's ids. The clean stop logs no worker's exit
#    (issue 52: every clean stop logged 'exited with exit code 1').
# 4. A server moved from a hand-set machine id (7, with its mark file) to etcd: its first id is
#    under the id it claims (4), not 7 nor 0.
# 5. A server of another layout on the same prefix: refused, with a hint of its own, and never
#    shares the space; negative control (snowflake.fault_space_layout_off): it claims an id of the
#    space.
# 6. A key of the id space that pg_snowflake did not write (a claim that is not JSON): refused, with
#    the hint of its own that the Errors page gives; the key removed by the hint's command as it
#    writes it (etcdctl del KEY, the key the message names: issue 57, item 3), the server claims.
# 7. etcd down past the lease's local deadline, then back (issue 52, item 2): calls refused (the
#    lease reached its deadline without a renewal), one log line when ids stop; etcd back, it
#    still has the lease (a restarted etcd gives every lease its TTL again), so the same lease is
#    renewed, not counted as lost, and ids resume under the same id, one log line saying so.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
mask() { sed -e "s/${ETCD_CLIENT_PORTS[0]}/P1/g" -e 's/ (os error [0-9]*)//g'; }
# until_first_id NAME [SECONDS]: from now, calls snowflake_nextval() on NAME until it issues one (at
# most SECONDS, default 30). Prints the machine id of the first id issued and that id (or, when none
# was, each SQLSTATE it was refused with); how many calls were refused before it goes to the report
# (the claim may come before the first call, or after a few).
until_first_id() {
  psql_on "$1" -At <<SQL
\set ON_ERROR_STOP on
CREATE TEMP TABLE IF NOT EXISTS calls (state text, id bigint);
DO \$\$
DECLARE
    t0 timestamptz := clock_timestamp();
    got bigint;
BEGIN
    LOOP
        BEGIN
            got := snowflake_nextval();
            INSERT INTO calls VALUES ('ok', got);
            EXIT;
        EXCEPTION WHEN others THEN
            INSERT INTO calls VALUES (SQLSTATE, NULL);
        END;
        EXIT WHEN clock_timestamp() - t0 > interval '${2:-30} s';
        PERFORM pg_sleep(0.02);
    END LOOP;
END \$\$;
SELECT 'report: ' || count(*) FILTER (WHERE state <> 'ok') || ' calls refused before the first id' FROM calls;
SELECT CASE WHEN bool_or(state = 'ok') THEN 'its first id, under machine id ' || snowflake_machine_id(max(id))
            ELSE 'no id within ${2:-30} s: every call refused, with ' || string_agg(DISTINCT state, ', ') END
FROM calls;
SELECT id FROM calls WHERE state = 'ok';
SQL
}
# first_id NAME LAST [SECONDS]: until_first_id, its id compared with LAST (above it or not).
first_id() {
  local out id
  out=$(until_first_id "$1" "${3:-30}")
  { grep '^report: ' <<<"$out" || true; } | sed "s/^report: /$1: /" >>"$REPORT"
  grep -v -e '^[0-9]*$' -e '^report: ' <<<"$out" || true
  id=$(grep '^[0-9][0-9]*$' <<<"$out" | tail -n 1 || true)
  [ -z "$id" ] || [ -z "$2" ] || echo "above its ids before: $([ "$id" -gt "$2" ] && echo yes || echo "NO ($id, not above $2)")"
}

echo "== 1. a crash-restart"
for n in x y a; do init_leased "$n" /pg_snowflake/restarts "snowflake.etcd_lease_ttl = 10"; done
for n in x y a; do start_cluster "$n"; create_extension "$n"; echo "$n holds machine id $(held_id "$n")"; done
last=$(psql_on a -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 200)")
psql_on a -At -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
sleep 0.5
victim=$(psql_on a -At -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%' AND pid <> pg_backend_pid()")
kill -9 "$victim"
sleep 1
wait_ready a
first_id a "$last"
grep -o 'machine id 2 was held by this server before its crash-restart: its lease [0-9a-f]* revoked (every process of the crashed instance has exited), claimed again at once' \
  "$SCRATCH/a.log" | sed 's/lease [0-9a-f]* /lease L /' | head -n 1
psql_on a -At -c "SELECT 'claims since the crash: ' || claims || ', held: ' || held || ', machine id ' || machine_id FROM snowflake_machine_id_status()"

echo "== 2. a clean restart with etcd unreachable"
last=$(psql_on a -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 200)")
stop_etcd
restart_cluster a
first_id a "" 3
echo "-- the negative control: the start before the fix (snowflake.fault_start_grant)"
echo "snowflake.fault_start_grant = on" | as_pg_owner tee -a "$SCRATCH/a/postgresql.conf" >/dev/null
restart_cluster a
first_id a "" 3
as_pg_owner sed -i '/fault_start_grant/d' "$SCRATCH/a/postgresql.conf"
restart_cluster a
start_etcd
# (Its worker backs off while etcd is down: wait for its first claim with etcd up.)
for i in $(seq 1 150); do
  psql_on a -At -c "SELECT last_error FROM snowflake_machine_id_status()" | grep -q "earlier run of this server" && break
  sleep 0.1
done
psql_on a -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 | grep -E "ERROR|HINT" | sed -E 's/postmaster [0-9]+@[0-9]+/postmaster PID@START/' | mask || true
first_id a "$last" 40

echo "== 3. a standby from a base backup of a leased primary"
init_leased prim /pg_snowflake/restarts "wal_level = replica"
start_cluster prim
create_extension prim
echo "the primary holds machine id $(held_id prim)"
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of prim)" -U postgres -D "$SCRATCH/stby" -R -X stream
echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/stby/postgresql.conf" >/dev/null
start_cluster stby
psql_on stby -At -c "SELECT 'the standby holds an id: ' || held FROM snowflake_machine_id_status()"
prim_last=$(psql_on prim -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)")
psql_on prim -c "CHECKPOINT" >/dev/null
stop_cluster prim
# (The machine id's worker and the lease worker end with code 0 at a clean stop: nothing logged.)
echo "exits of the extension's workers logged by the primary's clean stop: $({ grep -E 'background worker "pg_snowflake[^"]*" \(PID [0-9]+\) exited with exit code' "$SCRATCH/prim.log" || true; } | wc -l)"
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/stby" -w promote >/dev/null
first_id stby "$prim_last"

echo "== 4. a server moved from machine id 7 to etcd"
init_cluster moved "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster moved
create_extension moved
moved_last=$(psql_on moved -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 200)")
stop_cluster moved
as_pg_owner sed -i '/snowflake.machine_id = 7/d' "$SCRATCH/moved/postgresql.conf"
printf '%s\n' "snowflake.machine_id_source = 'etcd'" "snowflake.etcd_endpoints = '$ETCD_ENDPOINTS'" \
  "snowflake.etcd_prefix = '/pg_snowflake/restarts'" | as_pg_owner tee -a "$SCRATCH/moved/postgresql.conf" >/dev/null
start_cluster moved
first_id moved ""
echo "its ids before (under 7) and after (under its claim) compare: $(psql_on moved -At -c "SELECT snowflake_nextval() > $moved_last")"

echo "== 5. a server of another layout on the same prefix"
init_leased coarse /pg_snowflake/restarts "snowflake.time_unit = 10"
start_cluster coarse
create_extension coarse
wait_claim_error coarse
psql_on coarse -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 | grep -E "ERROR|HINT" | mask \
  | sed -E 's/recorded by [^ ]+:[0-9]+ \(data directory [^,]*, system identifier [0-9]+\)/recorded by HOST:PORT (data directory D, system identifier S)/' || true
echo "claims of the space after it tried: $(etcd_keys /pg_snowflake/restarts/claim/ | wc -l) (x, y, a, the promoted standby and the moved server)"
echo "-- the negative control: the space's layout neither recorded nor compared (snowflake.fault_space_layout_off)"
stop_cluster coarse
echo "snowflake.fault_space_layout_off = on" | as_pg_owner tee -a "$SCRATCH/coarse/postgresql.conf" >/dev/null
start_cluster coarse
echo "the server of another layout holds machine id $(held_id coarse) of the space"

echo "== 6. a key of the id space that pg_snowflake did not write"
b64() { printf '%s' "$1" | base64 -w0; }
etcd_curl "http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}/v3/kv/put" -sf --max-time 5 \
  -d "{\"key\":\"$(b64 /pg_snowflake/garbled/claim/0)\",\"value\":\"$(b64 garbage)\"}" >/dev/null
init_leased garbled /pg_snowflake/garbled
start_cluster garbled
create_extension garbled
wait_claim_error garbled
psql_on garbled -c "SELECT snowflake_nextval()" 2>&1 | tee "$SCRATCH/garbled.refusal" | grep -E "ERROR|HINT" | mask || true
python3 "$PROJECT_DIR/pgrx-tests/harness/errors_in_page.py" "the refusal" "$SCRATCH/garbled.refusal" 2>>"$REPORT"
# The hint's command, as it writes it, KEY the key the message names (etcd 3.5's etcdctl).
key=$(sed -n 's/.*the etcd key \([^ ]*\) could not be read.*/\1/p' "$SCRATCH/garbled.refusal" | head -n 1)
command=$(sed -n 's/^HINT: .*(\(etcdctl del KEY\)).*/\1/p' "$SCRATCH/garbled.refusal" | head -n 1)
echo "the hint's command: $command, KEY: $key"
PATH="$(etcd35_bin):$PATH" ETCDCTL_ENDPOINTS=$ETCD_ENDPOINTS bash -c "${command/KEY/$key}" | sed 's/^/etcdctl: /'
echo "the key removed, the server holds machine id $(held_id garbled)"

echo "== 7. etcd down past the lease's deadline, then back"
lease_before=$(psql_on garbled -At -c "SELECT lease_id FROM snowflake_machine_id_status()")
stop_etcd
for _ in $(seq 1 300); do
  psql_on garbled -At -c "SELECT snowflake_nextval()" >/dev/null 2>&1 || break
  sleep 0.1
done
echo "calls refused once the deadline passed: $(psql_on garbled -At -c "SELECT snowflake_nextval()" 2>&1 | grep -c "reached its local deadline" || true)"
psql_on garbled -At -c "SELECT 'held: ' || held FROM snowflake_machine_id_status()"
sleep 4
start_etcd
echo "etcd back: the server holds machine id $(held_id garbled)"
psql_on garbled -At -c "SELECT 'the same lease: ' || (lease_id = '$lease_before') || ', leases lost: ' || leases_lost || ', failed renewals counted: ' || (renewal_failures > 0) FROM snowflake_machine_id_status()"
grep -o "pg_snowflake: ids stopped: the lease of machine id 0 reached its local deadline without a renewal; they resume once a renewal succeeds" "$SCRATCH/garbled.log" | head -n 1
grep -o "pg_snowflake: ids resume, under machine id 0" "$SCRATCH/garbled.log" | head -n 1
