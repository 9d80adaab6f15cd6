# majors: 14 15 18 (no WAL lease on 14; 15 to 18 run the same WAL code, on its first and last major here)
# long: half a minute or more, queued first
# Synchronous replication with snowflake.lease_sync = on: a new lease is used only once the
# synchronous standby has its WAL record. The standby is cut off (primary_conninfo emptied) while
# the primary goes on committing with synchronous_commit = local, so the standby loses the
# primary's last commits; then the primary dies, the standby is promoted, and its clock set to
# 1.5 s before the old primary's last id. Its ids still lie above every id the old primary issued, lost commits included: the old
# primary could not lease past what the standby had. Negative control: lease_sync off, the same
# failover re-issues ids of the lost commits.
export PGOPTIONS="-c client_min_messages=error"

# until_true NAME SQL: until SQL answers t on cluster NAME (at most a minute); fails if it never does.
until_true() {
  local _
  for _ in $(seq 1 600); do
    [ "$(psql_on "$1" -At -c "$2")" = t ] && return 0
    sleep 0.1
  done
  return 1
}

# sync NAME LEASE_SYNC
sync() {
  local name=$1 p="primary_$1" s="standby_$1"
  # snowflake.max_mark_wait as by default (5 s): a lease the standby does not confirm fails after
  # it, and a mark write that succeeds (the WAL flushed, the standby's reply, the file synced) takes
  # far less, even on a machine busy with other tests.
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
    "synchronous_standby_names = '*'" "synchronous_commit = local" "snowflake.lease_sync = $2" \
    "snowflake.max_mark_wait = 5000"
  start_cluster "$p"
  create_extension "$p"
  # The load: ids committed one by one until it fails or is told to stop.
  psql_on "$p" \
    -c "CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval())" \
    -c "CREATE TABLE stop_load ()" \
    -c "CREATE PROCEDURE load() LANGUAGE plpgsql AS \$\$
        BEGIN
          WHILE NOT EXISTS (SELECT FROM stop_load) LOOP
            INSERT INTO ids DEFAULT VALUES; COMMIT;
          END LOOP;
        END \$\$"
  as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -D "$SCRATCH/$s" -R -X stream
  echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.conf" >/dev/null
  start_cluster "$s"
  until_true "$p" "SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'" || true
  echo "$name: the standby is synchronous: $(psql_on "$p" -At -c "SELECT sync_state FROM pg_stat_replication")"
  psql_on "$p" -c "CALL load()" >/dev/null 2>"$SCRATCH/load_$name.err" &
  local load=$!
  # The standby has the load's first ids (with lease_sync on, under a lease it confirmed); then it
  # is cut off while the load goes on: it keeps what it has, and the primary's next commits never
  # reach it. (pg_basebackup -R wrote primary_conninfo into postgresql.auto.conf, which wins.)
  until_true "$s" "SELECT count(*) > 0 FROM ids" || { echo "$name: the standby replayed no id of the load" >&2; exit 1; }
  echo "primary_conninfo = ''" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.auto.conf" >/dev/null
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" reload >/dev/null
  local gone=no
  until_true "$p" "SELECT count(*) = 0 FROM pg_stat_replication" && gone=yes
  echo "$name: the standby is cut off: $gone"
  # What the standby has, once it has replayed all it received: its last id and its mark (the last
  # lease it replayed, which it starts above once promoted), in ms since 1970.
  until_true "$s" "SELECT pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn()" || { echo "$name: the standby did not replay what it received" >&2; exit 1; }
  local standby_ms
  standby_ms=$(psql_on "$s" -At -c "SELECT greatest(
      (SELECT (max(id) >> 22) + 1735689600000 FROM ids),
      (SELECT (extract(epoch FROM high_water_mark) * 1000)::bigint FROM snowflake_stats()))")
  # With lease_sync on, the load ends at its first new lease, which the standby cannot confirm
  # (after snowflake.max_mark_wait): the primary never issues ids past what the standby has. Without
  # it, the load goes on; it is stopped once the primary's ids lie a second past all the standby
  # has, mark included (commits the standby lost, beyond the lease it would start above).
  local went_on=no
  for _ in $(seq 1 600); do
    kill -0 "$load" 2>/dev/null || break
    if [ "$(psql_on "$p" -At -c "SELECT (max(id) >> 22) + 1735689600000 > $standby_ms + 1000 FROM ids")" = t ]; then
      went_on=yes
      break
    fi
    sleep 0.1
  done
  psql_on "$p" -c "INSERT INTO stop_load DEFAULT VALUES"
  wait "$load" || true
  # The error that ends it, or that it went on until stopped. Two errors say that the standbys did
  # not confirm the new lease: the load's own write ran out of snowflake.max_mark_wait waiting for
  # them (55000), or the load waited that long for the lease worker's write, itself waiting for
  # them (55P03, naming it: when the load's wait began during the worker's file write, before its
  # standby wait). Which one comes is a race on a loaded machine: the exact text is in the report.
  if [ -s "$SCRATCH/load_$name.err" ]; then
    grep -E '^(ERROR|HINT):' "$SCRATCH/load_$name.err" | sed "s/^/$name: the load stopped: /" >>"$REPORT"
    if grep -qE '^ERROR:  (the synchronous standbys \(.*\) did not confirm the new snowflake lease within [0-9]+ ms|waited [0-9]+ ms \(snowflake.max_mark_wait\) for process [0-9]+ to write the snowflake high-water mark; it is waiting for the synchronous standbys)' \
      "$SCRATCH/load_$name.err"; then
      echo "$name: the load stopped: the synchronous standbys did not confirm its new lease within snowflake.max_mark_wait"
    else
      grep -E '^(ERROR|HINT):' "$SCRATCH/load_$name.err" | sed "s/^/$name: the load stopped: /"
    fi
  elif [ "$went_on" = yes ]; then
    echo "$name: the load went on past all the standby has, until stopped"
  else
    echo "$name: the load went on for a minute, never past what the standby has"
  fi
  local old_max old_rows
  old_max=$(psql_on "$p" -At -c "SELECT max(id) FROM ids")
  old_rows=$(psql_on "$p" -At -c "SELECT count(*) FROM ids")
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$p" -m immediate -w stop >/dev/null
  # Promoted, it has no synchronous standby of its own (as an HA engine would set it).
  echo "synchronous_standby_names = ''" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.conf" >/dev/null
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" reload >/dev/null
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" -w promote >/dev/null
  echo "$name: the promoted standby lost commits of the old primary: $( [ "$(psql_on "$s" -At -c "SELECT count(*) FROM ids")" -lt "$old_rows" ] && echo yes || echo no)"
  local result issued
  # Its clock 1.5 s before the old primary's last id, however long the promotion took.
  result=$(ids_after_failover "$s" "$(( $(id_ms "$old_max") - 1500 ))")
  issued=${result%% *}
  echo "$name: the new primary issued ids: $issued"
  psql_on "$s" -At -c "SELECT '$name: its ids above every id the old primary issued, lost commits included: ' || (min(id) > $old_max) FROM after"
}

sync lease_sync_on on
sync lease_sync_off off
