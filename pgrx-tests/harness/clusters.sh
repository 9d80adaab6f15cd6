# shellcheck shell=bash
# Throwaway PostgreSQL clusters. They live in a fresh temp dir outside the checkout (CI's clone may
# sit where the `postgres` user cannot enter), listen on a Unix socket only (no port can clash), and
# are run by the `postgres` user when we are root, since initdb and postgres refuse to run as root.
# Sourced by lib.sh.

# A scratch dir for this run, removed with every cluster in it on exit.
new_scratch() {
  SCRATCH=$(mktemp -d /tmp/pg_snowflake.XXXXXX)
  TIMINGS=$SCRATCH/timings
  chmod 755 "$SCRATCH"
  [ "$(id -u)" = 0 ] && chown postgres: "$SCRATCH"
  trap cleanup EXIT
}

# Stops every cluster still running in the scratch dir (as the OS user that owns its data dir:
# postgres, or another one a scenario runs a server as).
stop_all_clusters() {
  local pid dir
  for pid in "$SCRATCH"/*/postmaster.pid "$SCRATCH"/lane*/*/postmaster.pid; do
    dir=$(dirname "$pid")
    # (A postmaster already gone, its pid file left behind, is no failure.)
    if [ -f "$pid" ] && [ "$(id -u)" = 0 ] && [ "$(stat -c %U "$dir")" != postgres ]; then
      runuser -u "$(stat -c %U "$dir")" -- "$PG_BIN/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null 2>&1 || true
    elif [ -f "$pid" ]; then
      as_pg_owner "$PG_BIN/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null 2>&1 || true
    fi
  done
  return 0
}

# Stops every cluster in the scratch dir and removes its data dir (the logs stay).
remove_all_clusters() {
  local version
  stop_all_clusters
  for version in "$SCRATCH"/*/PG_VERSION; do
    # (A process that is still going away may write meanwhile: try again once.)
    [ -f "$version" ] && { rm -rf "$(dirname "$version")" 2>/dev/null || { sleep 1; rm -rf "$(dirname "$version")"; }; }
  done
  return 0
}

# On exit: stop the clusters and remove the scratch dir (kept with KEEP_SCRATCH=1).
cleanup() {
  stop_all_clusters
  [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"
}

# init_cluster NAME [postgresql.conf lines...]: a new data dir $SCRATCH/NAME, not started.
# INITDB_ARGS: more arguments for initdb.
init_cluster() {
  local name=$1; shift
  local dir="$SCRATCH/$name" extra=()
  [ -z "${INITDB_ARGS:-}" ] || read -ra extra <<<"$INITDB_ARGS"
  as_pg_owner "$PG_BIN/initdb" -D "$dir" -U postgres -A trust --no-sync "${extra[@]}" >/dev/null \
    || die "initdb failed for $name"
  {
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$SCRATCH'"
    echo "port = $(next_port)"
    echo "fsync = off"
    echo "timezone = 'UTC'"
    for line in "$@"; do echo "$line"; done
  } | as_pg_owner tee -a "$dir/postgresql.conf" >/dev/null
}

# Each cluster gets its own port number: with one socket dir, that names its socket. One more
# than the largest any cluster in the scratch dir has (read from the files, so that it also works
# from command substitutions and subshells).
next_port() {
  { cat "$SCRATCH"/*/postgresql.conf 2>/dev/null || true; } | sed -n 's/^port = \([0-9]*\)$/\1/p' | sort -n | tail -n 1 \
    | { read -r last || true; echo $(( ${last:-54320} + 1 )); }
}

port_of() { sed -n "s/^port = //p" "$SCRATCH/$1/postgresql.conf" | tail -n 1; }

# The server finds its own libpq first: the PyPI builds' contrib modules (dblink) were linked with
# a run path that does not exist here, and the system's libpq may be older than theirs.
server_env() { as_pg_owner env LD_LIBRARY_PATH="$("$PG_CONFIG" --libdir)" "$@"; }

start_cluster() {
  try_start_cluster "$1" || { cat "$SCRATCH/$1.log" >&2; die "cluster $1 did not start"; }
}

# try_start_cluster NAME [SECONDS]: starts it (waiting at most SECONDS, default 60); fails if it did
# not start, for a scenario that expects it may not (its log says why).
try_start_cluster() {
  server_env "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" -l "$SCRATCH/$1.log" -w -t "${2:-60}" start >/dev/null 2>&1
}

stop_cluster() {
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" -m fast -w stop >/dev/null
}

restart_cluster() {
  server_env "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" -l "$SCRATCH/$1.log" -m fast -w -t 60 restart >/dev/null \
    || { cat "$SCRATCH/$1.log" >&2; die "cluster $1 did not restart"; }
}

# wait_ready NAME: until the cluster accepts connections again (after a crash, say), at most 60 s.
wait_ready() {
  local i
  for i in $(seq 1 120); do
    psql_on "$1" -c "SELECT 1" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "cluster $1 did not come back"
}

# psql_on NAME [psql args...]: psql into database postgres of cluster NAME, quiet and unaligned.
psql_on() {
  local name=$1; shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$(port_of "$name")" -U postgres -d postgres "$@"
}
