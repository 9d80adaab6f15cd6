# Bad input: the library of the PostgreSQL <N> package put into another major's server (<M>: the
# tests' installation, copied). PostgreSQL's magic block check refuses it, whether preloaded (the
# server does not start) or loaded by CREATE EXTENSION (an error, nothing created). (The majors are
# printed as <N> and <M>.)
other=$((PG_MAJOR + 1))
[[ " $SUPPORTED_PG_MAJORS " == *" $other "* ]] || other=$((PG_MAJOR - 1))
ensure_pypi_pg "$other" 2>/dev/null
package_major=$PG_MAJOR
n() { sed -e "s/version $package_major\b/version <N>/g; s/version $other\b/version <M>/g" -e "s#$SCRATCH#\$SCRATCH#g"; }
package_into_copy "$package_major" "$other" "$SCRATCH/other-major"
echo "-- preloaded"
init_cluster wrong "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
if server_env "$PG_BIN/pg_ctl" -D "$SCRATCH/wrong" -l "$SCRATCH/wrong.log" -w -t 30 start >/dev/null 2>&1; then
  echo "the server started"
else
  echo "the server did not start:"
  grep -E 'FATAL|DETAIL|HINT' "$SCRATCH/wrong.log" | sed 's/^.*\(FATAL\|DETAIL\|HINT\): */\1: /' | n
fi
echo "-- CREATE EXTENSION, not preloaded"
sed -i "s/^shared_preload_libraries = .*$//" "$SCRATCH/wrong/postgresql.conf"
start_cluster wrong
{ psql_on wrong -c "CREATE EXTENSION pg_snowflake" 2>&1 || true; } | grep -E 'ERROR|DETAIL|HINT' | sed 's/^.*\(ERROR\|DETAIL\|HINT\): */\1: /' | n
psql_on wrong -At -c "SELECT 'left behind: ' || (SELECT count(*) FROM pg_extension WHERE extname = 'pg_snowflake') || ' extensions, ' || (SELECT count(*) FROM pg_proc WHERE proname LIKE 'snowflake%') || ' functions, ' || (SELECT count(*) FROM pg_type WHERE typname LIKE 'snowflake%') || ' types'"
stop_cluster wrong
