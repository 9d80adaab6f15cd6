# majors: all (what it tests differs by major: the WAL, shared memory, the generated SQL)
# Versioned SQL: every released version (its install script frozen in sql/pg_snowflake--X.Y.Z.sql)
# is installed as it was released, with a table keyed by DEFAULT snowflake_nextval(); the server
# restarts (as after a package upgrade) and ALTER EXTENSION pg_snowflake UPDATE brings it to the
# current version. Then the catalog of the updated database must equal a fresh install's, fact by
# fact (pgrx-tests/harness/sql/extension_catalog.sql), and the table's ids must continue above the old
# ones. The negative controls: a database whose extension differs in one function's volatility or
# one privilege is told apart. Then the bad input: a version with no install script or update
# path, an update run twice, an upgrade script run by hand. (The current version is printed as
# <version>.)
version=$(cargo_version)
v() { sed "s/${version//./\\.}/<version>/g"; }
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
catalog() { psql_on main -d "$1" -At -f "$PROJECT_DIR/pgrx-tests/harness/sql/extension_catalog.sql"; }

psql_on main -c "CREATE DATABASE fresh"
create_extension main fresh
echo "fresh install: version $(psql_on main -d fresh -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_snowflake'" | v)"
catalog fresh >"$SCRATCH/fresh.catalog"
# (No count: the SQL snapshot is the list of the surface. What is checked here is that an updated
# database has the catalog of this fresh one.)
echo "its catalog: $([ "$(grep -c '^function ' "$SCRATCH/fresh.catalog")" -gt 0 ] && [ "$(grep -c '^type ' "$SCRATCH/fresh.catalog")" -gt 0 ] && echo "read, functions and types" || echo "EMPTY")"

released=()
for f in $(frozen_sql_files); do
  f=${f##*/pg_snowflake--}
  released+=("${f%.sql}")
done
echo "released versions with a frozen install script: ${#released[@]}"
for old in "${released[@]}"; do
  db="from_${old//./_}"
  echo "-- from $old"
  psql_on main -c "CREATE DATABASE $db"
  create_extension main "$db" "$old"
  psql_on main -d "$db" -At <<SQL
SELECT 'installed: ' || extversion FROM pg_extension WHERE extname = 'pg_snowflake';
CREATE TABLE orders (n serial, id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), at timestamptz DEFAULT now());
INSERT INTO orders(item) SELECT 'before ' || g FROM generate_series(1, 1000) g;
INSERT INTO events DEFAULT VALUES;
SQL
  restart_cluster main
  # Between the restart (the new library) and the update, the old version's SQL objects are served
  # by the new library: they must work.
  psql_on main -d "$db" -At -F ' | ' <<SQL
\i $PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql
SELECT 'before the update, ' || f || ': ' || state || coalesce(' | ' || message, '')
FROM unnest(ARRAY['SELECT * FROM snowflake_stats()', 'SELECT * FROM snowflake_layout()',
                  'SELECT snowflake_decode(max(id)) FROM orders', 'SELECT snowflake_clock()',
                  'INSERT INTO orders(item) VALUES (''between'')']) f, error_of(f);
DROP FUNCTION error_of(text);
SQL
  psql_on main -d "$db" -At <<SQL
SELECT max(id) AS before FROM orders \gset
ALTER EXTENSION pg_snowflake UPDATE;
SELECT 'updated to ' || extversion FROM pg_extension WHERE extname = 'pg_snowflake';
INSERT INTO orders(item) SELECT 'after ' || g FROM generate_series(1, 1000) g;
INSERT INTO events DEFAULT VALUES;
SELECT 'rows: ' || count(*) || ', ids distinct: ' || (count(DISTINCT id) = count(*))
       || ', new ids above the old: ' || (min(id) FILTER (WHERE item LIKE 'after%') > :before)
       || ', machine id of every id: ' || string_agg(DISTINCT snowflake_machine_id(id)::text, ',')
FROM orders;
SELECT 'ids increase in insertion order: ' || bool_and(id > prev)
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM orders) t WHERE prev IS NOT NULL;
SELECT 'events: ' || count(*) || ', increasing: ' || (max(id) > min(id)) FROM events;
SQL
  catalog "$db" >"$SCRATCH/$db.catalog"
  if diff "$SCRATCH/fresh.catalog" "$SCRATCH/$db.catalog" >"$SCRATCH/$db.diff"; then
    echo "catalog after the update: identical to a fresh install"
  else
    echo "catalog after the update differs from a fresh install:"
    v <"$SCRATCH/$db.diff"
  fi
done

echo "-- negative controls: the comparison sees one changed function, one changed privilege"
psql_on main -c "CREATE DATABASE changed TEMPLATE fresh"
psql_on main -d changed -c "ALTER FUNCTION snowflake.snowflake_timestamp(bigint) VOLATILE"
{ catalog changed | diff "$SCRATCH/fresh.catalog" - || true; } | sed -n 's/^\([<>]\) \(function [^|]*\)|.*\(volatility [a-z]\).*$/\1 \2| \3/p'
psql_on main -c "DROP DATABASE changed" -c "CREATE DATABASE changed TEMPLATE fresh" -c "CREATE ROLE auditor"
psql_on main -d changed -c "GRANT EXECUTE ON FUNCTION snowflake.snowflake_stats_reset() TO auditor"
{ catalog changed | diff "$SCRATCH/fresh.catalog" - || true; } | sed -n 's/^\([<>]\) \(function [^|]*\)|.*\(acl [^|]*\)|.*$/\1 \2| \3/p'

echo "-- bad input"
# psql's error lines, without the LINE/context lines that vary.
err() { psql_on main "$@" 2>&1 | grep -E '^(psql:[^ ]* )?(ERROR|NOTICE|WARNING)|^Use' | sed 's/^psql:[^ ]* //' | v || true; }
psql_on main -c "CREATE DATABASE bad"
echo "a version with no install script or update path:"
psql_on main -d bad -c "CREATE SCHEMA snowflake"
err -d bad -c "CREATE EXTENSION pg_snowflake SCHEMA snowflake VERSION '0.0.9'"
psql_on main -d bad -At -c "SELECT 'left behind: ' || (SELECT count(*) FROM pg_extension WHERE extname = 'pg_snowflake') || ' extensions, ' || (SELECT count(*) FROM pg_proc WHERE proname LIKE 'snowflake%') || ' functions, ' || (SELECT count(*) FROM pg_type WHERE typname LIKE 'snowflake%') || ' types'"
echo "an update to a version with no path (a downgrade, a version that does not exist):"
err -d fresh -c "ALTER EXTENSION pg_snowflake UPDATE TO '0.1.0'"
err -d fresh -c "ALTER EXTENSION pg_snowflake UPDATE TO '9.9.9'"
echo "an update run twice:"
err -d "from_0_1_0" -c "ALTER EXTENSION pg_snowflake UPDATE"
err -d "from_0_1_0" -c "ALTER EXTENSION pg_snowflake UPDATE TO '$version'"
echo "an upgrade script run by hand (psql -f):"
err -d "from_0_1_0" -f "$PROJECT_DIR/sql/pg_snowflake--0.1.0--0.2.0.sql"
catalog "from_0_1_0" | diff -q "$SCRATCH/fresh.catalog" - >/dev/null && echo "after these: the catalog is still identical to a fresh install"
