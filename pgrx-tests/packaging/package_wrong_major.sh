# Bad input: the library of the PostgreSQL <N> package put into another major's server <M> (the next
# major, or for the newest the one before: the tests' installation, copied). PostgreSQL refuses it,
# whether preloaded (the server does not start) or loaded by CREATE EXTENSION (an error, nothing
# created): a library older than the server fails PostgreSQL's magic block check ("incompatible
# library ...: version mismatch", "Server is version <M>, library is version <N>"); a newer one
# may already fail to link ("could not load library ...: undefined symbol: ..."). The messages
# themselves go to the report (they differ with the direction); the output says it was one of
# these two.
other=$(other_major "$PG_MAJOR") # installed by test.sh's set-up
package_major=$PG_MAJOR
n() { sed -e "s/version $package_major\b/version <N>/g; s/version $other\b/version <M>/g" -e "s#$SCRATCH#\$SCRATCH#g"; }
package_into_copy "$package_major" "$other" "$SCRATCH/other-major"
unset PG_CONFIG_OVERRIDE
# refusal: what kind of refusal the server's messages on stdin are, or what else they say.
refusal() {
  local text
  text=$(cat)
  printf '%s\n' "$text" >>"$REPORT"
  if grep -q 'incompatible library ".*pg_snowflake.so": version mismatch' <<<"$text" \
     && grep -q "Server is version $other, library is version $package_major" <<<"$text" \
     || grep -q 'could not load library ".*pg_snowflake.so": .*undefined symbol' <<<"$text"; then
    echo "$1: PostgreSQL refused the library (version mismatch, or a symbol that <M> lacks)"
  else
    echo "$1: something else:"
    n <<<"$text"
  fi
}
echo "-- preloaded"
init_cluster wrong "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
if try_start_cluster wrong 30; then
  echo "the server started"
else
  grep -E 'FATAL|DETAIL' "$SCRATCH/wrong.log" | refusal "the server did not start"
fi
echo "-- CREATE EXTENSION, not preloaded"
sed -i "s/^shared_preload_libraries = .*$//" "$SCRATCH/wrong/postgresql.conf"
start_cluster wrong
{ create_extension wrong 2>&1 || true; } | grep -E 'ERROR|DETAIL' | refusal "CREATE EXTENSION failed"
psql_on wrong -At -c "SELECT 'left behind: ' || (SELECT count(*) FROM pg_extension WHERE extname = 'pg_snowflake') || ' extensions, ' || (SELECT count(*) FROM pg_proc WHERE proname LIKE 'snowflake%') || ' functions, ' || (SELECT count(*) FROM pg_type WHERE typname LIKE 'snowflake%') || ' types'"
stop_cluster wrong
