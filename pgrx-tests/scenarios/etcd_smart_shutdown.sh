# majors: 15
# The machine id's worker stops for good only at the stop that ends the clients (issue 57, item 6),
# against a real etcd (one member, Debian's 3.4): a smart shutdown (pg_ctl stop -m smart) waits
# for a session still connected, and the workers run on for it; that session terminates the
# worker (pg_terminate_backend(), found in pg_stat_activity as the hints say: issue 57, item 3).
# The worker releases its id (the status says so, held false, and a refusal says it, looked up in
# the Errors page with its hint) and starts over at once, in place: the postmaster's lock file says
# "stopping", but the SIGTERM came from a backend, not the postmaster (and the postmaster starts no
# worker while it shuts down: an exit with code 1 would leave the session without ids until the
# postmaster woke for something else). It claims its id again and the session gets ids again;
# when the session ends, the shutdown completes and no exit of the worker is logged. The control
# (the test builds' snowflake.fault_sigterm_sender_ignored, the rule before the fix: "stopping" by
# itself ends a worker for good): the worker ends, and the session gets no id until it leaves.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
mask() {
  sed -E -e "s/${ETCD_CLIENT_PORTS[0]}/P1/g" -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+\+00/T/g'
}
# smart_stop_with_a_client NAME WAIT_S: a session of NAME waits until a smart shutdown begins,
# terminates the machine id's worker, and asks for ids for at most WAIT_S seconds; the shutdown
# completes when it leaves. Prints what the session saw.
smart_stop_with_a_client() {
  psql_on "$1" -v ON_ERROR_STOP=0 -v VERBOSITY=verbose -At -o "$SCRATCH/$1.session" >"$SCRATCH/$1.session.err" 2>&1 <<SQL &
SET application_name = 'the client';
SELECT pid AS worker FROM pg_stat_activity WHERE backend_type = 'pg_snowflake machine id' \gset
DO \$\$ BEGIN
  WHILE split_part(pg_read_file('postmaster.pid'), E'\n', 8) NOT LIKE 'stopping%'
        AND clock_timestamp() < now() + interval '30 s' LOOP
    PERFORM pg_sleep(0.05);
  END LOOP;
END \$\$;
SELECT 'the server is stopping: ' || (split_part(pg_read_file('postmaster.pid'), E'\n', 8) LIKE 'stopping%');
SELECT 'the worker terminated: ' || pg_terminate_backend(:worker);
DO \$\$ BEGIN
  WHILE coalesce((SELECT last_error FROM snowflake_machine_id_status()), '') NOT LIKE 'released %'
        AND clock_timestamp() < now() + interval '10 s' LOOP
    PERFORM pg_sleep(0.02);
  END LOOP;
END \$\$;
SELECT 'the status: held ' || held || ', ' || coalesce(last_error, 'no last error') FROM snowflake_machine_id_status();
SELECT snowflake_nextval();
CREATE TEMP TABLE got (id bigint);
DO \$\$ BEGIN
  WHILE NOT EXISTS (SELECT FROM got) AND clock_timestamp() < now() + interval '$2 s' LOOP
    BEGIN
      INSERT INTO got SELECT snowflake_nextval();
    EXCEPTION WHEN others THEN
      PERFORM pg_sleep(0.1);
    END;
  END LOOP;
END \$\$;
SELECT 'the worker holds an id again: ' || held FROM snowflake_machine_id_status();
SELECT CASE WHEN count(*) = 0 THEN 'no id within $2 s' ELSE 'ids again, under machine id ' || min(snowflake_machine_id(id)) END FROM got;
SQL
  local client=$!
  for _ in $(seq 1 100); do
    [ "$(psql_on "$1" -At -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'the client'")" = 1 ] && break
    sleep 0.1
  done
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" -m smart -w -t 60 stop >/dev/null
  wait "$client" || true
  mask <"$SCRATCH/$1.session"
  sed -E 's/^psql:<stdin>:[0-9]+: //' "$SCRATCH/$1.session.err" | grep -E "^(ERROR|HINT)" | mask >"$SCRATCH/$1.refusal" || true
}
worker_exits() { grep -cE "background worker \"pg_snowflake machine id\" \(PID [0-9]+\) exited with exit code $2" "$SCRATCH/$1.log" || true; }

init_leased s /pg_snowflake/smart
start_cluster s
create_extension s
echo "the server holds machine id $(held_id s)"
smart_stop_with_a_client s 10
sed 's/^ERROR:  [0-9A-Z]*: /ERROR:  /' "$SCRATCH/s.refusal"
python3 "$PROJECT_DIR/pgrx-tests/harness/errors_in_page.py" "the refusal" "$SCRATCH/s.refusal" 2>>"$REPORT"
echo "the shutdown completed once the session left: $([ -e "$SCRATCH/s/postmaster.pid" ] && echo no || echo yes)"
echo "the worker's exits logged: $(worker_exits s 1) with code 1, $(worker_exits s 0) with code 0"
grep -o 'pg_snowflake: the worker "pg_snowflake machine id" was terminated while a smart shutdown waits for its clients: .*' "$SCRATCH/s.log" | head -n 1

echo "-- the control: a SIGTERM ends the worker for good whenever the server is stopping (snowflake.fault_sigterm_sender_ignored)"
echo "snowflake.fault_sigterm_sender_ignored = on" | as_pg_owner tee -a "$SCRATCH/s/postgresql.conf" >/dev/null
start_cluster s
held_id s >/dev/null
smart_stop_with_a_client s 3 | grep -E "holds an id again|no id|ids again"
