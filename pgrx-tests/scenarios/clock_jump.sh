# Clock faults that outlive a restart. (1) The guard: with snowflake.max_clock_jump = 10s, a wall
# clock stepped an hour forward while the server runs leases nothing that far ahead (58000), and
# snowflake_stats() shows the mark behind the clock; once the clock is right, ids resume. (2) The
# way out when the clock was wrong while ids were issued (no guard: they were leased an hour
# ahead): the clock error's hint names it, and a new machine id with the mark removed gives ids
# that collide with none of the old ones.
export PGOPTIONS="-c client_min_messages=error"
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "snowflake.max_clock_jump = 10s"
start_cluster main
create_extension main
psql_on main -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" \
  -c "CREATE TABLE ids (id bigint PRIMARY KEY, step int NOT NULL)" \
  -c "INSERT INTO ids SELECT snowflake_nextval(), 0 FROM generate_series(1, 1000)"

# set_clock OFFSET: every process of the server reads the clock shifted by OFFSET.
set_clock() {
  psql_on main -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
  sleep 0.5
}

# step N: insert 5,000 ids as step N (more than one tick's 4,096, so that a clock behind the last
# tick is met); print the error if any, and whether they lie above all before.
step() {
  psql_on main -At -F ' | ' <<SQL
SELECT 'step $1: ' || state, regexp_replace(message, '\d+ ms', 'N ms', 'g'), hint
FROM error_of('INSERT INTO ids SELECT snowflake_nextval(), $1 FROM generate_series(1, 5000)');
SELECT 'step $1 ids above all before: ' || coalesce((SELECT min(id) FROM ids WHERE step = $1) > (SELECT max(id) FROM ids WHERE step < $1), true);
SQL
}

echo "-- the guard: the clock stepped an hour forward while the server runs"
set_clock 1h
step 1
psql_on main -At -c "SELECT 'the mark is behind the clock: ' || (mark_ahead_ms < -3000000) FROM snowflake_stats()"
set_clock 0
step 2

echo "-- no guard: ids leased an hour ahead, then the clock is corrected"
psql_on main -c "ALTER SYSTEM SET snowflake.max_clock_jump = 0" >/dev/null
set_clock 1h
step 3
psql_on main -At -c "SELECT 'the mark is ahead of the clock by up to a lease: ' || (mark_ahead_ms BETWEEN 0 AND 1100) FROM snowflake_stats()"
set_clock 0
step 4

echo "-- the way out: a new machine id, then the mark may go"
psql_on main -c "ALTER SYSTEM SET snowflake.machine_id = 8" >/dev/null
stop_cluster main
rm "$SCRATCH/main/pg_snowflake.mark"
start_cluster main
step 5
psql_on main -At <<'SQL'
SELECT 'step 5 ids: ' || count(*) || ', all of machine id 8: ' || bool_and(snowflake_machine_id(id) = 8) FROM ids WHERE step = 5;
SELECT 'step 5 ids equal to an earlier id: ' || count(*) FROM ids a JOIN ids b USING (id) WHERE a.step = 5 AND b.step < 5;
SELECT 'the ids of step 3 carry times an hour ahead: ' || (min(snowflake_timestamp(id)) > now() + interval '50 minutes') FROM ids WHERE step = 3;
SQL
