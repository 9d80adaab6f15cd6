# majors: 15
# long: half a minute or more, queued first
# Machine ids leased from etcd (snowflake.machine_id_source = 'etcd'), against a real 3-member etcd
# cluster on 127.0.0.1 (Debian's etcd-server 3.4, installed by the test command):
# 1. etcd down at start: snowflake_nextval() refuses (55000) naming the three endpoints and the
#    last error; everything else is served; once etcd is up, the server claims an id and issues.
# 2. Eight servers started at once in one id space: eight distinct ids; all insert under load at
#    once while the etcd leader is killed (SIGKILL): generation goes on; 0 duplicates.
# 3. A clean stop records the final mark and releases the id at once; the restarted server gets
#    its own id back. A standby holds nothing and refuses (25006, with a hint of the etcd source's:
#    it claims at its promotion); promoted, it claims its old primary's id (1, which its primary
#    gave back at its clean stop), not the lowest free one (0: issue 57, item 5), and its ids are
#    above its old primary's.
# 4. A new holder whose clock is behind the old holder's last id (3 s): it issues nothing at or
#    below it (it waits for its clock). 15 s behind, past snowflake.max_clock_wait: it refuses,
#    naming the holder that recorded the mark.
# 5. Exhaustion: snowflake.machine_bits = 2, five servers: four hold ids, the fifth's refusal names
#    the space and its size. And the settings: a source with snowflake.machine_id set too, and
#    endpoints of two schemes (http:// and https://).
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 3
# The ports differ from run to run: the output names them P1, P2, P3.
mask_ports() {
  sed -e "s/${ETCD_CLIENT_PORTS[0]}/P1/g" -e "s/${ETCD_CLIENT_PORTS[1]}/P2/g" -e "s/${ETCD_CLIENT_PORTS[2]}/P3/g" \
    -e 's/ (os error [0-9]*)//g'
}

echo "== 1. etcd down at start"
init_leased early /pg_snowflake/test
start_cluster early
create_extension early
wait_claim_error early
psql_on early -c '\set VERBOSITY verbose' -c "SELECT snowflake_nextval()" 2>&1 | grep -v '^LOCATION' | mask_ports || true
psql_on early -At -c "SELECT 'other queries are served: ' || count(*) FROM pg_class WHERE relname = 'pg_class'"
psql_on early -At -c "SELECT 'refused calls counted: ' || (refused_calls >= 1) FROM snowflake_machine_id_status()"
start_etcd
echo "early holds machine id $(held_id early)"
psql_on early -At -c "SELECT 'an id under it: ' || (snowflake_machine_id(snowflake_nextval()) = 0)"

echo "== 2. eight servers at once, the etcd leader killed under load"
for n in 1 2 3 4 5 6 7 8; do init_leased "node$n" /pg_snowflake/test; done
starting=()
for n in 1 2 3 4 5 6 7 8; do
  start_cluster "node$n" &
  starting+=($!)
done
for p in "${starting[@]}"; do wait "$p" || die "a server did not start"; done
for n in 1 2 3 4 5 6 7 8; do
  create_extension "node$n"
  psql_on "node$n" -c "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int NOT NULL)"
done
ids=$(for n in 1 2 3 4 5 6 7 8; do held_id "node$n"; done | sort -n | tr '\n' ' ')
echo "the eight hold: $ids"
echo 'INSERT INTO orders(conn) VALUES (:client_id);' >"$SCRATCH/insert.sql"
pids=()
for n in 1 2 3 4 5 6 7 8; do
  "$PG_BIN/pgbench" -n -h "$SCRATCH" -p "$(port_of "node$n")" -U postgres -c 2 -j 1 -T 6 \
    -f "$SCRATCH/insert.sql" postgres >"$SCRATCH/pgbench-$n.log" 2>&1 &
  pids+=($!)
done
sleep 2
leader=$(etcd_leader) || die "no etcd leader"
kill -9 "$(etcd_pid "$leader")"
echo "the etcd leader killed under load"
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { cat "$SCRATCH"/pgbench-*.log; die "pgbench failed while the leader was killed"; }
echo "every server went on inserting"
psql_on early -c "CREATE TABLE all_ids (id bigint NOT NULL, node text NOT NULL)"
for n in 1 2 3 4 5 6 7 8; do
  psql_on "node$n" -c "\\copy (SELECT id, 'node$n' FROM orders) TO STDOUT" | psql_on early -c "\\copy all_ids FROM STDIN"
done
psql_on early -At -c "SELECT 'rows: over 1,000: ' || (count(*) > 1000) || ', duplicates: ' || (count(*) - count(DISTINCT id)) || ', machine ids seen: ' || count(DISTINCT snowflake_machine_id(id)) FROM all_ids"
psql_on early -At -c "SELECT count(*) || ' rows from 8 servers' FROM all_ids" >>"$REPORT"
psql_on early -At -c "SELECT 'renewals went on: ' || bool_and(renewals > 0) FROM snowflake_machine_id_status()"
# (The killed member stays down: two of three keep the quorum for what follows.)

