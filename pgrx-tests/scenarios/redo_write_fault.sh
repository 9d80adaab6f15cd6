# majors: 15
# long: half a minute or more, queued first
# Issue 42, finding 1, on a real standby (PostgreSQL 15+: the lease is in the WAL): the standby's
# mark file cannot be written while it replays a lease (chattr +i: the rename onto it fails). Redo
# does not go on with the file behind memory: recovery stops at that record (FATAL, naming the
# file and what to do), and the standby with it. The primary is gone; once the file is writable
# again, the standby starts, replays the record again, is promoted and restarted cleanly with its
# clock 10 s behind the old primary's last id: every id it issues is above that id. Negative
# control: redo that only warns (snowflake.fault_redo_write_warns, test builds only: the code
# before the fix) goes on with the file behind, and after the same promotion and clean restart the
# standby issues ids below the old primary's. Run as root (chattr).
export PGOPTIONS="-c client_min_messages=error"

run() { # run CONTROL(on|off)
  local p=primary_$1 s=standby_$1 mark last target
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
  start_cluster "$p"
  create_extension "$p"
  psql_on "$p" -c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval())"
  psql_on "$p" -c "INSERT INTO t SELECT FROM generate_series(1, 100)"
  as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -D "$SCRATCH/$s" -R -X stream
  {
    echo "port = $(next_port)"
    echo "snowflake.max_clock_wait = 15000"
    echo "snowflake.fault_redo_write_warns = $1"
  } | as_pg_owner tee -a "$SCRATCH/$s/postgresql.conf" >/dev/null
  start_cluster "$s"
  mark="$SCRATCH/$s/pg_snowflake.mark"
  # The standby has replayed everything so far, and the primary's lease has run out (1 s): the
  # next ids need a new lease, a WAL record the standby will fail to make durable.
  target=$(psql_on "$p" -At -c "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 100); do
    [ "$(psql_on "$s" -At -c "SELECT pg_last_wal_replay_lsn() >= '$target'")" = t ] && break
    sleep 0.1
  done
  sleep 2
  chattr +i "$mark"
  psql_on "$p" -c "INSERT INTO t SELECT FROM generate_series(1, 5000)"
  last=$(psql_on "$p" -At -c "SELECT max(id) FROM t")
  for _ in $(seq 1 50); do
    as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" status >/dev/null 2>&1 || break
    sleep 0.1
  done
  echo "the standby stopped at the lease it could not make durable: $(as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" status >/dev/null 2>&1 && echo no || echo yes)"
  grep -o '\(FATAL\|WARNING\):  pg_snowflake: could not make the replayed high-water mark durable in "[^"]*": .*' "$SCRATCH/$s.log" \
    | head -n 1 | sed "s#$SCRATCH/$s/##"
  stop_cluster "$p"
  chattr -i "$mark"
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" status >/dev/null 2>&1 || start_cluster "$s"
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" -w promote >/dev/null
  echo "snowflake.fault_clock_offset = -10000" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.conf" >/dev/null
  restart_cluster "$s"
  psql_on "$s" -c "CREATE TABLE after_promotion AS SELECT snowflake_nextval() AS id FROM generate_series(1, 5000)"
  psql_on "$s" -At -c "SELECT 'ids issued after the promotion: ' || count(*) || ', at or below the old primary''s last: ' || CASE WHEN count(*) FILTER (WHERE id <= $last) > 0 THEN 'some' ELSE 'none' END FROM after_promotion"
  psql_on "$s" -At -c "SELECT 'redo warns only = $1: ' || count(*) FILTER (WHERE id <= $last) || ' of ' || count(*) || ' ids at or below the old primary''s last' FROM after_promotion" >>"$REPORT"
  stop_cluster "$s"
}

echo "== redo stops at a mark it cannot write"
run off
echo "== negative control: redo only warns"
run on
