# majors: 15 18
# The lease worker waiting for synchronous standbys that never confirm (snowflake.lease_sync) ends
# on SIGTERM at once: a fast shutdown completes within pg_ctl's 30 s, though snowflake.max_mark_wait
# is 300 s. (pgrx's SIGTERM handler does not set ProcDiePending: the interrupt check of the wait did
# not end the worker, and a shutdown waited out max_mark_wait.) 15 and later: 14 logs no lease in
# the WAL, so there is nothing to confirm.
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
create_extension main
# Ids from a session in the background, snowflake.lease_sync on with no synchronous standby
# configured (nothing to confirm); then one that never connects is named: the worker's next
# renewal (it renews while 600 ms of the lease are left, before any backend needs a new mark)
# waits for it, and the session waits for the worker.
psql_on main -c "ALTER SYSTEM SET snowflake.lease_sync = on" -c "ALTER SYSTEM SET snowflake.max_mark_wait = '300s'" \
  -c "SELECT pg_reload_conf()" >/dev/null
psql_on main -c "DO \$\$ BEGIN WHILE clock_timestamp() < now() + interval '60 seconds' LOOP PERFORM snowflake_nextval(); END LOOP; END \$\$" >/dev/null 2>&1 &
sleep 1.5
# (The session's long statement keeps the settings it began with; the worker reloads them.)
psql_on main -c "ALTER SYSTEM SET synchronous_standby_names = 'nosuch'" -c "SELECT pg_reload_conf()" \
  -c "SELECT snowflake_stats_reset()" >/dev/null
for _ in $(seq 1 100); do
  [ "$(psql_on main -At -c "SELECT writer_waits > 0 FROM snowflake_stats()")" = t ] && break
  sleep 0.1
done
echo "the session waits for the worker's mark write: $(psql_on main -At -c "SELECT writer_waits > 0 FROM snowflake_stats()")"
if as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/main" -m fast -w -t 30 stop >/dev/null 2>&1; then
  echo "a fast shutdown completed: the worker ended on SIGTERM in its wait"
else
  echo "a fast shutdown did NOT complete within 30 s: the worker went on waiting"
fi
grep -q "FATAL:  terminating the pg_snowflake lease worker due to administrator command" "$SCRATCH/main.log" \
  && echo "log: FATAL:  terminating the pg_snowflake lease worker due to administrator command"
wait
