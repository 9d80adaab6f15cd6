# pg_upgrade from PostgreSQL $OLD_MAJOR to $PG_MAJOR (printed as <old> and <new>), with the tests'
# installations, both with the extension installed and preloaded, the same machine id (it is the
# same server, upgraded). The extension and its tables come across: the catalog of a fresh install,
# the rows unchanged.
#
# pg_upgrade does not copy $PGDATA/pg_snowflake.mark (the high-water mark): it moves relation
# files, not the files a library keeps in the data directory. The documented step is to copy it
# from the old data directory to the new one before the new server starts. With it, a new server
# whose clock reads an hour behind the last id issued before the upgrade (the test builds'
# snowflake.fault_clock_offset) refuses, after snowflake.max_clock_wait, instead of minting ids
# below the old ones; 3 s behind, it waits for its clock and continues above every old id. The
# negative control: without the copied mark, the server trusts its clock and mints ids below the
# old ones, which the same check reports.
old_major=$OLD_MAJOR
new_major=$PG_MAJOR
new_bin=$PG_BIN
old_config=$(pg_config_of "$old_major")
old_bin=$("$old_config" --bindir)
version=$(cargo_version)
n() { sed -e "s/\b$old_major\b/<old>/g; s/\b$new_major\b/<new>/g" -e "s/${version//./\\.}/<version>/g"; }
on_old() { local PG_BIN=$old_bin PG_CONFIG=$old_config; "$@"; }
conf=("shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "snowflake.max_clock_wait = 5000")
# PostgreSQL 18's initdb turns data checksums on; pg_upgrade needs both clusters alike.
new_initdb_args=
[ "$new_major" -ge 18 ] && [ "$old_major" -lt 18 ] && new_initdb_args=--no-data-checksums

on_old init_cluster old "${conf[@]}"
on_old start_cluster old
on_old psql_on old -c "CREATE DATABASE app"
on_old create_extension old app
on_old psql_on old -d app -At <<'SQL'
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL);
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), order_id bigint REFERENCES orders);
INSERT INTO orders(item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
INSERT INTO events(order_id) SELECT id FROM orders;
SQL
rows() { psql_on "$1" -d app -At -c "SELECT count(*) || ' orders ' || md5(string_agg(id || item, ',' ORDER BY id)) FROM orders" -c "SELECT count(*) || ' events ' || md5(string_agg(id::text, ',' ORDER BY id)) FROM events"; }
on_old rows old >"$SCRATCH/old.rows"
old_max=$(on_old psql_on old -d app -At -c "SELECT greatest((SELECT max(id) FROM orders), (SELECT max(id) FROM events))")
echo "PostgreSQL <old>: $(head -n 1 "$SCRATCH/old.rows" | cut -d' ' -f1-2), $(tail -n 1 "$SCRATCH/old.rows" | cut -d' ' -f1-2), extension $(on_old psql_on old -d app -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_snowflake'")" | n
on_old stop_cluster old

