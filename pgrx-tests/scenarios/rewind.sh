# majors: 15 18 (14 logs no lease in the WAL; 15 to 18 run the same WAL code, on its first and last major here)
# long: half a minute or more, queued first
# pg_rewind without an HA engine (what Patroni does in the patroni scenario, by hand): a primary p
# (machine id 7) and its streaming standby s made with pg_basebackup -R; load from four
# connections on p; p crashes (-m immediate); s is promoted with its clock 3 s behind and issues
# ids. pg_rewind (--source-server, -R) first finishes p's crash recovery in single-user mode, then
# rewinds p against s. What p's mark file (pg_snowflake.mark) says: before, p's own last lease;
# after pg_rewind, s's file (pg_rewind copies every file that is not a relation's); after p is
# started as s's standby and has replayed s's WAL, s's latest lease. Promoted in turn (s stopped,
# p's clock 6 s behind), p issues ids above every id either server issued.
# And what happens if the rewound p is (wrongly) started as a primary, while s runs: a copy of it
# taken right after pg_rewind, started without standby.signal, issues ids above every id issued
# before the rewind, but from then on two primaries share machine id 7, and ids issued by both at
# the same time repeat. Given its own machine id (the README's rule for clones), none repeats.
# (PostgreSQL 14 logs no lease in the WAL: see the failover scenario.)
export PGOPTIONS="-c client_min_messages=error"
echo 'INSERT INTO ids(conn) VALUES (:client_id);' >"$SCRATCH/insert.sql"

# (pg_rewind needs wal_log_hints, or data checksums; and p's WAL back to the last checkpoint
# before the two diverged: wal_keep_size keeps it past the checkpoint of p's crash recovery.)
init_cluster p "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "wal_log_hints = on" "wal_keep_size = '512MB'"
start_cluster p
create_extension p
psql_on p \
  -c "CREATE TABLE ids (id bigint NOT NULL DEFAULT snowflake_nextval(), conn int NOT NULL)" \
  -c "CREATE TABLE fork (id bigint NOT NULL)" \
  -c "CREATE PROCEDURE load(seconds float8) LANGUAGE plpgsql AS \$\$
      DECLARE t0 timestamptz := clock_timestamp();
      BEGIN
        WHILE clock_timestamp() < t0 + make_interval(secs => seconds) LOOP
          INSERT INTO fork SELECT snowflake_nextval() FROM generate_series(1, 1000); COMMIT;
        END LOOP;
      END \$\$"
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of p)" -U postgres -D "$SCRATCH/s" -R -X stream
echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/s/postgresql.conf" >/dev/null
start_cluster s
"$PG_BIN/pgbench" -n -h "$SCRATCH" -p "$(port_of p)" -U postgres -c 4 -j 2 -T 2 -f "$SCRATCH/insert.sql" postgres \
  >"$SCRATCH/pgbench.log" 2>&1 || { cat "$SCRATCH/pgbench.log"; exit 1; }
