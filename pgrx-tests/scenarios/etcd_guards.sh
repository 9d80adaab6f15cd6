# majors: 15
# long: half a minute or more, queued first
# The guards of issue 56 (items 4, 5 and 6) against a real etcd (one member, Debian's 3.4):
# 1. A server set by hand to machine id 0, etcd's settings beside, while a leasing server holds 0:
#    every call refused (55000, naming the id and the leasing server, with its hint), the status
#    says why (held f, last_error); the leasing server stopped cleanly, it reserves 0 and issues,
#    above the leasing server's ids. Negative control (snowflake.fault_hand_set_unguarded): a
#    server set by hand to 0 beside the holder issues ids equal to the holder's.
# 2. etcd down at a first reservation: refused, saying so; etcd back, ids; restarted with etcd
#    down, it issues at once (its record says it saw the reservation confirmed).
# 3. A base-backup clone of that server, started as a primary: it takes the reservation over
#    with a WARNING naming the original's data directory (not a LOG line); the original refuses
#    from its next check on.
# 4. A leasing server whose clock ran an hour fast leaves a mark an hour ahead on machine id 0:
#    the next server passes 0 over, takes 1, and its log says why.
# 5. etcd restored from a snapshot (etcdctl snapshot save, snapshot restore): a leasing server
#    that saw a later revision stops its ids and refuses (55000 naming both revisions, the hint
#    naming the recovery); the marks raised and its record removed as the manual says, it claims
#    again, its ids above its ids before. Negative control (snowflake.fault_restore_unchecked): a
#    server whose clock is 20 s behind claims the id whose mark and claim the restore lost, and
#    issues ids below ids issued before under it.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$ETCD_ENDPOINTS
host=$(hostname)
mask() {
  sed -E -e "s#$SCRATCH#SCRATCH#g" -e "s/${ETCD_CLIENT_PORTS[0]}/P1/g" -e 's/ \(os error [0-9]+\)//g' \
    -e "s/$host:[0-9]+/HOST:PORT/g" -e 's/system identifier [0-9]+/system identifier S/g' \
    -e 's/at revision [0-9]+, below revision [0-9]+/at revision N, below revision M/g' -e 's/cluster [0-9a-f]+/cluster C/g'
}
# refusal NAME: one call of snowflake_nextval() on NAME, its SQLSTATE, message and hint.
refusal() {
  psql_on "$1" -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 | grep -E '^(ERROR|HINT)' | mask || true
}
# hand_set NAME ID PREFIX [SETTING...]: a server set by hand to ID, etcd's settings beside (not started).
hand_set() {
  local name=$1 id=$2 prefix=$3
  shift 3
  init_cluster "$name" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = $id" \
    "snowflake.etcd_endpoints = '$ETCD_ENDPOINTS'" "snowflake.etcd_prefix = '$prefix'" "$ttl" "$@"
}
# status NAME: why it holds its id or not.
status() {
  psql_on "$1" -At -c "SELECT 'status of $1: held ' || held || ', last error: ' || coalesce(last_error, 'none') FROM snowflake_machine_id_status()" | mask
}
# wait_held NAME t|f: waits (at most 20 s) until the status says held, or not.
wait_held() {
  local i
  for i in $(seq 1 200); do
    [ "$(psql_on "$1" -At -c "SELECT held FROM snowflake_machine_id_status()")" = "$2" ] && return 0
    sleep 0.1
  done
  status "$1" >&2
  die "$1: held is not $2 after 20 s"
}
# load NAME SECONDS: single-row inserts into t for SECONDS, errors skipped.
load() {
  local end=$(($(date +%s) + $2))
  while [ "$(date +%s)" -lt "$end" ]; do
    for _ in $(seq 1 200); do echo "INSERT INTO t DEFAULT VALUES;"; done
  done | psql_on "$1" -v ON_ERROR_STOP=0 >/dev/null 2>&1 || true
}
ttl="snowflake.etcd_lease_ttl = 4"
table="CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval())"
P=/pg_snowflake/guards