for case in mark_copied no_mark; do
  echo "-- pg_upgrade <old> -> <new>, $case" | n
  new="new_$case"
  INITDB_ARGS=$new_initdb_args init_cluster "$new" "${conf[@]}"
  work="$SCRATCH/upgrade_$case"
  mkdir -p "$work" && chown "$(stat -c %U "$SCRATCH")" "$work"
  if (cd "$work" && server_env "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$SCRATCH/old" -D "$SCRATCH/$new" \
        -p "$(port_of old)" -P "$(port_of "$new")" -s "$SCRATCH" --copy) >"$work/out" 2>&1; then
    echo "pg_upgrade: $(grep -o 'Upgrade Complete' "$work/out")"
  else
    echo "pg_upgrade failed:"
    cat "$work/out"
  fi
  cat "$work/out" >>"$REPORT"
  echo "the old data directory has pg_snowflake.mark: $([ -f "$SCRATCH/old/pg_snowflake.mark" ] && echo yes || echo no); the new one: $([ -f "$SCRATCH/$new/pg_snowflake.mark" ] && echo yes || echo no)"
  if [ "$case" = mark_copied ]; then
    # The documented step: copy the mark, keeping its owner and mode, before the new server starts.
    as_pg_owner cp -p "$SCRATCH/old/pg_snowflake.mark" "$SCRATCH/$new/pg_snowflake.mark"
    echo "copied pg_snowflake.mark into the new data directory"
  fi
  # The new server's clock reads an hour behind the last id issued before the upgrade (the old
  # mark, which a clean shutdown brings down to that id's time).
  # (The file's v1 form has the time on its second line; a JSON form names it mark_unix_ms.)
  last_ms=$(sed -n -e '2{/^[0-9][0-9]*$/p;}' -e 's/^ *"mark_unix_ms": *\([0-9][0-9]*\),\{0,1\}$/\1/p' "$SCRATCH/old/pg_snowflake.mark" | head -n 1)
  [ -n "$last_ms" ] || { echo "cannot read the time in $SCRATCH/old/pg_snowflake.mark"; exit 1; }
  echo "snowflake.fault_clock_offset = $(( last_ms - $(date +%s%3N) - 3600000 ))" | as_pg_owner tee -a "$SCRATCH/$new/postgresql.conf" >/dev/null
  start_cluster "$new"
  echo "server: PostgreSQL $(psql_on "$new" -At -c "SHOW server_version_num" | cut -c1-2)" | n
  rows "$new" | diff -q "$SCRATCH/old.rows" - >/dev/null && echo "tables: every row unchanged"
  psql_on "$new" -c "CREATE DATABASE fresh"
  create_extension "$new" fresh
  if diff <(psql_on "$new" -d fresh -At -f "$PROJECT_DIR/pgrx-tests/harness/sql/extension_catalog.sql") \
       <(psql_on "$new" -d app -At -f "$PROJECT_DIR/pgrx-tests/harness/sql/extension_catalog.sql") >"$SCRATCH/$case.diff"; then
    echo "extension: the catalog of a fresh install on <new>" | n
  else
    cat "$SCRATCH/$case.diff"
  fi
  # 5,000 ids: more than one tick's sequence (4,096), so that a generator that must not use the
  # clock's time has to wait for it.
  PGOPTIONS="-c client_min_messages=error" psql_on "$new" -d app -At -F ' | ' <<SQL
\i $PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql
SELECT 'clock 1 h behind the last old id: ' || state || ' | ' || regexp_replace(regexp_replace(coalesce(message, ''), '\d+ ms behind', 'N ms behind'), 'waited \d+ ms', 'waited N ms')
FROM error_of('INSERT INTO orders(item) SELECT ''1h'' FROM generate_series(1, 5000)');
SELECT '  new ids, and new ids not above every id before the upgrade: ' || count(*) || ', ' || count(*) FILTER (WHERE id <= $old_max)
FROM orders WHERE item = '1h';
SELECT ($last_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3000) AS offset_ms \gset
SET snowflake.fault_clock_offset = :offset_ms;
SELECT 'clock 3 s behind the last old id: ' || state FROM error_of('INSERT INTO orders(item) SELECT ''3s'' FROM generate_series(1, 5000)');
SELECT '  new ids, and new ids not above every id before the upgrade: ' || count(*) || ', ' || count(*) FILTER (WHERE id <= $old_max)
FROM orders WHERE item = '3s';
SET snowflake.fault_clock_offset = 0;
SELECT 'clock right: ' || state FROM error_of('INSERT INTO orders(item) SELECT ''now'' FROM generate_series(1, 5000)');
SELECT '  new ids, and new ids not above every id before the upgrade: ' || count(*) || ', ' || count(*) FILTER (WHERE id <= $old_max)
FROM orders WHERE item = 'now';
SELECT 'all ids distinct: ' || (count(DISTINCT id) = count(*)) FROM orders;
SQL
  stop_cluster "$new"
done