lsn=$(psql_on p -At -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 100); do
  [ "$(psql_on s -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
  sleep 0.1
done
p_max=$(psql_on p -At -c "SELECT max(id) FROM ids")
echo "p issued over 1,000 ids: $(psql_on p -At -c "SELECT count(*) > 1000 FROM ids")"
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/p" -m immediate -w stop >/dev/null
echo "p crashed (-m immediate)"

echo "snowflake.fault_clock_offset = '-3s'" | as_pg_owner tee -a "$SCRATCH/s/postgresql.conf" >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/s" reload >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/s" -w promote >/dev/null
result=$(ids_after_failover s)
echo "s promoted, its clock 3 s behind; it issued ids: ${result%% *}"
echo "s: calls refused while its clock was behind: ${result#* }" >>"$REPORT"
psql_on s -At -c "SELECT 's: its ids above every id p issued: ' || (min(id) > $p_max) FROM after"
s_max=$(psql_on s -At -c "SELECT max(id) FROM after")
# (The id's time, in ms since 1970, as the mark file counts it: the default layout, from 2025.)

mark_before=$(mark_ms_of p)
echo "p's mark before pg_rewind, its own last lease: above every id p issued: $([ "$mark_before" -ge "$(id_ms "$p_max")" ] && echo true || echo false); above s's ids: $([ "$mark_before" -ge "$(id_ms "$s_max")" ] && echo true || echo false)"
# (s idle for over a lease, so that its lease worker writes no new mark meanwhile.)
sleep 1.5
s_mark=$(mark_ms_of s)

# pg_rewind: single-user crash recovery of p first, then the rewind against the running s (whose
# control file names its new timeline once it has made a checkpoint: pg_rewind's documentation).
psql_on s -c "CHECKPOINT"
server_env "$PG_BIN/pg_rewind" -D "$SCRATCH/p" -R --source-server="host=$SCRATCH port=$(port_of s) user=postgres dbname=postgres" \
  >"$SCRATCH/pg_rewind.log" 2>&1 || { cat "$SCRATCH/pg_rewind.log"; exit 1; }
grep -q "for target server to complete crash recovery" "$SCRATCH/pg_rewind.log" \
  && echo "pg_rewind: ran p's crash recovery in single-user mode first" || { cat "$SCRATCH/pg_rewind.log"; exit 1; }
grep -q "servers diverged at WAL location" "$SCRATCH/pg_rewind.log" && grep -q "Done!" "$SCRATCH/pg_rewind.log" \
  && echo "pg_rewind: rewound p against s" || { cat "$SCRATCH/pg_rewind.log"; exit 1; }
mark_after=$(mark_ms_of p)
echo "p's mark after pg_rewind: s's file, copied: $([ "$mark_after" = "$s_mark" ] && [ "$(mark_ms_of s)" = "$s_mark" ] && echo true || echo false); above every id s issued: $([ "$mark_after" -ge "$(id_ms "$s_max")" ] && echo true || echo false)"

# A copy of the rewound p, started (wrongly) as a primary beside s, its clock 9 s behind.
as_pg_owner cp -a "$SCRATCH/p" "$SCRATCH/fork"
as_pg_owner rm -f "$SCRATCH/fork/standby.signal"
printf '%s\n' "port = $(next_port)" "snowflake.fault_clock_offset = '-9s'" | as_pg_owner tee -a "$SCRATCH/fork/postgresql.conf" >/dev/null
s_max_at_rewind=$s_max

# The rewound copy started as a primary beside s: a fork with the same machine id.
start_cluster fork
grep -h "pg_snowflake: .* ended" "$SCRATCH/fork.log" | sed 's/.*LOG:  /fork: /' >>"$REPORT" || true
echo "fork: the rewound copy started without standby.signal is a primary: $(psql_on fork -At -c "SELECT NOT pg_is_in_recovery()")"
psql_on fork -c "DROP TABLE after"
result=$(ids_after_failover fork)
echo "fork: its clock 9 s behind, it issued ids: ${result%% *}"
echo "fork: calls refused while its clock was behind: ${result#* }" >>"$REPORT"
psql_on fork -At -c "SELECT 'fork: its ids above every id issued before the rewind (the mark pg_rewind copied, and the leases it replayed): ' || (min(id) > $s_max_at_rewind) FROM after"
# Its clock as s's, for what follows.
echo "snowflake.fault_clock_offset = '-3s'" | as_pg_owner tee -a "$SCRATCH/fork/postgresql.conf" >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/fork" reload >/dev/null
psql_on fork -c "TRUNCATE fork"
psql_on s -c "TRUNCATE fork"
# fork_run: both primaries issue ids for 1.5 s at the same time; prints how many ids both issued.
fork_run() {
  psql_on fork -c "CALL load(1.5)" &
  local bg=$!
  psql_on s -c "CALL load(1.5)"
  wait "$bg"
  psql_on fork -c "\\copy fork TO '$SCRATCH/fork.ids'"
  psql_on s -c "CREATE TEMP TABLE other (id bigint)" -c "\\copy other FROM '$SCRATCH/fork.ids'" -At \
    -c "SELECT count(*) FROM fork JOIN other USING (id)"
}
echo "fork: with machine id 7, like s: ids both issued: $( [ "$(fork_run)" -gt 0 ] && echo some || echo none)"
psql_on fork -c "TRUNCATE fork"
psql_on s -c "TRUNCATE fork"
echo "snowflake.machine_id = 8" | as_pg_owner tee -a "$SCRATCH/fork/postgresql.conf" >/dev/null
restart_cluster fork
echo "fork: given machine id 8: ids both issued: $( [ "$(fork_run)" -gt 0 ] && echo some || echo none)"
stop_cluster fork

# p as s's standby (pg_rewind -R wrote standby.signal and primary_conninfo).
echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/p/postgresql.conf" >/dev/null
start_cluster p
echo "p started as s's standby: $(psql_on p -At -c "SELECT pg_is_in_recovery()")"
# More ids on s, over several leases, and p replays them.
psql_on s -c "CALL load(1.5)"
sleep 1.5
lsn=$(psql_on s -At -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 100); do
  [ "$(psql_on p -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
  sleep 0.1
done
s_max=$(psql_on s -At -c "SELECT max(id) FROM fork")
echo "p's mark after replaying s's WAL: s's latest lease: $([ "$(mark_ms_of p)" = "$(mark_ms_of s)" ] && echo true || echo false); above every id s issued: $([ "$(mark_ms_of p)" -ge "$(id_ms "$s_max")" ] && echo true || echo false)"

# p promoted in turn, s gone, p's clock 6 s behind (3 s behind s's): above every id.
s_max=$(psql_on s -At -c "SELECT greatest((SELECT max(id) FROM after), (SELECT max(id) FROM ids), (SELECT max(id) FROM fork))")
lsn=$(psql_on s -At -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 100); do
  [ "$(psql_on p -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
  sleep 0.1
done
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/s" -m immediate -w stop >/dev/null
echo "snowflake.fault_clock_offset = '-6s'" | as_pg_owner tee -a "$SCRATCH/p/postgresql.conf" >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/p" reload >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/p" -w promote >/dev/null
psql_on p -c "DROP TABLE after"
result=$(ids_after_failover p)
echo "p promoted, its clock 6 s behind; it issued ids: ${result%% *}"
echo "p: calls refused while its clock was behind: ${result#* }" >>"$REPORT"
psql_on p -At -c "SELECT 'p: its ids above every id p and s issued before: ' || (min(id) > greatest($s_max, $p_max)) FROM after"