echo "== 3. a clean stop releases the id; a restart gets it back"
before=$(held_id node3)
last=$(psql_on node3 -At -c "SELECT max(id) FROM orders")
# (After the leader was killed, once node3 has renewed on the cluster's new leader: a stop during
# the election may find no member that answers within its release's time, and leave the lease to
# expire by itself.)
renewals=$(psql_on node3 -At -c "SELECT renewals FROM snowflake_machine_id_status()")
for i in $(seq 1 150); do
  [ "$(psql_on node3 -At -c "SELECT renewals > $renewals AND last_error IS NULL FROM snowflake_machine_id_status()")" = t ] && break
  sleep 0.1
done
stop_cluster node3
echo "claims left by node3 after its stop: $(etcd_keys /pg_snowflake/test/claim/ | grep -c "/claim/$before\$" || true)"
start_cluster node3
after=$(held_id node3 10)
echo "node3 holds the same id after a restart: $([ "$before" = "$after" ] && echo yes || echo "no: $before then $after")"
psql_on node3 -At -c "SELECT 'its next id is above its last: ' || (snowflake_nextval() > $last)"

echo "== 3b. a standby holds nothing; promoted, it claims its old primary's id"
init_leased other /pg_snowflake/standby
start_cluster other
create_extension other
echo "another server holds machine id $(held_id other)"
init_leased prim /pg_snowflake/standby "wal_level = replica"
start_cluster prim
create_extension prim
echo "the primary holds machine id $(held_id prim)"
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of prim)" -U postgres -D "$SCRATCH/stby" -R -X stream
echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/stby/postgresql.conf" >/dev/null
start_cluster stby
sleep 1
psql_on stby -At -c "SELECT 'the standby: source ' || source || ', holds an id: ' || held || ', claims: ' || claims FROM snowflake_machine_id_status()"
psql_on stby -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 | grep -E "ERROR|HINT" | tee "$SCRATCH/stby.refusal" || true
python3 "$PROJECT_DIR/pgrx-tests/harness/errors_in_page.py" "the standby's refusal" "$SCRATCH/stby.refusal" 2>>"$REPORT"
prim_last=$(psql_on prim -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)")
psql_on prim -c "CHECKPOINT" >/dev/null
stop_cluster other
stop_cluster prim
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/stby" -w promote >/dev/null
echo "promoted, it holds machine id $(held_id stby), its old primary's (0 is free too)"
psql_on stby -At -c "SELECT 'its first id is above its old primary''s last: ' || (snowflake_nextval() > $prim_last)"

echo "== 4. a new holder whose clock is behind the old holder's last id"
for n in 1 2 3 4 5 6 7 8; do stop_cluster "node$n"; done
init_leased ahead /pg_snowflake/behind "snowflake.fault_clock_offset = 3000"
init_leased behind /pg_snowflake/behind "snowflake.max_clock_wait = 10000"
start_cluster ahead
create_extension ahead
held_id ahead >/dev/null
ahead_last=$(psql_on ahead -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)")
stop_cluster ahead
start_cluster behind
create_extension behind
echo "behind holds machine id $(held_id behind), as ahead did"
psql_on behind -At -c "SELECT 'its first id is above the old holder''s last: ' || (snowflake_nextval() > $ahead_last)"
psql_on behind -At -c "SELECT 'it waited for its clock: ' || (clock_waits >= 1) FROM snowflake_stats()"
# Further behind (15 s) than it may wait (snowflake.max_clock_wait = 200 ms): the refusal names the
# holder that recorded the mark. (Less than twice the TTL, 20 s: a mark further ahead is passed over
# while another id is free, etcd_guards' section 4.)
stop_cluster behind
init_leased far_ahead /pg_snowflake/far "snowflake.fault_clock_offset = 15000"
init_leased far_behind /pg_snowflake/far "snowflake.max_clock_wait = 200"
start_cluster far_ahead
create_extension far_ahead
held_id far_ahead >/dev/null
psql_on far_ahead -At -c "SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)" >/dev/null
stop_cluster far_ahead
start_cluster far_behind
create_extension far_behind
echo "far_behind holds machine id $(held_id far_behind), as far_ahead did"
psql_on far_behind -c "SELECT snowflake_nextval()" 2>&1 | grep -E "ERROR|HINT" \
  | sed -E "s/[0-9]+ ms from now/N ms from now/; s/waited [0-9]+ ms/waited M ms/; s/by [^ ]+:$(port_of far_ahead) /by HOST:PORT /; s#$SCRATCH#SCRATCH#; s/system identifier [0-9]+/system identifier S/" || true

echo "== 5. exhaustion, and settings that cannot work"
for n in 1 2 3 4 5; do init_leased "small$n" /pg_snowflake/small "snowflake.machine_bits = 2"; done
for n in 1 2 3 4; do start_cluster "small$n"; create_extension "small$n"; held_id "small$n" >/dev/null; done
start_cluster small5
create_extension small5
wait_claim_error small5
psql_on small5 -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 | grep -v '^LOCATION' | mask_ports | sed 's/: 0 by .*/: (the four holders)/' || true
init_cluster both "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'etcd'" \
  "snowflake.etcd_endpoints = '$ETCD_ENDPOINTS'" "snowflake.machine_id = 3"
init_cluster tls "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'etcd'" \
  "snowflake.etcd_endpoints = 'https://127.0.0.1:2379,http://127.0.0.1:2380'"
for c in both tls; do
  start_cluster "$c"
  create_extension "$c"
  psql_on "$c" -c "SELECT snowflake_nextval()" 2>&1 || true
done
