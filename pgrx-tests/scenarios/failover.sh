# majors: 14 15 18 (no WAL lease on 14; 15 to 18 run the same WAL code, on its first and last major here)
# long: half a minute or more, queued first
# Failover never re-issues an id: a streaming standby made with pg_basebackup -R (so it carries
# the primary's machine id), load from four connections on the primary for 3 s, the standby
# caught up, the primary stopped (-m immediate, then -m fast), pg_ctl promote, and the new
# primary's clock set to 1.5 s before the old primary's last id (the test builds'
# snowflake.fault_clock_offset, set in the inserting session: the middle of the load, however long
# the promotion took). Every id the new primary issues lies above
# every id the old one issued, or the call fails with the clock error while it waits; ids come
# once the clock allows. The lease reaches the standby as a WAL record of pg_snowflake's resource
# manager (PostgreSQL 15+). Negative control: the same with that record switched off
# (snowflake.fault_skip_lease_wal, test builds only) re-issues the old primary's ids.
# PostgreSQL 14 has no custom resource managers: its expected output shows the documented rule.
export PGOPTIONS="-c client_min_messages=error"
echo 'INSERT INTO ids(conn) VALUES (:client_id);' >"$SCRATCH/insert.sql"

# failover NAME STOP_MODE [primary settings...]
failover() {
  local name=$1 mode=$2 p="primary_$1" s="standby_$1"
  shift 2
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "$@"
  start_cluster "$p"
  create_extension "$p"
  psql_on "$p" \
    -c "CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int NOT NULL)"
  as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -D "$SCRATCH/$s" -R -X stream
  echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.conf" >/dev/null
  start_cluster "$s"
  local start_lsn
  start_lsn=$(psql_on "$p" -At -c "SELECT pg_current_wal_lsn()")
  "$PG_BIN/pgbench" -n -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -c 4 -j 2 -T 3 -f "$SCRATCH/insert.sql" postgres \
    >"$SCRATCH/pgbench_$name.log" 2>&1 || { cat "$SCRATCH/pgbench_$name.log"; exit 1; }
  local lsn
  lsn=$(psql_on "$p" -At -c "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 100); do
    [ "$(psql_on "$s" -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
    sleep 0.1
  done
  local old_max old_rows
  old_max=$(psql_on "$s" -At -c "SELECT max(id) FROM ids")
  old_rows=$(psql_on "$s" -At -c "SELECT count(*) FROM ids")
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$p" -m "$mode" -w stop >/dev/null
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" -w promote >/dev/null
  # Insert on the new primary until ids come (at most 45 s), counting the clock errors met, its
  # clock starting 1.5 s before the old primary's last id: in the middle of the 3 s load.
  local result issued refused clock_ms=$(( $(id_ms "$old_max") - 1500 )) offset
  offset=$(( clock_ms - $(date +%s%3N) ))
  result=$(ids_after_failover "$s" "$clock_ms")
  read -r issued refused <<<"$result"
  # Then one id a millisecond for 300 ms, the same clock running on: the 2,000 ids above took a
  # few milliseconds, in which the old primary may have issued no id at all (a loaded machine's
  # load is sparse), so that an id issued again showed only now and then; over 300 ms, ids issued
  # again (without the lease in the WAL) meet the old primary's at once.
  psql_on "$s" -c "SET snowflake.fault_clock_offset = $offset" \
    -c "INSERT INTO after SELECT n FROM generate_series(1, 300) g, LATERAL (SELECT snowflake_nextval() AS n, pg_sleep(0.001), g) x" \
    >/dev/null
  echo "$name: the old primary issued $( [ "$old_rows" -gt 1000 ] && echo 'over 1,000' || echo "only $old_rows") ids; stopped -m $mode"
  echo "$name: the new primary issued ids: $issued"
  psql_on "$s" -At <<SQL
SELECT '$name: its ids above every id the old primary issued: ' || (min(id) > $old_max) FROM after;
SELECT '$name: its ids equal to an id already in the table: ' || (count(*) > 0) FROM after JOIN ids USING (id);
SQL
  if [ "$name" = immediate ] && [ "$PG_MAJOR" -ge 15 ]; then
    # The lease records as pg_walinspect shows them (rm_identify and rm_desc).
    psql_on "$s" -At -c "CREATE EXTENSION pg_walinspect" -c "
      SELECT DISTINCT 'WAL: ' || resource_manager || ' ' || record_type || ', ' || (description ~ '^mark \d{4}-.* ms since 1970\), machine id 7, layout 41\|10\|12 bits \(timestamp\|machine\|sequence\) from 2025-01-01 00:00:00\+00$')
      FROM pg_get_wal_records_info('$start_lsn', pg_current_wal_lsn()) WHERE resource_manager = 'pg_snowflake'"
  fi
  echo "$name: calls refused while its clock was behind: $refused" >>"$REPORT"
  grep -h "pg_snowflake: a standby promoted" "$SCRATCH/$s.log" | sed 's/.*LOG:  //' >>"$REPORT" || true
}

failover immediate immediate
failover fast fast
failover no_wal_record immediate "snowflake.fault_skip_lease_wal = on"

# The standby logged the promotion: its machine id, the mark, and the old primary's machine id.
# PostgreSQL 14 said at start that it cannot log the lease.
if [ "$PG_MAJOR" -ge 15 ]; then
  pattern="pg_snowflake: a standby promoted: this server's machine id is 7; its ids start above the high-water mark .* (the last lease replayed from the WAL was written by machine id 7)"
  log=standby_immediate
else
  pattern="pg_snowflake: PostgreSQL 14 has no custom WAL resource managers: .* failover safety needs PostgreSQL 15 or later"
  log=primary_immediate
fi
if grep -q "$pattern" "$SCRATCH/$log.log"; then echo "the server log says: ${pattern%%:*}: ${pattern#*: }" | cut -c1-120; else echo "missing in the server log: $pattern"; fi

# A standby that does not preload pg_snowflake cannot replay the lease: PostgreSQL stops it with
# its own message, naming the resource manager (PostgreSQL 15 and later).
if [ "$PG_MAJOR" -ge 15 ]; then
  init_cluster primary_np "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
  start_cluster primary_np
  create_extension primary_np
  as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of primary_np)" -U postgres -D "$SCRATCH/standby_np" -R -X stream
  printf '%s\n' "port = $(next_port)" "shared_preload_libraries = ''" | as_pg_owner tee -a "$SCRATCH/standby_np/postgresql.conf" >/dev/null
  start_cluster standby_np
  psql_on primary_np -At -c "SELECT count(snowflake_nextval()) > 0 FROM generate_series(1, 10)" >/dev/null
  for _ in $(seq 1 100); do
    grep -q "FATAL" "$SCRATCH/standby_np.log" && break
    sleep 0.1
  done
  # (PostgreSQL 18 quotes the setting's name in the hint.)
  sed -n 's/.*\(FATAL:  .*\)/\1/p; s/.*\(HINT:  .*\)/\1/p' "$SCRATCH/standby_np.log" | grep -v "connect" | head -n 2 \
    | sed 's/"shared_preload_libraries"/shared_preload_libraries/'

fi
