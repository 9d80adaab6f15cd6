# shellcheck shell=bash
# What several scenarios ask of a cluster: its mark on disk, ids after a failover, a spent lease.
# A helper that only one scenario uses belongs in that scenario. Sourced by lib.sh.

# mark_ms_of NAME: the high-water mark in cluster NAME's pg_snowflake.mark (ms since 1970).
mark_ms_of() {
  sed -n 's/^ *"mark_unix_ms": \([0-9]*\),$/\1/p' "$SCRATCH/$1/pg_snowflake.mark"
}

# ids_after_failover NAME: on the cluster NAME, just promoted or restored, inserts 2,000 ids into its
# table `after` until that works (at most 30 tries, 45 s), each call either issuing or failing with
# the clock error while the clock is behind the replayed mark (any other error ends the scenario).
# Prints "yes" or "no" (ids issued), then the number of calls refused.
ids_after_failover() {
  local refused=0 _
  psql_on "$1" -c "CREATE TABLE after (id bigint NOT NULL)"
  for _ in $(seq 1 30); do
    if psql_on "$1" -c "INSERT INTO after SELECT snowflake_nextval() FROM generate_series(1, 2000)" 2>"$SCRATCH/err_$1"; then
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