echo "== 1. a server set by hand to the id a leasing server holds"
init_leased n "$P" "$ttl"
start_cluster n
create_extension n
psql_on n -c "$table"
echo "the leasing server holds machine id $(held_id n)"
hand_set h 0 "$P"
start_cluster h
create_extension h
psql_on h -c "$table"
wait_claim_error h
refusal h
status h
psql_on h -At -c "SELECT 'other queries are served: ' || count(*) FROM pg_class WHERE relname = 'pg_class'"
echo "-- the negative control: set by hand to 0 beside the holder (snowflake.fault_hand_set_unguarded)"
hand_set u 0 "$P" "snowflake.fault_hand_set_unguarded = on"
start_cluster u
create_extension u
psql_on u -c "$table"
load n 3 &
load u 3
wait
psql_on n -c "CREATE TABLE u_ids (id bigint NOT NULL)"
psql_on u -c "\\copy t TO STDOUT" | psql_on n -c "\\copy u_ids FROM STDIN"
psql_on n -At -c "SELECT 'ids both issued: ' || CASE WHEN count(*) > 0 THEN 'some' ELSE 'none' END FROM u_ids JOIN t USING (id)"
psql_on n -At -c "SELECT count(*) || ' ids both issued (control)' FROM u_ids JOIN t USING (id)" >>"$REPORT"
stop_cluster u
echo "-- the leasing server stopped cleanly: the hand-set server reserves 0"
n_last=$(psql_on n -At -c "SELECT max(id) FROM t")
stop_cluster n
wait_held h t
status h
psql_on h -At -c "SELECT 'its first id is above the leasing server''s last: ' || (snowflake_nextval() > $n_last)"
grep -o "machine id 0 (set by hand) reserved in .*" "$SCRATCH/h.log" | mask | head -n 1

echo "== 2. etcd down at a first reservation"
stop_etcd
hand_set h2 5 "$P"
start_cluster h2
create_extension h2
wait_claim_error h2
refusal h2
status h2
start_etcd
wait_held h2 t
psql_on h2 -At -c "SELECT 'an id under machine id 5: ' || (snowflake_machine_id(snowflake_nextval()) = 5)"
echo "-- restarted with etcd down: reserved before, as its record says"
stop_etcd
restart_cluster h2
psql_on h2 -At -c "SELECT 'an id at once: ' || (snowflake_machine_id(snowflake_nextval()) = 5)"
start_etcd

echo "== 3. a base-backup clone of a hand-set server, started as a primary"
# (Once h2's worker has seen its reservation confirmed in this run.)
for _ in $(seq 1 200); do
  grep -q "machine id 5 (set by hand) is reserved (by this server already)" "$SCRATCH/h2.log" && break
  sleep 0.1
done
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of h2)" -U postgres -D "$SCRATCH/clone" -X stream
echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/clone/postgresql.conf" >/dev/null
start_cluster clone
wait_held clone t
grep -o "WARNING:  pg_snowflake: machine id 5 (set by hand) was reserved in .*" "$SCRATCH/clone.log" | mask | head -n 1
wait_held h2 f
refusal h2
stop_cluster clone

echo "== 4. a mark far ahead: its holder's clock ran an hour fast"
init_leased fast /pg_snowflake/far_mark "$ttl" "snowflake.fault_clock_offset = 3600000"
init_leased next /pg_snowflake/far_mark "$ttl"
start_cluster fast
create_extension fast
echo "the fast server holds machine id $(held_id fast)"
psql_on fast -At -c "SELECT count(snowflake_nextval()) FROM generate_series(1, 100)" >/dev/null
stop_cluster fast
start_cluster next
create_extension next
echo "the next server holds machine id $(held_id next)"
grep -o "machine id 0 of the id space /pg_snowflake/far_mark carries a mark .*" "$SCRATCH/next.log" \
  | sed -E 's/furthest [0-9]+ s ahead/furthest N s ahead/' | mask | head -n 1
psql_on next -At -c "SELECT 'an id at once: ' || (snowflake_machine_id(snowflake_nextval()) = 1)"

