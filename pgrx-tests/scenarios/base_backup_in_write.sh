# majors: 15 (its subject, the order of a mark write, is the same code on every major with the lease in the WAL; run on 18 by hand)
# A base backup whose checkpoint comes in the middle of a mark write still holds that write's
# lease (issue 42, finding 3). A primary's writer pauses before the rename of its mark file (the
# test builds' snowflake.fault_hold_at); meanwhile a backup begins (pg_backup_start: its
# checkpoint) and the data directory is copied, the old mark file with it; the write then ends and
# ids are issued under the new lease; the backup ends (pg_backup_stop), the primary is lost, and
# the copy starts with the WAL from the checkpoint on and its clock 10 s behind. The mark write
# puts the file in place before the lease's WAL record, so the record comes after the checkpoint
# and the copy replays it: every id it issues lies above its primary's. Negative control: with the
# record first (snowflake.fault_record_first, test builds only: the order before the fix), the
# record lies before the checkpoint and the copied file is the old one: the copy knows the lease
# from neither, and issues ids below its primary's.
export PGOPTIONS="-c client_min_messages=error"

# in_write NAME [primary settings...]
in_write() {
  local name=$1 p="primary_$1" c="copy_$1" old_mark primary_max label_from
  shift
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
    "snowflake.max_mark_wait = 60s" "$@"
  start_cluster "$p"
  create_extension "$p"
  psql_on "$p" -c "CREATE TABLE ids (id bigint PRIMARY KEY)" \
    -c "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 100)"
  # The writer: its next id needs a new lease, and each of its mark writes pauses 6 s before the
  # rename. The first falls short of the clock (a lease is 1 s, or twice the last write, at most
  # 10 s); the second, with a 10 s lease, is the one the backup falls in: ids follow under it.
  local writer_psql wpid
  start_paused_writer "$p" before_rename 6000 "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 100)"
  for _ in $(seq 1 600); do
    [ "$(grep -c "\[$wpid\] LOG:  pg_snowflake fault injection: the mark write pauses at before_rename " "$SCRATCH/$p.log")" -ge 2 ] && break
    sleep 0.02
  done
  old_mark=$(mark_ms_of "$p")
  # The backup's session stays open from its start to its stop (a non-exclusive backup).
  rm -f "$SCRATCH/backup_$name.in"
  mkfifo "$SCRATCH/backup_$name.in"
  psql_on "$p" -At <"$SCRATCH/backup_$name.in" >"$SCRATCH/backup_$name.out" 2>&1 &
  local backup_psql=$!
  exec 7>"$SCRATCH/backup_$name.in"
  echo "SELECT pg_backup_start('in_write', true);" >&7
  for _ in $(seq 1 600); do
    [ -s "$SCRATCH/backup_$name.out" ] && break
    sleep 0.05
  done
  as_pg_owner cp -a "$SCRATCH/$p" "$SCRATCH/$c"
  # The copy was made inside the write: the writer still paused, the mark file not yet replaced.
  local inside=no
  kill -0 "$writer_psql" 2>/dev/null && [ "$(mark_ms_of "$p")" = "$old_mark" ] && inside=yes
  echo "$name: the data directory copied while the write paused before its rename: $inside"
  wait "$writer_psql" || { cat "$SCRATCH/writer.err"; exit 1; }
  echo "$name: the copy's mark file is the lease before the write's: $([ "$(mark_ms_of "$c")" = "$old_mark" ] && echo yes || echo no)"
  primary_max=$(psql_on "$p" -At -c "SELECT max(id) FROM ids")
  echo "SELECT labelfile FROM pg_backup_stop(false);" >&7
  exec 7>&-
  wait "$backup_psql" || { cat "$SCRATCH/backup_$name.out"; exit 1; }
  # The primary is lost; the copy gets the backup's label and the WAL written up to its end.
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$p" -m immediate -w stop >/dev/null
  label_from=$(grep -n "^START WAL LOCATION" "$SCRATCH/backup_$name.out" | cut -d: -f1)
  [ -n "$label_from" ] || { cat "$SCRATCH/backup_$name.out"; exit 1; }
  tail -n +"$label_from" "$SCRATCH/backup_$name.out" | as_pg_owner tee "$SCRATCH/$c/backup_label" >/dev/null
  as_pg_owner rm -f "$SCRATCH/$c/postmaster.pid"
  as_pg_owner cp -a "$SCRATCH/$p/pg_wal/." "$SCRATCH/$c/pg_wal/"
  printf '%s\n' "port = $(next_port)" "snowflake.fault_clock_offset = '-10s'" "snowflake.fault_record_first = off" \
    | as_pg_owner tee -a "$SCRATCH/$c/postgresql.conf" >/dev/null
  start_cluster "$c"
  wait_ready "$c"
  local result
  result=$(ids_after_failover "$c")
  echo "$name: the copy issued ids: ${result%% *}"
  psql_on "$c" -At -c "SELECT '$name: its ids above every id its primary issued before the backup ended: ' || (min(id) > $primary_max) FROM after"
  stop_cluster "$c"
}

in_write file_first
in_write record_first "snowflake.fault_record_first = on"
