# Shared by the project's scripts: set-up checks, and throwaway PostgreSQL clusters.
# Source it; it defines functions and a few variables, and runs nothing on its own.
#
# Clusters live in a fresh temp dir outside the checkout (CI's clone may sit where the
# `postgres` user cannot enter), listen on a Unix socket only (no port can clash), and are run by
# the `postgres` user when we are root, since initdb and postgres refuse to run as root.

PROJECT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGRX_VERSION=0.18.1
PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}

# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Runs a command as the owner of the clusters: `postgres` when we are root, else ourselves.
as_pg_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Installs what is missing, and only that: Debian packages, cargo-pgrx, pgrx's registration of
# the PostgreSQL it builds against. Quick when everything is there.
ensure_setup() {
  local pkgs="postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR clang libclang-dev build-essential sudo"
  local missing=""
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    say "installing Debian packages:$missing"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
  command -v cargo >/dev/null || die "cargo is not on PATH: install Rust first (rustup)"
  if [ "$(cargo pgrx --version 2>/dev/null)" != "cargo-pgrx $PGRX_VERSION" ]; then
    say "installing cargo-pgrx $PGRX_VERSION (about 7 minutes, once)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
  fi
  local pgrx_home=${PGRX_HOME:-$HOME/.pgrx}
  if ! grep -qs "^pg$PG_MAJOR = \"$PG_CONFIG\"" "$pgrx_home/config.toml"; then
    say "registering PostgreSQL $PG_MAJOR with pgrx"
    cargo pgrx init "--pg$PG_MAJOR" "$PG_CONFIG"
  fi
  PG_BIN=$("$PG_CONFIG" --bindir)
}

# Builds the extension (debug, without the test-only functions) and installs it into PostgreSQL.
install_extension() {
  say "building and installing pg_snowflake into PostgreSQL $PG_MAJOR"
  (cd "$PROJECT_DIR" && cargo pgrx install --pg-config "$PG_CONFIG" --features "pg$PG_MAJOR" --no-default-features) >/dev/null 2>"$SCRATCH/install.log" \
    || { cat "$SCRATCH/install.log" >&2; die "cargo pgrx install failed"; }
}

# A scratch dir for this run, removed with every cluster in it on exit.
new_scratch() {
  SCRATCH=$(mktemp -d /tmp/pg_snowflake.XXXXXX)
  chmod 755 "$SCRATCH"
  [ "$(id -u)" = 0 ] && chown postgres: "$SCRATCH"
  trap cleanup EXIT
}

# Stops every cluster still running in the scratch dir.
stop_all_clusters() {
  local pid
  for pid in "$SCRATCH"/*/postmaster.pid; do
    [ -f "$pid" ] && as_pg_owner "$PG_BIN/pg_ctl" -D "$(dirname "$pid")" -m immediate -w stop >/dev/null 2>&1
  done
  return 0
}

# On exit: stop the clusters and remove the scratch dir (kept with KEEP_SCRATCH=1).
cleanup() {
  stop_all_clusters
  [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"
}

# init_cluster NAME [postgresql.conf lines...]: a new data dir $SCRATCH/NAME, not started.
init_cluster() {
  local name=$1; shift
  local dir="$SCRATCH/$name"
  as_pg_owner "$PG_BIN/initdb" -D "$dir" -U postgres -A trust --no-sync >/dev/null \
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
  cat "$SCRATCH"/*/postgresql.conf 2>/dev/null | sed -n 's/^port = \([0-9]*\)$/\1/p' | sort -n | tail -n 1 \
    | { read -r last || true; echo $(( ${last:-54320} + 1 )); }
}

port_of() { sed -n "s/^port = //p" "$SCRATCH/$1/postgresql.conf" | tail -n 1; }

start_cluster() {
  local name=$1
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$name" -l "$SCRATCH/$name.log" -w -t 60 start >/dev/null \
    || { cat "$SCRATCH/$name.log" >&2; die "cluster $name did not start"; }
}

stop_cluster() {
  as_pg_owner "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" -m fast -w stop >/dev/null
}

# psql_on NAME [psql args...]: psql into database postgres of cluster NAME, quiet and unaligned.
psql_on() {
  local name=$1; shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$(port_of "$name")" -U postgres -d postgres "$@"
}
