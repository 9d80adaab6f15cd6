# majors: 15 18
# long: half a minute or more, queued first
# A refused change of layout stays refused, whatever happens before it is accepted (issue 31: with
# 10 ms ticks added, a clean stop once stamped the mark with the new layout, and the next start
# issued ids ten times smaller, unasked). For each field in turn (epoch, machine_bits,
# sequence_bits, time_unit): ids issued, the field changed, then three clean restarts and a crash,
# each start refusing (55000) and the mark file keeping the old layout; then the change accepted by
# snowflake.accept_layout_change naming the old layout: the new ids are above every old one, or
# the server log says why they cannot be. Then a standby: configured with another layout than its
# primary, it refuses once promoted, before and after its restarts; and a standby that kept the
# old layout while its primary changed (and accepted) refuses once it has replayed a lease of the
# new one, naming it.
export PGOPTIONS="-c client_min_messages=error"
old="41|10|12 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00"
conf() { printf '%s\n' "$@" | as_pg_owner tee -a "$SCRATCH/$c/postgresql.conf" >/dev/null; }
refusal() { psql_on "$1" -At -F ' ' -c "SELECT state, message LIKE 'the snowflake layout changed since the high-water mark was written%' FROM error_of('SELECT snowflake_nextval()')"; }
recorded() { python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["layout"]; print(l["epoch_ms"], l["time_unit_ms"], l["machine_bits"], l["sequence_bits"])' "$SCRATCH/$1/pg_snowflake.mark"; }

c=c0
for change in "snowflake.epoch = '2025-06-01 00:00:00+00'" "snowflake.machine_bits = 11" \
  "snowflake.sequence_bits = 11" "snowflake.time_unit = 10"; do
  c=c$((${c#c} + 1))
  echo "-- $change"
  init_cluster "$c" "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 3"
  start_cluster "$c"
  create_extension "$c"
  psql_on "$c" -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" \
    -c "CREATE TABLE ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 5000)"
  stop_cluster "$c"
  before=$(recorded "$c")
  conf "$change"
  for how in "start" "clean restart 1" "clean restart 2" "clean restart 3" "crash (immediate stop), start"; do
    [ "$how" = "crash (immediate stop), start" ] && as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$c" -m immediate -w stop >/dev/null
    [ "$how" = start ] || [ "$how" = "crash (immediate stop), start" ] || stop_cluster "$c"
    start_cluster "$c"
    echo "$how: refused: $(refusal "$c"); the mark file keeps the old layout: $([ "$(recorded "$c")" = "$before" ] && echo yes || echo NO)"
  done
  stop_cluster "$c"
  conf "snowflake.accept_layout_change = '$old'"
  start_cluster "$c"
  if psql_on "$c" -At -c "CREATE TABLE new_ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 100)" \
    -c "SELECT (SELECT min(id) FROM new_ids) > (SELECT max(id) FROM ids)" | grep -q t; then
    echo "accepted: the new ids are above every old one"
  elif grep -q "WARNING:  pg_snowflake: under the new layout the next ids start at" "$SCRATCH/$c.log"; then
    echo "accepted: the new ids are below the old ones, and the server log says so in a WARNING"
  else
    echo "accepted: the new ids are below the old ones, and NOTHING said so"
  fi
  stop_cluster "$c"
done

echo "-- a standby configured with another layout than its primary's (10 ms ticks)"
init_cluster p "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 3"
start_cluster p
create_extension p
psql_on p -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" -c "CREATE TABLE ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 1000)"
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of p)" -U postgres -D "$SCRATCH/s" -R -X stream
c=s conf "port = $(next_port)" "snowflake.machine_id = 4" "snowflake.time_unit = 10"
start_cluster s
psql_on p -c "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 1000)" -c "SELECT pg_sleep(1.2)" \
  -c "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 1000)" >/dev/null
caught_up p s
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/p" -m immediate -w stop >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/s" -w promote >/dev/null
echo "promoted: refused: $(refusal s)"
for n in 1 2; do
  restart_cluster s
  echo "clean restart $n: refused: $(refusal s)"
done

echo "-- a standby that kept the old layout while its primary changed to 10 ms ticks, accepted there"
init_cluster q "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 3"
start_cluster q
create_extension q
psql_on q -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" -c "CREATE TABLE ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 1000)"
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of q)" -U postgres -D "$SCRATCH/t" -R -X stream
c=t conf "port = $(next_port)" "snowflake.machine_id = 4"
start_cluster t
c=q conf "snowflake.time_unit = 10" "snowflake.accept_layout_change = '$old'"
restart_cluster q
psql_on q -c "INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 1000)" >/dev/null
caught_up q t
grep -q "WARNING:  pg_snowflake cannot generate ids: the snowflake layout changed since the high-water mark was written" "$SCRATCH/t.log" \
  && echo "the standby's log says, at the replayed lease, that it cannot generate ids"
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/q" -m immediate -w stop >/dev/null
as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/t" -w promote >/dev/null
echo "promoted: refused: $(refusal t)"
psql_on t -At -c "SELECT 'the refusal names the primary''s 10 ms ticks: ' || (message LIKE '%10 ms ticks%') FROM error_of('SELECT snowflake_nextval()')"
restart_cluster t
echo "clean restart: refused: $(refusal t)"
