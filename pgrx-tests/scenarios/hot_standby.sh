# majors: all (what it tests differs by major: the WAL, shared memory, the generated SQL)
# A streaming standby carries the primary's settings, machine id included: it must refuse to
# generate (it would mint the primary's ids), while decoding still works there.
init_cluster primary "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster primary
create_extension primary
psql_on primary -c "CREATE TABLE t AS SELECT snowflake_nextval() AS id" \
  -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql"
as_pg_owner "$PG_BIN/pg_basebackup" -h "$SCRATCH" -p "$(port_of primary)" -U postgres -D "$SCRATCH/standby" -R -X stream
echo "port = $(next_port)" | as_pg_owner tee -a "$SCRATCH/standby/postgresql.conf" >/dev/null
start_cluster standby
pgrep -P "$(head -n 1 "$SCRATCH/standby/postmaster.pid")" -f "pg_snowflake lease" >/dev/null || echo "no lease worker on the standby"
psql_on standby -A -F ' | ' <<'SQL'
\pset footer off
SELECT pg_is_in_recovery() AS standby;
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT (snowflake_decode(id)).machine_id FROM t;
SQL
