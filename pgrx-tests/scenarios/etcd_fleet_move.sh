# majors: 15
# long: half a minute or more, queued first
# A fleet moved from machine ids set by hand to ids leased from etcd, one server at a time (issue
# 52, item 3), on a real etcd (one member, Debian's 3.4), every server inserting all along, in the
# id space of the manual's procedure (/pg_snowflake/prod), whose etcdctl commands are run as the
# page writes them (issue 57, item 3: etcd 3.5's etcdctl, ETCDCTL_ENDPOINTS set):
# 1. Three servers set by hand (machine ids 0, 1 and 7), given etcd's settings beside
#    snowflake.machine_id: each reserves its id in the id space (its log says so, its status says
#    where); an operator reserves 9 by hand (the page's etcdctl put); the page's etcdctl get lists
#    the four.
# 2. A new leasing server passes the reserved ids over: it claims 2, not 0. Its status counts no
#    other holder but the four reservations (issue 57, item 4: not a prefix of its own).
# 3. The servers set by hand 0 and 1 are moved to etcd in turn (stopped, snowflake.machine_id
#    replaced by snowflake.machine_id_source = 'etcd', started): each claims the id it reserved,
#    its reservation removed with the claim (a reservation and a claim of one id never both stand:
#    issue 57, item 5), its first id is above its ids before, and its log says the machine id is
#    leased now.
# 4. At the end no id was issued twice across the four servers, at any moment of the move. 7 is
#    retired: stopped, its reservation removed by the page's etcdctl del; the space holds the
#    claims of 0, 1 and 2 and the reservation of 9 only.
# 5. Negative control (snowflake.fault_reservations_off on the leasing server): it claims the id a
#    server set by hand reserved, and the two issue ids that are equal. That server, restarted,
#    refuses ids while the leasing server holds its id (issue 56, item 4), its status saying why.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
mask() { sed -e "s/${ETCD_CLIENT_PORTS[0]}/P1/g"; }
P=/pg_snowflake/prod
table="CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), node text NOT NULL)"
# manual_etcdctl VERB: runs the page's etcdctl command of that verb as written (its lines joined).
manual_etcdctl() {
  local command
  command=$(tr '\n' ' ' <"$PROJECT_DIR/docs/many-servers.md" | tr -s ' ' | grep -o "\`etcdctl $1 [^\`]*\`" | tr -d '\`' | head -n 1)
  [ -n "$command" ] || die "no etcdctl $1 in docs/many-servers.md"
  echo "the page's command: $command"
  PATH="$(etcd35_bin):$PATH" ETCDCTL_ENDPOINTS=$ETCD_ENDPOINTS bash -c "$command" | grep -v '^$' | sed 's/^/  etcdctl: /'
}

# load NAME: single-row inserts until the file $SCRATCH/stop exists; errors (a server stopped or
# claiming) skipped.
load() {
  while [ ! -e "$SCRATCH/stop" ]; do
    for _ in $(seq 1 200); do echo "INSERT INTO t(node) VALUES ('$1');"; done
    sleep 0.05
  done | psql_on "$1" -v ON_ERROR_STOP=0 >/dev/null 2>>"$SCRATCH/$1.errors" || true
}
# hand_set NAME ID PREFIX: a server with machine id ID set by hand, reserving it in PREFIX.
hand_set() {
  init_cluster "$1" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = $2" \
    "snowflake.etcd_endpoints = '$ETCD_ENDPOINTS'" "snowflake.etcd_prefix = '$3'"
  start_cluster "$1"
  create_extension "$1"
  psql_on "$1" -c "$table" >/dev/null
}
# reserved PREFIX N: the ids reserved in the id space PREFIX, waiting (at most 10 s) for N of them.
reserved() {
  local i keys
  for i in $(seq 1 100); do
    keys=$(etcd_keys "$1/reserved/" | sed "s#^$1/reserved/##" | sort -n | paste -sd ' ')
    [ "$(wc -w <<<"$keys")" -ge "$2" ] && break
    sleep 0.1
  done
  echo "$keys"
}
# status NAME: who else is in the id space, as the status of NAME says.
status() {
  psql_on "$1" -At -c "SELECT 'other holders at its claim: ' || holders_at_claim || ', reservations: ' || reservations FROM snowflake_machine_id_status()"
}

echo "== 1. three servers set by hand reserve their ids"
hand_set h0 0 "$P"
hand_set h1 1 "$P"
hand_set h7 7 "$P"
echo "reserved in the id space: $(reserved "$P" 3)"
grep -o "machine id 0 (set by hand) reserved in .*" "$SCRATCH/h0.log" | mask
for _ in $(seq 1 100); do
  [ -n "$(psql_on h0 -At -c "SELECT reserved_in FROM snowflake_machine_id_status()")" ] && break
  sleep 0.1
