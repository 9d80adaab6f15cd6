# majors: 14 15 18 (no WAL lease on 14; 15 to 18 run the same WAL code, on its first and last major here)
# long: half a minute or more, queued first
# A restored base backup with archived WAL (point-in-time recovery to the end of the archive)
# starts above the last mark it replayed: a base backup, load from four connections, the WAL
# archived, the primary gone (-m immediate), the backup restored with restore_command and its
# clock 10 s behind (more than the restore takes even on a loaded machine, so that without the
# lease in the WAL its clock is still below the old primary's last ids). Every id it then issues
# lies above every id the old primary issued (the backup's own mark file is older than the load). Negative control: without the lease's WAL record
# (snowflake.fault_skip_lease_wal, test builds only) the restored server re-issues ids.
export PGOPTIONS="-c client_min_messages=error"
echo 'INSERT INTO ids(conn) VALUES (:client_id);' >"$SCRATCH/insert.sql"

# pitr NAME [primary settings...]
pitr() {
  local name=$1 p="primary_$1" r="restored_$1" archive="$SCRATCH/archive_$1"
  shift
  # (The scratch dir serves every major of a run: the archive of the one before must go.)
  rm -rf "$archive"
  as_pg_owner mkdir "$archive"
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
    "archive_mode = on" "archive_command = 'cp %p $archive/%f.part && mv $archive/%f.part $archive/%f'" "$@"
  start_cluster "$p"
  create_extension "$p"
  psql_on "$p" \
    -c "CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int NOT NULL)"
  as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -D "$SCRATCH/backup_$name" -X stream
  "$PG_BIN/pgbench" -n -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -c 4 -j 2 -T 3 -f "$SCRATCH/insert.sql" postgres \
    >"$SCRATCH/pgbench_$name.log" 2>&1 || { cat "$SCRATCH/pgbench_$name.log"; exit 1; }
  local old_max segment
  old_max=$(psql_on "$p" -At -c "SELECT max(id) FROM ids")
  segment=$(psql_on "$p" -At -c "SELECT pg_walfile_name(pg_switch_wal())")
  for _ in $(seq 1 100); do
    [ -f "$archive/$segment" ] && break
    sleep 0.1
  done
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$p" -m immediate -w stop >/dev/null
  as_pg_owner cp -a "$SCRATCH/backup_$name" "$SCRATCH/$r"
  printf '%s\n' "port = $(next_port)" "archive_mode = off" "restore_command = 'cp $archive/%f %p'" \
    "snowflake.fault_clock_offset = '-10s'" | as_pg_owner tee -a "$SCRATCH/$r/postgresql.conf" >/dev/null
  as_pg_owner touch "$SCRATCH/$r/recovery.signal"
  start_cluster "$r"
  wait_ready "$r"
  for _ in $(seq 1 100); do
    [ "$(psql_on "$r" -At -c "SELECT pg_is_in_recovery()")" = f ] && break
    sleep 0.1
  done
  local result issued
  result=$(ids_after_failover "$r")
  issued=${result%% *}
  echo "$name: the restored server replayed the load: $(psql_on "$r" -At -c "SELECT max(id) = $old_max FROM ids")"
  echo "$name: the restored server issued ids: $issued"
  psql_on "$r" -At <<SQL
SELECT '$name: its ids above every id the old primary issued: ' || (min(id) > $old_max) FROM after;
SQL
}

pitr archive
grep -q "pg_snowflake: archive recovery ended (a restored backup or point-in-time recovery): this server's machine id is 7" \
  "$SCRATCH/restored_archive.log" && echo "the restored server logged the end of archive recovery and the mark"
pitr no_wal_record "snowflake.fault_skip_lease_wal = on"
