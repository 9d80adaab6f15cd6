# majors: all (what it tests differs by major: the WAL, shared memory, the generated SQL)
# alone: whether the worker renews the lease before a backend needs it depends on the machine being otherwise quiet
# The lease worker comes back: terminated with pg_terminate_backend(), it is running again within
# its restart interval (1 s), and under load afterwards backends still rarely wait for the mark. It
# reloads its settings on SIGHUP: after the clock is moved an hour by ALTER SYSTEM and a reload,
# it renews the lease by the new clock (were it still on the old one, every renewal would fall to
# the backends, and mark_waits would equal mark_writes). Terminated, it exits with code 1 (the
# postmaster starts it again); at a clean stop with code 0, which the log does not report (issue
# 52: every clean stop logged 'exited with exit code 1'). Terminated while a smart shutdown waits
# for a client, it starts over in place and runs on until the stop that ends the client (issue 57:
# the sender of its SIGTERM read through the handler it wraps, on every major).
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
create_extension main
worker_pid() { psql_on main -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_snowflake lease'"; }
old=
for _ in $(seq 1 50); do
  old=$(worker_pid)
  [ -n "$old" ] && break
  sleep 0.1
done
[ -n "$old" ] && echo "the lease worker is running"
psql_on main -At -c "SELECT 'terminated: ' || pg_terminate_backend($old)"
new=
for i in $(seq 1 50); do
  new=$(worker_pid)
  [ -n "$new" ] && [ "$new" != "$old" ] && break
  sleep 0.1
done
[ -n "$new" ] && [ "$new" != "$old" ] && echo "the lease worker is back"
worker_exits() { grep -cE 'background worker "pg_snowflake[^"]*" \(PID [0-9]+\) exited with exit code' "$SCRATCH/main.log" || true; }
echo "the log says it exited with exit code 1: $(grep -cE "background worker \"pg_snowflake lease\" \(PID $old\) exited with exit code 1" "$SCRATCH/main.log")"
echo "back after about $((i / 10)).$((i % 10)) s" >>"$REPORT"

# three_seconds_of_ids TITLE: ids for 3 s from one session; were most renewals by the worker?
three_seconds_of_ids() {
  psql_on main -At <<SQL
DO \$\$ BEGIN PERFORM snowflake_stats_reset(); END \$\$;
DO \$\$ BEGIN
    WHILE clock_timestamp() < now() + interval '3 seconds' LOOP PERFORM snowflake_nextval(); END LOOP;
END \$\$;
SELECT '$1: mark renewed ' || (mark_writes >= 3) || ', most renewals by the worker ' || (mark_waits * 2 < mark_writes)
FROM snowflake_stats();
SQL
}
three_seconds_of_ids "after the restart"
psql_on main -At -c "SELECT mark_writes || ' mark writes, ' || mark_waits || ' by backends' FROM snowflake_stats()" >>"$REPORT"

psql_on main -c "ALTER SYSTEM SET snowflake.fault_clock_offset = '1h'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
[ "$(worker_pid)" = "$new" ] && echo "the worker took the reload without restarting"
three_seconds_of_ids "after a reload that moved the clock an hour"
psql_on main -At -c "SELECT mark_writes || ' mark writes, ' || mark_waits || ' by backends' FROM snowflake_stats()" >>"$REPORT"


before=$(worker_exits)
stop_cluster main
echo "exits of the extension's workers logged by a clean stop: $(($(worker_exits) - before))"

# Terminated while a smart shutdown waits for a client (issue 57, item 6): the SIGTERM came from a
# backend, not the postmaster, so the worker starts over in place (the postmaster starts no worker
# while it shuts down), and runs until the stop that ends the client.
start_cluster main
psql_on main -At -o "$SCRATCH/smart.out" <<'SQL' &
SET application_name = 'the client';
DO $$ BEGIN
  WHILE split_part(pg_read_file('postmaster.pid'), E'\n', 8) NOT LIKE 'stopping%'
        AND clock_timestamp() < now() + interval '30 s' LOOP
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT 'terminated while a smart shutdown waits: ' || pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_snowflake lease';
SELECT pg_sleep(0.5);
SELECT 'the lease worker runs on: ' || (count(*) = 1) FROM pg_stat_activity WHERE backend_type = 'pg_snowflake lease';
SQL
client=$!
for _ in $(seq 1 100); do
  [ "$(psql_on main -At -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'the client'")" = 1 ] && break
  sleep 0.1
done
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/main" -m smart -w -t 60 stop >/dev/null
wait "$client" || true
grep -v '^$' "$SCRATCH/smart.out"
grep -o 'pg_snowflake: the worker "pg_snowflake lease" was terminated while a smart shutdown waits for its clients: .*' "$SCRATCH/main.log" | head -n 1
