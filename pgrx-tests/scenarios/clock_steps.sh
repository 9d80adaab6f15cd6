# The clock stepped back by 1 ms, 1 s and 1 h, first within a running server, then across a
# restart, through the test builds' snowflake.fault_clock_offset. Small steps: ids keep increasing
# (issued on the last timestamp, then after a wait for the clock). An hour: a clear error after
# snowflake.max_clock_wait (3 s here), and ids resume once the clock is right.
# The WARNINGs about the clock go to the server log (checked below), not into this output.
export PGOPTIONS="-c client_min_messages=error"
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "snowflake.max_clock_wait = 3000"
start_cluster main
create_extension main
psql_on main -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" \
  -c "CREATE TABLE ids (id bigint PRIMARY KEY, step int NOT NULL)" \
  -c "INSERT INTO ids SELECT snowflake_nextval(), 0 FROM generate_series(1, 1000)"

# step N OFFSET: in one session with the clock shifted by OFFSET, insert 5,000 ids as step N, and
# say whether they all lie above every id before them.
step() {
  psql_on main -At -F ' | ' <<SQL
SET snowflake.fault_clock_offset = '$2';
SELECT 'step $1, clock $2' AS step, state,
       regexp_replace(regexp_replace(message, '\d+ ms behind', 'N ms behind'), 'waited \d+ ms', 'waited N ms') AS message
FROM error_of('INSERT INTO ids SELECT snowflake_nextval(), $1 FROM generate_series(1, 5000)');
SELECT 'step $1 ids above all before: ' || coalesce((SELECT min(id) FROM ids WHERE step = $1) > (SELECT max(id) FROM ids WHERE step < $1), true);
SQL
}

echo "-- without a restart"
step 1 -1ms
step 2 -1s
step 3 -1h
# The wait stays cancellable: statement_timeout ends it long before snowflake.max_clock_wait.
{ psql_on main -At -c "SET snowflake.fault_clock_offset = '-1h'" -c "SET statement_timeout = '300ms'" \
    -c "SELECT count(snowflake_nextval()) FROM generate_series(1, 10000)" 2>&1 || true; } \
  | sed -n 's/^.*ERROR: *\(.*\)$/a wait cut short: \1/p'
psql_on main -At -c "SELECT 'rollbacks counted: ' || (clock_rollbacks >= 2) || ', largest about an hour: ' || (largest_rollback_ms > 3500000) FROM snowflake_stats()"
grep -q "the system clock went backwards by" "$SCRATCH/main.log" && echo "server log: WARNING about the clock going backwards"

echo "-- across a restart"
restart_with() {
  psql_on main -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '$1'"
  restart_cluster main
}
restart_with -1ms
step 4 -1ms
restart_with -1s
step 5 -1s
restart_with -1h
step 6 -1h
psql_on main -c "ALTER SYSTEM RESET snowflake.fault_clock_offset"
restart_cluster main
step 7 0
psql_on main -At -c "SELECT 'all ids distinct: ' || (count(*) = count(DISTINCT id)) || ', steps with ids: ' || count(DISTINCT step) FROM ids"
