# majors: 15 18 (on 18 the steps in PostgreSQL's own calls alone: the WAL insert and flush, the
# synchronous standbys' wait; the others are the extension's own code, the same on every major)
# alone: it times faults (a writer paused, terminated, stopped), with nothing beside it
# Nothing one process does can stop id generation for the others. A session (the writer) is made
# to pause at each step of a mark write (the test builds' snowflake.fault_hold_at), holding the
# writer's flag; meanwhile a second session gives up after snowflake.max_mark_wait with 55P03,
# naming the writer's pid and what it is doing (never a silent hang). Then the writer is
# (a) terminated (FATAL: no unwinding; the exit callback releases the flag), (b) cancelled (ERROR:
# the drop guard releases it), (c) killed with SIGKILL (a crash restart re-initialises shared
# memory), (d) stopped with SIGSTOP for longer than the bound, then continued (its write then
# took longer than its lease and than max_mark_wait: it ends with an error, and lets go of the
# flag). After each fault, ids come again within seconds, and every id kept, in insert order,
# is above every id before it. Negative control: with the release and the takeover switched off
# (snowflake.fault_keep_writer_flag), the terminate case never gets ids again.
export PGOPTIONS="-c client_min_messages=error"
init_cluster faults "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
  "snowflake.max_mark_wait = 500" "snowflake.max_clock_wait = 5000"
start_cluster faults
create_extension faults
psql_on faults \
  -c "CREATE TABLE ids (n bigserial PRIMARY KEY, id bigint NOT NULL UNIQUE, case_no int NOT NULL)"

# record CASE_NO: 200 ids from one session, kept in insert order.
record() {
  psql_on faults -c "SET statement_timeout = '5s'" \
    -c "INSERT INTO ids (id, case_no) SELECT snowflake_nextval(), $1 FROM generate_series(1, 200)" 2>"$SCRATCH/record.err"
}

# second_session_error: what a second session gets while the writer holds the flag.
second_session_error() {
  { psql_on faults -v VERBOSITY=verbose -c "SET statement_timeout = '5s'" -c "SELECT snowflake_nextval()" 2>&1 >/dev/null || true; } \
    | sed -n 's/^ERROR:  //p' | head -n 1
}

# back_again CASE_NO SECONDS: ids come again within SECONDS (a try every 0.2 s); "yes" or "no".
back_again() {
  local tries=$(( $2 * 5 )) i
  for i in $(seq 1 "$tries"); do
    record "$1" && { echo yes; return 0; }
    sed -n 's/^ERROR:  //p' "$SCRATCH/record.err" | head -n 1 >>"$SCRATCH/while_faulted"
    sleep 0.2
  done
  echo no
}

# reloaded SETTING VALUE: until a new session has SETTING = VALUE (pg_reload_conf() only signals
# the postmaster: a session started before it has read the file again still has the old value).
reloaded() {
  local _
  for _ in $(seq 1 200); do
    [ "$(psql_on faults -At -c "SHOW $1")" = "$2" ] && return 0
    sleep 0.05
  done
  echo "snowflake's server did not take $1 = $2" >&2
  exit 1
}

