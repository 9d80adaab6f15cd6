# majors: 15 (its subject, the order of a mark write, is the same code on every major with the lease in the WAL; run on 18 by hand)
# A base backup whose checkpoint comes in the middle of a mark write still holds that write's
# lease (issue 42, finding 3). A primary's writer pauses before the rename of its mark file (the
# test builds' snowflake.fault_hold_at); meanwhile a backup begins (pg_backup_start: its
# checkpoint) and the data directory is copied, the old mark file with it; the write then ends and
# ids are issued under the new lease; the backup ends (pg_backup_stop), the primary is lost, and
# the copy starts with the WAL from the checkpoint on, its clock 3 s behind its primary's last id.
# The primary's lease worker is stopped (SIGSTOP) meanwhile: it would renew the lease at once after
# the writer's ids, and the copy would know that later lease from the WAL in either order. The mark write
# puts the file in place before the lease's WAL record, so the record comes after the checkpoint
# and the copy replays it: every id it issues lies above its primary's. Negative control: with the
# record first (snowflake.fault_record_first, test builds only: the order before the fix), the
# record lies before the checkpoint and the copied file is the old one: the copy knows the lease
# from neither, and issues ids below its primary's.
export PGOPTIONS="-c client_min_messages=error"

# one_try NAME TRY [primary settings...]: the case on clusters of its own; its lines in
# $SCRATCH/NAME.lines. Sets `inside` to no, and stops before any id of the copy, when the copy of
# the data directory did not fall inside the write's pause (a loaded machine).
one_try() {
  local name=$1 p="primary_$1_$2" c="copy_$1_$2" out="$SCRATCH/$1.lines" old_mark primary_max label_from worker
  shift 2
  : >"$out"
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
    "snowflake.max_mark_wait = 60s" "$@"
  start_cluster "$p"
  create_extension "$p"
  psql_on "$p" -c "CREATE TABLE ids (id bigint PRIMARY KEY)" \
    -c "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 100)"
  # The writer: its next id needs a new lease, and each of its mark writes pauses 6 s before the
  # rename. The first falls short of the clock (a lease is 1 s, or twice the last write, at most
  # 10 s); the second, with a 10 s lease, is the one the backup falls in: ids follow under it.
  local writer_psql wpid _
  start_paused_writer "$p" before_rename 6000 "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 100)"
  local pauses=0
  for _ in $(seq 1 1000); do
    pauses=$(grep -c "\[$wpid\] LOG:  pg_snowflake fault injection: the mark write pauses at before_rename " "$SCRATCH/$p.log" || true)
    [ "$pauses" -ge 2 ] && break
    sleep 0.02
  done
  [ "$pauses" -ge 2 ] || { echo "$name: the writer's second write did not pause within 20 s" >&2; cat "$SCRATCH/writer.err" >&2; exit 1; }
  worker=$(psql_on "$p" -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_snowflake lease'")
  [ -n "$worker" ] || { echo "$name: no lease worker" >&2; exit 1; }
  kill -STOP "$worker"
  old_mark=$(mark_ms_of "$p")
  # The backup's session stays open from its start to its stop (a non-exclusive backup).
  rm -f "$SCRATCH/backup_$name.in"
  mkfifo "$SCRATCH/backup_$name.in"
  psql_on "$p" -At <"$SCRATCH/backup_$name.in" >"$SCRATCH/backup_$name.out" 2>&1 &
  local backup_psql=$!
  exec 7>"$SCRATCH/backup_$name.in"
  echo "SELECT pg_backup_start('in_write', true);" >&7
  for _ in $(seq 1 1200); do
    [ -s "$SCRATCH/backup_$name.out" ] && break
    sleep 0.05
  done
  [ -s "$SCRATCH/backup_$name.out" ] || { echo "$name: pg_backup_start() did not answer within 60 s" >&2; exit 1; }
  as_pg_owner cp -a "$SCRATCH/$p" "$SCRATCH/$c"
  # The copy was made inside the write: the writer still paused, the mark file not yet replaced.
  inside=no
  kill -0 "$writer_psql" 2>/dev/null && [ "$(mark_ms_of "$p")" = "$old_mark" ] && inside=yes
  echo "$name: the data directory copied while the write paused before its rename: $inside" >>"$out"
  wait "$writer_psql" || { cat "$SCRATCH/writer.err"; exit 1; }
  echo "$name: the copy's mark file is the lease before the write's: $([ "$(mark_ms_of "$c")" = "$old_mark" ] && echo yes || echo no)" >>"$out"
  primary_max=$(psql_on "$p" -At -c "SELECT max(id) FROM ids")
  echo "SELECT labelfile FROM pg_backup_stop(false);" >&7
  exec 7>&-
  wait "$backup_psql" || { cat "$SCRATCH/backup_$name.out"; exit 1; }
  # The copy gets the backup's label and the WAL written up to its end (pg_backup_stop() switched
  # to a new WAL file); then the worker goes on and the primary is lost.
  label_from=$(grep -n "^START WAL LOCATION" "$SCRATCH/backup_$name.out" | cut -d: -f1)
  [ -n "$label_from" ] || { cat "$SCRATCH/backup_$name.out"; exit 1; }
  tail -n +"$label_from" "$SCRATCH/backup_$name.out" | as_pg_owner tee "$SCRATCH/$c/backup_label" >/dev/null
  as_pg_owner rm -f "$SCRATCH/$c/postmaster.pid"
  as_pg_owner cp -a "$SCRATCH/$p/pg_wal/." "$SCRATCH/$c/pg_wal/"
  kill -CONT "$worker"
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$p" -m immediate -w stop >/dev/null
  [ "$inside" = yes ] || return 0
  echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/$c/postgresql.conf" >/dev/null
  start_cluster "$c"
  wait_ready "$c"
  # Its clock 3 s before its primary's last id, however long the restore took.
  local result
  result=$(ids_after_failover "$c" "$(( $(id_ms "$primary_max") - 3000 ))")
  echo "$name: the copy issued ids: ${result%% *}" >>"$out"
  psql_on "$c" -At -c "SELECT '$name: its ids above every id its primary issued before the backup ended: ' || (min(id) > $primary_max) FROM after" >>"$out"
  stop_cluster "$c"
}

# in_write NAME [primary settings...]: the case, tried again (at most three times, each in the
# report) when the copy did not fall inside the write's pause.
in_write() {
  local name=$1 try
  shift
  for try in 1 2 3; do
    one_try "$name" "$try" "$@"
    if [ "$inside" = yes ]; then
      cat "$SCRATCH/$name.lines"
      return 0
    fi
    echo "$name: try $try: the copy did not fall inside the write's pause; tried again" >>"$REPORT"
  done
  echo "$name: in three tries the copy never fell inside the write's pause" >&2
  exit 1
}

in_write file_first
in_write record_first "snowflake.fault_record_first = on"
