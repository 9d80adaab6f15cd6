# majors: all (what it tests differs by major: the WAL, shared memory, the generated SQL)
# Ids issued after a clean restart, after a backend is killed (the postmaster reinitialises shared
# memory) and after the postmaster itself is killed, are above every id issued before, even with
# the clock set back meanwhile: the generator restarts above the durable high-water mark in
# $PGDATA/pg_snowflake.mark. Without the mark, each of these checks would fail.
export PGOPTIONS="-c client_min_messages=error"
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "snowflake.max_clock_wait = 5000"
start_cluster main
create_extension main
psql_on main -c "CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL)"

# phase N TITLE: insert 2,000 ids as phase N and check them against all ids before.
phase() {
  psql_on main -At -c "INSERT INTO ids SELECT snowflake_nextval(), $1 FROM generate_series(1, 2000)" >/dev/null
  psql_on main -At -c "SELECT '$2: ' || count(*) || ' ids, above all before: '
                         || coalesce(min(id) > (SELECT max(id) FROM ids WHERE phase < $1), true)
                       FROM ids WHERE phase = $1"
}

phase 0 "before"
mark_ms=$(mark_ms_of main)
psql_on main -At -c "SELECT 'the mark on disk covers every id: ' || (max(snowflake_timestamp(id)) <= to_timestamp($mark_ms / 1000.0)) FROM ids"
psql_on main -At -c "SELECT 'snowflake_stats() shows the mark: ' || (high_water_mark >= to_timestamp($mark_ms / 1000.0)) FROM snowflake_stats()"

# (a) A clean restart, the clock 500 ms back.
psql_on main -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '-500ms'"
# A clean stop brings the mark down from its lease to the last id's tick: the restart need not
# wait up to a second before its first id.
stop_cluster main
mark_ms=$(mark_ms_of main)
start_cluster main
psql_on main -At -c "SELECT 'a clean stop left the mark at the last id: '
  || (floor(extract(epoch FROM max(snowflake_timestamp(id))) * 1000)::bigint = $mark_ms) FROM ids"
phase 1 "after a clean restart, clock 500 ms back"

# (b) A backend killed with SIGKILL: the postmaster kills the others and reinitialises shared
# memory. The clock is 3 s back.
psql_on main -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '-3s'" -c "SELECT pg_reload_conf()" >/dev/null
psql_on main -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
sleeper=""
for _ in $(seq 1 50); do
  sleeper=$(psql_on main -At -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'")
  [ -n "$sleeper" ] && break
  sleep 0.1
done
[ -n "$sleeper" ] || { echo "no backend to kill"; exit 1; }
kill -9 "$sleeper"
wait || true
wait_ready main
grep -q "all server processes terminated; reinitializing" "$SCRATCH/main.log" && echo "server log: shared memory reinitialised"
phase 2 "after a backend crash, clock 3 s back"

# (c) The postmaster killed with SIGKILL, its children after it, as in a machine crash; the clock
# 1.5 s back when it starts again.
psql_on main -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '-1500ms'"
postmaster=$(head -n 1 "$SCRATCH/main/postmaster.pid")
kill -9 "$postmaster"
pkill -9 -P "$postmaster" || true
# Wait until it is dead; here it may linger as a zombie that nobody reaps, which a real crash
# leaves no trace of, so its lock files go too (PostgreSQL ignores lock files of a dead PID).
for _ in $(seq 1 50); do
  state=$(awk '/^State:/ {print $2}' "/proc/$postmaster/status" 2>/dev/null || true)
  [ -z "$state" ] || [ "$state" = Z ] && break
  sleep 0.1
done
while pgrep -P "$postmaster" >/dev/null; do sleep 0.1; done
rm -f "$SCRATCH/main/postmaster.pid" "$SCRATCH/.s.PGSQL.$(port_of main).lock"
start_cluster main
phase 3 "after a postmaster crash, clock 1.5 s back"

psql_on main -At -c "SELECT 'all ids distinct: ' || (count(*) = count(DISTINCT id)) FROM ids"

# Under steady load the lease worker renews the mark, so backends do not wait for the disk.
pgrep -P "$(head -n 1 "$SCRATCH/main/postmaster.pid")" -f "pg_snowflake lease" >/dev/null && echo "lease worker running"
psql_on main -At <<'SQL'
SELECT snowflake_stats_reset();
DO $$ BEGIN
    WHILE clock_timestamp() < now() + interval '3 seconds' LOOP PERFORM snowflake_nextval(); END LOOP;
END $$;
SELECT 'three seconds of ids: mark renewed ' || (mark_writes >= 3) || ', most renewals by the worker ' || (mark_waits * 2 < mark_writes)
FROM snowflake_stats();
SQL