echo "== 5. etcd restored from a snapshot"
bits="snowflake.machine_bits = 4"
R=/pg_snowflake/restore
RO=/pg_snowflake/restore_off
init_leased r "$R" "$ttl" "$bits"
start_cluster r
create_extension r
psql_on r -c "$table"
echo "r holds machine id $(held_id r)"
etcdctl snapshot save "$SCRATCH/etcd.snap" >"$SCRATCH/etcdctl.log" 2>&1 || { cat "$SCRATCH/etcdctl.log" >&2; die "no snapshot"; }
snap_rev=$(etcdctl snapshot status "$SCRATCH/etcd.snap" -w json | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
# After the snapshot: r issues (and renews); in another id space, a issues under machine id 0 and
# stops cleanly; c (its clock 20 s behind, the check off: the control) holds 1.
init_leased a "$RO" "$ttl" "$bits"
init_leased c "$RO" "$ttl" "$bits" "snowflake.fault_clock_offset = -20000" "snowflake.fault_restore_unchecked = on"
start_cluster a
create_extension a
psql_on a -c "$table"
echo "a holds machine id $(held_id a)"
start_cluster c
create_extension c
psql_on c -c "$table"
echo "c holds machine id $(held_id c)"
load r 2 &
load a 2
wait
a_last=$(psql_on a -At -c "SELECT max(id) FROM t")
stop_cluster a
r_last=$(psql_on r -At -c "SELECT max(id) FROM t")
for _ in $(seq 1 100); do
  seen=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seen"]["revision"])' "$SCRATCH/r/pg_snowflake.etcd" 2>/dev/null || echo 0)
  [ "$seen" -gt "$snap_rev" ] && break
  sleep 0.1
done
echo "r saw a revision above the snapshot's: $([ "$seen" -gt "$snap_rev" ] && echo yes || echo "no ($seen, $snap_rev)")"
stop_etcd
mv "$SCRATCH/etcd-e1" "$SCRATCH/etcd-e1.before"
etcdctl snapshot restore "$SCRATCH/etcd.snap" --data-dir "$SCRATCH/etcd-e1" --name e1 \
  --initial-cluster "$ETCD_CLUSTER" --initial-cluster-token "$ETCD_TOKEN" \
  --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PORTS[1]}" >"$SCRATCH/etcdctl.log" 2>&1 \
  || { cat "$SCRATCH/etcdctl.log" >&2; die "no restore"; }
start_etcd
echo "etcd restored from the snapshot"
wait_held r f
wait_claim_error r
refusal r
status r
echo "-- the negative control: c, its clock behind, the check off (snowflake.fault_restore_unchecked)"
for _ in $(seq 1 200); do
  [ "$(psql_on c -At -c "SELECT machine_id FROM snowflake_machine_id_status() WHERE held")" = 0 ] && break
  sleep 0.1
done
echo "c holds machine id $(held_id c), the one a held after the snapshot"
load c 2
psql_on c -At -c "SELECT 'ids of c under machine id 0 below a''s last: ' || CASE WHEN count(*) > 0 THEN 'some' ELSE 'none' END FROM t WHERE snowflake_machine_id(id) = 0 AND id <= $a_last"
echo "-- the recovery: every mark raised (the manual's commands, as written), r's record removed"
# The manual's script (docs/many-servers.md, Restoring etcd), run as written with this id space and
# marks 3 s ahead rather than a minute.
ahead_s=3
sed -n "/^    python3 - \/pg_snowflake\/prod 60 <<'EOF'\$/,/^    EOF\$/p" "$PROJECT_DIR/docs/many-servers.md" \
  | sed -e 's/^    //' -e '1d' -e '$d' >"$SCRATCH/raise_marks.py"
[ -s "$SCRATCH/raise_marks.py" ] || die "the manual's script to raise the marks was not found"
python3 "$SCRATCH/raise_marks.py" "$R" "$ahead_s"
as_pg_owner rm "$SCRATCH/r/pg_snowflake.etcd"
echo "r holds machine id $(held_id r) again"
status r
# (Its ids wait for its clock to pass the raised mark.)
sleep "$ahead_s"
psql_on r -At -c "SELECT 'its next id is above its ids before: ' || (snowflake_nextval() > $r_last)"