case_no=0
# fault_case STEP DESCRIPTION FAULT
fault_case() {
  local step=$1 what=$2 fault=$3 hold=20000 wpid="" seen="" i outcome back
  case_no=$((case_no + 1))
  record "$case_no" || { cat "$SCRATCH/record.err"; exit 1; }
  if [ "$step" = standby_wait ]; then
    # The step is reached only with lease_sync and a synchronous standby to wait for (none answers).
    psql_on faults -c "ALTER SYSTEM SET snowflake.lease_sync = on" -c "ALTER SYSTEM SET synchronous_standby_names = 'nosuch'" \
      -c "SELECT pg_reload_conf()" >/dev/null
    reloaded synchronous_standby_names nosuch
  fi
  # Stopped, the writer is stopped as soon as it is in its pause (before the second session's
  # checks, which take a second or two on a loaded machine), and past its pause when continued:
  # its write then took longer than its lease and than max_mark_wait.
  [ "$fault" = stop ] && hold=4000
  # Until the writer has taken the flag and paused at STEP: a second session started sooner could
  # take the flag itself, and the writer then find a fresh lease.
  local writer_psql
  start_paused_writer faults "$step" "$hold" "SELECT snowflake_nextval()"
  [ "$fault" = stop ] && kill -STOP "$wpid"
  # The writer holds the flag (it paused at STEP): a second session gives up, naming it.
  for _ in $(seq 1 10); do
    seen=$(second_session_error)
    [[ $seen == *"process $wpid "* ]] && break
    sleep 0.1
  done
  if [[ $seen == "55P03: waited 500 ms (snowflake.max_mark_wait) for process $wpid to write the snowflake high-water mark; it is $what" ]]; then
    seen="55P03 naming the writer and '$what'"
  else
    seen="unexpected: $seen"
  fi
  if [ "$case_no" = 1 ]; then
    # A cancel ends the wait at once (statement_timeout shorter than snowflake.max_mark_wait).
    echo "a session waiting for the writer, its statement_timeout 100 ms: $( { psql_on faults -v VERBOSITY=verbose \
      -c "SET statement_timeout = '100ms'" -c "SELECT snowflake_nextval()" 2>&1 >/dev/null || true; } | sed -n 's/^ERROR:  //p')"
  fi
  case $fault in
    terminate) psql_on faults -c "SELECT pg_terminate_backend($wpid)" >/dev/null ;;
    cancel) psql_on faults -c "SELECT pg_cancel_backend($wpid)" >/dev/null ;;
    kill) kill -KILL "$wpid" ;;
    stop)
      sleep 2
      # Stopped for longer than the bound: still the clear error, never a hang.
      [[ $(second_session_error) == "55P03: waited 500 ms"*"process $wpid "* ]] || seen="$seen; while stopped: unexpected"
      kill -CONT "$wpid"
      ;;
  esac
  for _ in $(seq 1 100); do
    kill -0 "$writer_psql" 2>/dev/null || break
    sleep 0.05
  done
  wait "$writer_psql" 2>/dev/null || true
  [ "$fault" = kill ] && wait_ready faults
  outcome=$(sed -n 's/^\(ERROR\|FATAL\):  //p' "$SCRATCH/writer.err" | head -n 1)
  if [ -z "$outcome" ] && grep -q "closed the connection unexpectedly" "$SCRATCH/writer.err"; then
    outcome="its connection was lost"
  elif [ -z "$outcome" ]; then
    outcome="it issued an id"
  fi
  if [ "$step" = standby_wait ]; then
    psql_on faults -c "ALTER SYSTEM RESET snowflake.lease_sync" -c "ALTER SYSTEM RESET synchronous_standby_names" \
      -c "SELECT pg_reload_conf()" >/dev/null
    reloaded synchronous_standby_names ""
  fi
  case_no=$((case_no + 1))
  back=$(back_again "$case_no" 10)
  echo "$step, $fault: the second session got $seen; the writer: $outcome; ids again within 10 s: $back"
}

steps="flag_taken before_wal_insert before_wal_flush standby_wait before_file before_rename before_publish"
[ "$PG_MAJOR" = 15 ] || steps="before_wal_insert before_wal_flush standby_wait"
for step in $steps; do
  case $step in
    flag_taken) what="starting a mark write" ;;
    before_wal_insert) what="inserting the lease's WAL record" ;;
    before_wal_flush) what="flushing the WAL" ;;
    standby_wait) what="waiting for the synchronous standbys to confirm the lease (snowflake.lease_sync)" ;;
    before_file) what="writing and syncing the mark file" ;;
    before_rename) what="renaming the mark file into place" ;;
    before_publish) what="publishing the new mark" ;;
  esac
  for fault in terminate cancel kill stop; do
    fault_case "$step" "$what" "$fault"
  done
done
echo "the server log shows a crash restart re-initialising shared memory: $(grep -c 'all server processes terminated; reinitializing' "$SCRATCH/faults.log")"

psql_on faults -At -c "SELECT 'ids kept: ' || count(*) || ', each once: ' || (count(*) = count(DISTINCT id))
                       || ', at or below an id issued before it: '
                       || (SELECT count(*) FROM (SELECT id, max(id) OVER (ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM ids) x WHERE id <= before)
                     FROM ids"
psql_on faults -At -c "SELECT 'snowflake_stats() counts the waits for another writer: ' || (writer_waits > 0)
                       || ', and those that gave up: ' || (mark_wait_timeouts > 0)
                       || ', and the synchronous standby waits: ' || (standby_waits > 0) || ', ' || (standby_wait_timeouts > 0)
                     FROM snowflake_stats()"

# Negative control: the flag outlives its holder (no release at exit, no takeover).
psql_on faults -c "ALTER SYSTEM SET snowflake.fault_keep_writer_flag = on" -c "SELECT pg_reload_conf()" >/dev/null
reloaded snowflake.fault_keep_writer_flag on
: >"$SCRATCH/while_faulted"
fault_case before_wal_flush "flushing the WAL" terminate 2>&1 | sed 's/ids again within 10 s/(negative control: the flag outlives its holder) ids again within 10 s/'
echo "negative control: every call meanwhile: $(sed "s/process [0-9]*/process N/" "$SCRATCH/while_faulted" | sort -u)"
psql_on faults -c "ALTER SYSTEM RESET snowflake.fault_keep_writer_flag" -c "SELECT pg_reload_conf()" >/dev/null
reloaded snowflake.fault_keep_writer_flag off
case_no=$((case_no + 1))
echo "with the release switched on again, the dead writer's flag is taken over: ids again within 10 s: $(back_again "$case_no" 10)"
