# A copied data directory is recognised: the mark file says which machine id, layout and cluster
# (system identifier) wrote it. At start, a changed machine id is logged; a mark from another
# cluster is logged and still counts (ids start above it); a changed layout is refused (55000,
# naming both layouts) until snowflake.accept_layout_change names the old one, after which the
# mark records the new layout and the setting may go.
export PGOPTIONS="-c client_min_messages=error"
init_cluster a "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster a
create_extension a
psql_on a -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" \
  -c "CREATE TABLE ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 1000)"
stop_cluster a
grep -q '"machine_id": 7' "$SCRATCH/a/pg_snowflake.mark" && grep -q '"system_identifier": ' "$SCRATCH/a/pg_snowflake.mark" \
  && echo "the mark file records its writer: machine id 7, the layout and the system identifier"

# in_log CLUSTER TEXT: whether the cluster's log has the line (fixed text).
in_log() { if grep -qF -- "$2" "$SCRATCH/$1.log"; then echo "log of $1: $2"; else echo "MISSING in the log of $1: $2"; fi; }

echo "-- the same server with another machine id"
echo "snowflake.machine_id = 8" | as_pg_owner tee -a "$SCRATCH/a/postgresql.conf" >/dev/null
start_cluster a
in_log a "pg_snowflake: the machine id is 8; the high-water mark was written under machine id 7. Ids continue above the mark."
psql_on a -At -c "SELECT 'new ids above the old ones: ' || (snowflake_nextval() > (SELECT max(id) FROM ids))"
stop_cluster a

echo "-- the mark file in another cluster (as after pg_upgrade, or a file copied by hand)"
init_cluster b "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 9"
mark=$(mark_ms_of a)
# The mark moved 3 s ahead, so that "ids start above it" is seen: the first id waits for it.
sed "s/\"mark_unix_ms\": $mark,/\"mark_unix_ms\": $((mark + 3000)),/" "$SCRATCH/a/pg_snowflake.mark" \
  | as_pg_owner tee "$SCRATCH/b/pg_snowflake.mark" >/dev/null
echo "snowflake.max_clock_wait = 10s" | as_pg_owner tee -a "$SCRATCH/b/postgresql.conf" >/dev/null
start_cluster b
in_log b "pg_snowflake: the high-water mark file was written by another cluster (system identifier"
in_log b "The mark still counts: ids start above it. A copy that runs as a primary beside the original must have its own snowflake.machine_id."
create_extension b
psql_on b -At \
  -c "SELECT 'its first id carries a time above the copied mark: ' || (snowflake_timestamp(snowflake_nextval()) > to_timestamp($((mark + 3000)) / 1000.0))"
stop_cluster b

echo "-- a changed layout"
echo "snowflake.machine_bits = 9" | as_pg_owner tee -a "$SCRATCH/a/postgresql.conf" >/dev/null
start_cluster a
psql_on a -At -F ' | ' -c "SELECT * FROM error_of('SELECT snowflake_nextval()')"
in_log a "WARNING:  pg_snowflake cannot generate ids: the snowflake layout changed since the high-water mark was written"
stop_cluster a
echo "snowflake.accept_layout_change = '41|10|12 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00'" \
  | as_pg_owner tee -a "$SCRATCH/a/postgresql.conf" >/dev/null
start_cluster a
in_log a "accepted by snowflake.accept_layout_change"
psql_on a -At -c "SELECT 'accepted: ids come, with 9 machine bits: ' || ((snowflake_layout()).machine_bits = 9 AND snowflake_nextval() > 0)"
stop_cluster a
grep -q '"machine_bits": 9' "$SCRATCH/a/pg_snowflake.mark" && echo "the mark now records the new layout"
as_pg_owner sed -i '/accept_layout_change/d' "$SCRATCH/a/postgresql.conf"
start_cluster a
psql_on a -At -c "SELECT 'without the setting, the next start generates: ' || (snowflake_nextval() > 0)"
