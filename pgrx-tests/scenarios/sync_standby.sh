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

# sync NAME LEASE_SYNC
sync() {
  local name=$1 p="primary_$1" s="standby_$1"
  init_cluster "$p" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
    "synchronous_standby_names = '*'" "synchronous_commit = local" "snowflake.lease_sync = $2" \
    "snowflake.max_mark_wait = 1000"
  start_cluster "$p"
  create_extension "$p"
  psql_on "$p" \
    -c "CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval())" \
    -c "CREATE PROCEDURE load(seconds float8) LANGUAGE plpgsql AS \$\$
        DECLARE t0 timestamptz := clock_timestamp();
        BEGIN
          WHILE clock_timestamp() < t0 + make_interval(secs => seconds) LOOP
            INSERT INTO ids DEFAULT VALUES; COMMIT;
          END LOOP;
        END \$\$"
  as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of "$p")" -U postgres -D "$SCRATCH/$s" -R -X stream
  echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.conf" >/dev/null
  start_cluster "$s"
  for _ in $(seq 1 100); do
    [ "$(psql_on "$p" -At -c "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ] && break
    sleep 0.1
  done
  echo "$name: the standby is synchronous: $(psql_on "$p" -At -c "SELECT sync_state FROM pg_stat_replication")"
  psql_on "$p" -c "CALL load(2)"
  # Cut the standby off: it keeps what it has, and the primary's next commits never reach it.
  # (pg_basebackup -R wrote primary_conninfo into postgresql.auto.conf, which wins.)
  echo "primary_conninfo = ''" | as_pg_owner tee -a "$SCRATCH/$s/postgresql.auto.conf" >/dev/null
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$s" reload >/dev/null
  local gone=no
  for _ in $(seq 1 100); do
    [ "$(psql_on "$p" -At -c "SELECT count(*) FROM pg_stat_replication")" = 0 ] && gone=yes && break
    sleep 0.1
  done
  echo "$name: the standby is cut off: $gone"
  # Three more seconds of commits; with lease_sync on, the first new lease waits for the standby
  # (at most snowflake.max_mark_wait) and the call fails.
  psql_on "$p" -c "CALL load(3)" >/dev/null 2>"$SCRATCH/load_$name.err" || true
  # The error that ends it, exactly (HINT included), or that it ran its 3 s.
  if [ -s "$SCRATCH/load_$name.err" ]; then
    grep -E '^(ERROR|HINT):' "$SCRATCH/load_$name.err" | sed "s/^/$name: the load stopped: /"
  else
    echo "$name: the load ran its 3 s"
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
