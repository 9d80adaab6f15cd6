# majors: 15
# long: half a minute or more, queued first
# A backend crash costs a leased server no more than a hand-set one (issue 57, item 1), against a
# real etcd (one member, Debian's 3.4):
# 1. A backend of each killed with SIGKILL (the postmaster re-initialises shared memory): a server
#    leasing its machine id at snowflake.etcd_lease_ttl = 30 and one whose id is set by hand. Each
#    issues again above every id it issued before; the leased one takes its claim back at once and
#    its first id comes before its old lease's deadline (the mark it had recorded in etcd, 24 s
#    ahead): its own ids are below its mark file, and its log says it waits only for the mark of
#    the holders before it (none). How long each took from the kill to its first id goes to the
#    report (CRASH_TTL=10 runs it at TTL 10, CRASH_REPEAT=N crashes each N times). The control:
#    the whole recorded mark taken as used (the test builds' snowflake.fault_claim_whole_mark, the
#    start before the fix): no id for seconds, every call refused with 58000 (CRASH_CONTROL_S=40
#    waits for its first id, to measure the start before the fix).
# 2. The mark of the holder before still counts after a crash: A, its clock 12 s ahead, holds id 0,
#    issues and stops cleanly (its final mark, 12 s ahead); B claims 0 and refuses (58000, naming
#    A's mark: what it waits for, looked up in the Errors page with its hint); a backend of B is
#    killed before B issued anything: B takes its claim back, still refuses naming A, and its first
#    id is above A's. Negative control: that mark forgotten at the crash-restart (the test builds'
#    snowflake.fault_inherited_mark_off): B's first id after the crash is below A's ids.
# 3. The records name the machine id held (issue 57, item 2): the leased server's mark file and its
#    lease's WAL record (pg_walinspect) say machine id 0, leased, and the id space; set by hand on
#    the same data directory, its start says which id the mark was written under.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
TTL=${CRASH_TTL:-30}
mask() {
  sed -E -e "s/${ETCD_CLIENT_PORTS[0]}/P1/g" \
    -e 's/recorded in etcd by [^ ]+:[0-9]+ \(data directory [^,]*, system identifier [0-9]+\)/recorded in etcd by HOST:PORT (data directory D, system identifier S)/' \
    -e 's/: [0-9]+ ms from now/: N ms from now/' -e 's/waited [0-9]+ ms/waited M ms/' \
    -e 's/recorded by [^ ]+:[0-9]+ \(data directory [^,]*, system identifier [0-9]+\)/recorded by HOST:PORT (data directory D, system identifier S)/' \
    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+\+00/T/g'
}
# kill_a_backend NAME: SIGKILLs a backend of NAME (the postmaster re-initialises shared memory);
# prints the time of the kill (ns since 1970).
kill_a_backend() {
  local victim=
  psql_on "$1" -At -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
  for _ in $(seq 1 100); do
    victim=$(psql_on "$1" -At -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'")
    [ -n "$victim" ] && break
    sleep 0.05
  done
  [ -n "$victim" ] || die "no backend of $1 to kill"
  date +%s%N
  kill -9 "$victim"
}
# first_id_after NAME KILLED_NS [SECONDS]: asks NAME for an id (a new connection each time, every
# 50 ms) until it gives one, for at most SECONDS (default 40; a call may wait snowflake.max_clock_wait
# more); prints the id, or nothing; how long since the kill goes to the report.
first_id_after() {
  local id= t end=$(($(date +%s%N) + ${3:-40} * 1000000000))
  while [ "$(date +%s%N)" -lt "$end" ]; do
    id=$(psql_on "$1" -At -c "SELECT snowflake_nextval()" 2>/dev/null) && break
    id=
    sleep 0.05
  done
  t=$(date +%s%N)
  [ -z "$id" ] || echo "$1: its first id $(( (t - $2) / 1000000 )) ms after the kill (TTL $TTL)" >>"$REPORT"
  echo "$id"
}
# above ID LAST: yes, or NO (the two ids to the report).
above() {
  if [ -n "$1" ] && [ "$1" -gt "$2" ]; then
    echo yes
  else
    echo "not above: ${1:-none} and $2" >>"$REPORT"
    echo NO
  fi
}

echo "== 1. a backend crash, leased (TTL 30) and set by hand"
init_leased l /pg_snowflake/crash "snowflake.etcd_lease_ttl = $TTL" "wal_level = replica"
init_cluster h "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 9"
for n in l h; do start_cluster "$n"; create_extension "$n"; done
psql_on l -c "CREATE EXTENSION pg_walinspect" >/dev/null
echo "l holds machine id $(held_id l)"
for _ in $(seq 1 "${CRASH_REPEAT:-1}"); do
  for n in h l; do
    last=$(psql_on "$n" -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 200)")
    deadline_ms=$(psql_on "$n" -At -c "SELECT (extract(epoch FROM recorded_mark) * 1000)::bigint FROM snowflake_machine_id_status()")
    killed=$(kill_a_backend "$n")
    id=$(first_id_after "$n" "$killed")
    echo "$n: its first id after the crash, under machine id $(psql_on "$n" -At -c "SELECT snowflake_machine_id($id)"), above its ids before: $(above "$id" "$last")"
    [ "$n" = l ] && echo "l: its first id came before its old lease's deadline (the mark it had recorded in etcd): $(
      [ "$(psql_on l -At -c "SELECT (extract(epoch FROM snowflake_timestamp($id)) * 1000)::bigint < $deadline_ms")" = t ] && echo yes || echo NO)"
  done