done
psql_on h0 -At -c "SELECT 'h0''s status: ' || source || ', machine id ' || machine_id || ', reserved in ' || reserved_in FROM snowflake_machine_id_status()" | mask
manual_etcdctl put
manual_etcdctl get
for i in 0 1 7; do load "h$i" & done

echo "== 2. a new leasing server passes them over"
reserved "$P" 4 >/dev/null
init_leased n "$P"
start_cluster n
create_extension n
psql_on n -c "$table" >/dev/null
echo "the leasing server holds machine id $(held_id n); $(status n)"
load n &

echo "== 3. the servers set by hand 0 and 1 moved to etcd, one at a time"
for i in 0 1; do
  sleep 1
  before=$(psql_on "h$i" -At -c "SELECT max(id) FROM t")
  stop_cluster "h$i"
  as_pg_owner sed -i "/snowflake.machine_id = $i/d" "$SCRATCH/h$i/postgresql.conf"
  echo "snowflake.machine_id_source = 'etcd'" | as_pg_owner tee -a "$SCRATCH/h$i/postgresql.conf" >/dev/null
  start_cluster "h$i"
  echo "h$i holds machine id $(held_id "h$i"); $(status "h$i"); ids above its ids before: $(psql_on "h$i" -At -c "SELECT snowflake_nextval() > $before")"
  echo "  reserved in the id space now: $(reserved "$P" 0)"
  load "h$i" &
done
grep -o "the machine id is leased from etcd now; the high-water mark was written under machine id 1, set by hand.*" "$SCRATCH/h1.log" | head -n 1
grep -o "machine id 1 was reserved by this server while it was set by hand: claimed, and its reservation removed with the claim.*" "$SCRATCH/h1.log" | head -n 1
sleep 1
touch "$SCRATCH/stop"
wait

echo "== 4. no id twice across the four servers; 7 retired"
psql_on n -c "CREATE TABLE every (id bigint NOT NULL, node text NOT NULL)" >/dev/null
for c in h0 h1 h7 n; do
  psql_on "$c" -c "\\copy (SELECT id, node FROM t) TO STDOUT" | psql_on n -c "\\copy every FROM STDIN" >/dev/null
done
stop_cluster h7
manual_etcdctl del
psql_on n -At -c "SELECT 'ids issued twice: ' || count(*) - count(DISTINCT id) FROM every"
psql_on n -At -c "SELECT 'servers that inserted: ' || count(DISTINCT node) FROM every"
psql_on n -At -c "SELECT count(*) || ' ids in all' FROM every" >>"$REPORT"
echo "claims in the id space: $(etcd_keys "$P/claim/" | sed "s#^$P/claim/##" | sort -n | paste -sd ' '); reservations: $(reserved "$P" 0)"

echo "== 5. negative control: a leasing server that ignores reservations (snowflake.fault_reservations_off)"
hand_set x 0 /pg_snowflake/fleet_off
echo "reserved in the id space: $(reserved /pg_snowflake/fleet_off 1)"
init_leased y /pg_snowflake/fleet_off "snowflake.fault_reservations_off = on"
start_cluster y
create_extension y
psql_on y -c "$table" >/dev/null
echo "the leasing server holds machine id $(held_id y)"
rm -f "$SCRATCH/stop"
load x &
load y &
sleep 3
touch "$SCRATCH/stop"
wait
psql_on y -c "CREATE TABLE x_ids (id bigint NOT NULL, node text NOT NULL)" >/dev/null
psql_on x -c "\\copy (SELECT id, node FROM t) TO STDOUT" | psql_on y -c "\\copy x_ids FROM STDIN" >/dev/null
psql_on y -At -c "SELECT 'ids both issued: ' || CASE WHEN count(*) > 0 THEN 'some' ELSE 'none' END FROM x_ids JOIN t USING (id)"
restart_cluster x
for _ in $(seq 1 100); do
  [ -n "$(psql_on x -At -c "SELECT last_error FROM snowflake_machine_id_status()")" ] && break
  sleep 0.1
done
psql_on x -At -c "SELECT 'its status: held ' || held || ', ' || last_error FROM snowflake_machine_id_status()" \
  | sed -E 's/by a leasing server, [^:]+:[0-9]+ \(data directory [^,]*, system identifier [0-9]+\)/by a leasing server, HOST:PORT (data directory D, system identifier S)/'
