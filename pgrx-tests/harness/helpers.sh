# shellcheck shell=bash
# What several scenarios ask of a cluster: the extension installed the README's way, its mark on
# disk, ids after a failover, a spent lease, a standby caught up.
# A helper that only one scenario uses belongs in that scenario. Sourced by lib.sh.

# create_extension: every test installs pg_snowflake as README.md (Install) recommends: into a
# schema `snowflake` of its own, usable by every role, on the database's search_path after public.
# checks.sh refuses a scenario that creates the extension any other way (install_schema.sh's risky
# way excepted).
# ALTER DATABASE ... SET applies to sessions started afterwards only: run the statements that use
# the extension in a new psql. A standby gets the setting with the catalog.

# create_extension_sql DB [VERSION]: the statements, for database DB (and that version).
create_extension_sql() {
  cat <<SQL
CREATE SCHEMA snowflake;
CREATE EXTENSION pg_snowflake SCHEMA snowflake${2:+ VERSION '$2'};
GRANT USAGE ON SCHEMA snowflake TO PUBLIC;
ALTER DATABASE "$1" SET search_path = "\$user", public, snowflake;
SQL
}

# create_extension CLUSTER [DB [VERSION]]: runs them in database DB (default postgres) of CLUSTER.
create_extension() {
  local db=${2:-postgres}
  create_extension_sql "$db" "${3:-}" | psql_on "$1" -d "$db"
}

# mark_ms_of NAME: the high-water mark in cluster NAME's pg_snowflake.mark (ms since 1970).
mark_ms_of() {
  sed -n 's/^ *"mark_unix_ms": \([0-9]*\),$/\1/p' "$SCRATCH/$1/pg_snowflake.mark"
}

# id_ms ID: the milliseconds since 1970 of an id of the default layout (41|10|12 from 2025-01-01).
id_ms() { echo $(( ($1 >> 22) + 1735689600000 )); }

# ids_after_failover NAME [CLOCK_MS]: on the cluster NAME, just promoted or restored, inserts 2,000
# ids into its table `after` until that works (at most 30 tries, 45 s), each call either issuing or
# failing with the clock error while the clock is behind the replayed mark (any other error ends
# the scenario). With CLOCK_MS (milliseconds since 1970), the inserting sessions' clock starts
# there when the first try is made, and runs on from it (snowflake.fault_clock_offset, the test
# builds'), however long the failover took. Prints "yes" or "no" (ids issued), then the number of
# calls refused.
ids_after_failover() {
  local refused=0 clock=() _
  [ -z "${2:-}" ] || clock=(-c "SET snowflake.fault_clock_offset = $(($2 - $(date +%s%3N)))")
  psql_on "$1" -c "CREATE TABLE after (id bigint NOT NULL)"
  for _ in $(seq 1 30); do
    if psql_on "$1" "${clock[@]}" -c "INSERT INTO after SELECT snowflake_nextval() FROM generate_series(1, 2000)" 2>"$SCRATCH/err_$1"; then
      echo "yes $refused"
      return 0
    fi
    grep -q "behind the last snowflake id this server may have issued" "$SCRATCH/err_$1" || { cat "$SCRATCH/err_$1" >&2; exit 1; }
    refused=$((refused + 1))
    sleep 0.5
  done
  echo "no $refused"
}

# lease_spent NAME: until cluster NAME's lease has run out (the server idle a second; up to 10 s
# after a slow mark write, whose next lease is longer), so that its next id writes a new mark.
lease_spent() {
  local _
  for _ in $(seq 1 300); do
    [ "$(psql_on "$1" -At -c "SELECT coalesce(mark_ahead_ms, -1) < 0 FROM snowflake_stats()")" = t ] && return 0
    sleep 0.05
  done
  echo "the lease of $1 did not run out" >&2
  exit 1
}

# caught_up PRIMARY STANDBY: until STANDBY has replayed all the WAL PRIMARY has written so far (at
# most 10 s).
caught_up() {
  local lsn _
  lsn=$(psql_on "$1" -At -c "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 100); do
    [ "$(psql_on "$2" -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
    sleep 0.1
  done
  echo "$2 did not replay $1's WAL up to $lsn within 10 s" >&2
  exit 1
}