done
grep -o "machine id 0: its mark in etcd, .*, is this run's own (the deadline of the lease it held before): .*" "$SCRATCH/l.log" | mask | head -n 1
echo "-- the control: the whole recorded mark taken as used (snowflake.fault_claim_whole_mark)"
echo "snowflake.fault_claim_whole_mark = on" | as_pg_owner tee -a "$SCRATCH/l/postgresql.conf" >/dev/null
restart_cluster l
held_id l >/dev/null
psql_on l -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 200)" >/dev/null
killed=$(kill_a_backend l)
wait_ready l
held_id l >/dev/null
refusal=$(psql_on l -v VERBOSITY=verbose -At -c "SELECT snowflake_nextval()" 2>&1 || true)
id=$(first_id_after l "$killed" "${CRASH_CONTROL_S:-3}")
echo "l: $([ -n "$id" ] && echo "an id within ${CRASH_CONTROL_S:-3} s after its claim" || echo "no id within ${CRASH_CONTROL_S:-3} s after its claim, every call refused"), with $(
  grep -o "ERROR:  [0-9A-Z]*" <<<"$refusal" | sed 's/ERROR:  //' | head -n 1)"
as_pg_owner sed -i '/fault_claim_whole_mark/d' "$SCRATCH/l/postgresql.conf"

echo "== 2. the mark of the holder before still counts after a crash"
init_leased pa /pg_snowflake/before "snowflake.fault_clock_offset = '12s'"
init_leased pb /pg_snowflake/before "snowflake.max_clock_wait = 200"
# (A and B each hold 0 in turn; B's refusals name A's mark.)
holder_then_crash() {
  start_cluster pa
  create_extension pa 2>/dev/null || true
  [ "$(held_id pa)" = 0 ] || die "A holds another id than 0"
  a_last=$(psql_on pa -At -c "SELECT max(snowflake_nextval()) FROM generate_series(1, 200)")
  stop_cluster pa
  start_cluster pb
  create_extension pb 2>/dev/null || true
  echo "B holds machine id $(held_id pb), A's"
  psql_on pb -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 | grep -E "ERROR|HINT" | mask >"$SCRATCH/pb.refusal" || true
  killed=$(kill_a_backend pb)
  wait_ready pb
  held_id pb >/dev/null
}
holder_then_crash
cat "$SCRATCH/pb.refusal"
refusal=$(psql_on pb -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 || true)
if [ "$(grep -E "ERROR|HINT" <<<"$refusal" | mask)" = "$(cat "$SCRATCH/pb.refusal")" ]; then
  echo "after the crash: the same refusal, naming A's mark"
else
  echo "after the crash:"
  grep -E "ERROR|HINT" <<<"$refusal" | mask
fi
python3 "$PROJECT_DIR/pgrx-tests/harness/errors_in_page.py" "B's refusal" "$SCRATCH/pb.refusal" 2>>"$REPORT"
grep -o "machine id 0: its mark in etcd, .*, is this run's own (the deadline of the lease it held before): .*" "$SCRATCH/pb.log" | mask | head -n 1
echo "B's first id after the crash is above A's ids: $(above "$(first_id_after pb "$killed" 30)" "$a_last")"
echo "-- the negative control: the holder before forgotten at a crash-restart (snowflake.fault_inherited_mark_off)"
stop_cluster pb
for n in pa pb; do as_pg_owner sed -i 's|/pg_snowflake/before|/pg_snowflake/before2|' "$SCRATCH/$n/postgresql.conf"; done
echo "snowflake.fault_inherited_mark_off = on" | as_pg_owner tee -a "$SCRATCH/pb/postgresql.conf" >/dev/null
holder_then_crash
echo "B's first id after the crash is above A's ids: $(above "$(first_id_after pb "$killed" 30)" "$a_last")"
stop_cluster pb

echo "== 3. the records name the machine id held"
start_lsn=$(psql_on l -At -c "SELECT pg_current_wal_lsn()")
psql_on l -At -c "DO \$\$ BEGIN WHILE clock_timestamp() < now() + interval '1.5 s' LOOP PERFORM snowflake_nextval(); END LOOP; END \$\$"
as_pg_owner cat "$SCRATCH/l/pg_snowflake.mark" | grep -E '"(machine_id|leased_from)"'
psql_on l -At -c "
  SELECT DISTINCT 'WAL: ' || record_type || ', ' || regexp_replace(description, '^mark .* ms since 1970\), ', '')
  FROM pg_get_wal_records_info('$start_lsn', pg_current_wal_lsn()) WHERE resource_manager = 'pg_snowflake'"
grep -o "pg_snowflake: crash recovery ended: .*" "$SCRATCH/l.log" | mask | head -n 1
stop_cluster l
as_pg_owner sed -i -e '/machine_id_source/d' -e '/etcd_/d' "$SCRATCH/l/postgresql.conf"
echo "snowflake.machine_id = 5" | as_pg_owner tee -a "$SCRATCH/l/postgresql.conf" >/dev/null
start_cluster l
grep -o "pg_snowflake: the machine id is 5; the high-water mark was written .*" "$SCRATCH/l.log"
