#!/usr/bin/env bash
# One soak run (issue 58): etcd's three members (two of Debian's 3.4, one 3.5) started here, then
# soak.py (the servers, their clients and the nemesis), then check.py over what the clients were
# told. Installs nothing and builds nothing: pgrx-tests/soak.sh does the set-up and the build first,
# and the `soak` scenario runs after test.sh's. Needs the tests' PostgreSQL with the fault_injection
# build installed (use_pg), etcd 3.5 (ensure_etcd35) and the soak's Python (ensure_soak_tools).
#
# Usage: bash pgrx-tests/soak/run.sh --seed N --minutes M --out DIR [soak.py's other options]
#   (SCRATCH: the scratch dir to use, else a new one; PG_MAJOR: default 15)
# Exits 0 when the checker found nothing wrong, 1 when it did (the seed, the schedule and the
# line that replays it printed), 2 when the run itself failed.
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
use_pg "${PG_MAJOR:-15}"
own_scratch=
[ -n "${SCRATCH:-}" ] || { new_scratch; own_scratch=1; }
soak_tools_ready || die "the soak's Python is not installed: bash pgrx-tests/soak.sh sets it up (harness/setup.sh)"
etcd35_ready || die "etcd 3.5 is not installed: bash pgrx-tests/soak.sh sets it up (harness/setup.sh)"
OUT=
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift ;;
  esac
  shift
done
[ -n "$OUT" ] || die "--out DIR is needed"
rm -rf "$OUT"
mkdir -p "$OUT"
# An earlier run in the same scratch dir (the scenario runs several) leaves its servers and logs.
remove_all_clusters
rm -f "$SCRATCH"/{l1,l2,l3,h,s}.log "$SCRATCH"/etcd-e*.log

# At the end, or at a failure: every server and member stopped, the servers' logs kept in OUT.
finish() {
  local log
  stop_all_clusters
  stop_etcd
  mkdir -p "$OUT/logs"
  for log in "$SCRATCH"/*.log; do [ -e "$log" ] && cp "$log" "$OUT/logs/"; done
  [ -z "$own_scratch" ] || [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"
}
trap finish EXIT
ETCD_VERSION="3.4 3.4 3.5"
plan_etcd 3
start_etcd
# The plan, for soak.py's calls of start_etcd_member (a member stopped and started by the nemesis).
declare -p ETCD_PORTS ETCD_CLIENT_PORTS ETCD_CLUSTER ETCD_TOKEN ETCD_BINS ETCD_BIN ETCD_MEMBERS ETCD_ENDPOINTS \
  ETCD_TLS ETCD_VERSION >"$SCRATCH/etcd.plan"
export SCRATCH PG_BIN PG_CONFIG SOAK_ETCD_PLAN="$SCRATCH/etcd.plan" SOAK_ETCD_PORTS="${ETCD_CLIENT_PORTS[*]}"
PY=$(soak_python)
rc=0
"$PY" "$TESTS_DIR/soak/soak.py" "${args[@]}" 2>&1 | tee "$OUT/soak.log" || rc=$?
if [ "$rc" != 0 ]; then
  echo "the soak did not run to its end (status $rc): seed and schedule above"
  exit 2
fi
trap - EXIT
finish
"$PY" "$TESTS_DIR/soak/check.py" "$OUT" || exit 1
