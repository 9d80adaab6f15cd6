#!/usr/bin/env bash
# The benchmark, set-up included: builds the release extension, starts a throwaway server and
# runs, in one go, the four experiments of pgrx-tests/bench/ (their files say what each measures):
#   per_id       ns per id in one session, the bare loop subtracted (snowflake_nextval(), a
#                sequence's nextval(), gen_random_uuid(), uuidv7() on PostgreSQL 18, random())
#   concurrency  pgbench tps at 1, 4, 16 and 64 clients, SELECT and INSERT ... DEFAULT
#   ceiling      several sessions against the default layout's 4,096 ids per millisecond
#   btree        the same rows keyed by bigserial, UUIDv4, UUIDv7 and snowflake ids with a
#                32 MB buffer pool: insert rate as the table grows, index size, leaf density, WAL
# Then writes report.md and PNG plots into the results folder. Figures are printed, never
# asserted: a slow machine never fails it, a broken benchmark does.
#
# Usage: bash pgrx-tests/bench/bench.sh [--quick] [--pg N] [--out DIR] [--per-id]
#   --quick  small sizes (well under a minute once built): proves the benchmark works; the test
#            command runs it
#   --pg N   the PostgreSQL major (default 15)
#   --out D  the results folder (default target/bench/pgN, or target/bench/quick-pgN)
#   --per-id the per-id experiment alone (about two minutes): to repeat its figures
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

QUICK=
MAJOR=15
OUT=
EXPERIMENTS="per_id concurrency ceiling btree"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --pg) MAJOR=${2:?--pg needs a major}; shift ;;
    --out) OUT=${2:?--out needs a folder}; shift ;;
    --per-id) EXPERIMENTS=per_id ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
  shift
done
OUT=${OUT:-$PROJECT_DIR/target/bench/${QUICK:+quick-}pg$MAJOR}

ensure_debian_packages python3-matplotlib
ensure_setup "$MAJOR"
new_scratch
say "building and installing the release build into PostgreSQL $MAJOR"
(cd "$PROJECT_DIR" && cargo pgrx install --release --pg-config "$PG_CONFIG" --no-default-features --features "pg$MAJOR") \
  >/dev/null 2>"$SCRATCH/install.log" || { cat "$SCRATCH/install.log" >&2; die "cargo pgrx install failed"; }

rm -rf "$OUT"
DATA="$OUT/data"
mkdir -p "$DATA"
started=$(date +%s)

# One server for the whole run. Each experiment sets the layout or buffer pool it needs in
# postgresql.auto.conf and restarts it (set_and_restart).
init_cluster bench "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 1" \
  "jit = off" "max_parallel_workers_per_gather = 0" "max_connections = 120" \
  "snowflake.public_key_file = 'snowflake.key'"
# The key of public ids, in a file as the README says (owned by the server's OS user, mode 0600).
echo 000102030405060708090a0b0c0d0e0f | as_pg_owner tee "$SCRATCH/bench/snowflake.key" >/dev/null
as_pg_owner chmod 600 "$SCRATCH/bench/snowflake.key"
start_cluster bench
create_extension bench
psql_on bench -c "CREATE EXTENSION pgstattuple"

# set_and_restart [SETTING=VALUE...]: forgets what the previous experiment set, sets these (ALTER
# SYSTEM) and restarts the server.
set_and_restart() {
  local kv
  psql_on bench -c "ALTER SYSTEM RESET ALL"
  for kv in "$@"; do
    psql_on bench -c "ALTER SYSTEM SET ${kv%%=*} = '${kv#*=}'"
  done
  # Experiments change the layout; a server refuses a layout other than its mark's (as it
  # should), so this throwaway one starts each experiment from no mark.
  stop_cluster bench
  rm -f "$SCRATCH/bench/pg_snowflake.mark"
  start_cluster bench
}

bench_dir="$PROJECT_DIR/pgrx-tests/bench"
for experiment in $EXPERIMENTS; do
  say "experiment: $experiment"
  # shellcheck disable=SC1090
  . "$bench_dir/$experiment.sh"
done

{
  echo "postgres	$(psql_on bench -At -c 'SHOW server_version')"
  echo "cpu	$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  echo "cores	$(nproc)"
  echo "memory_gib	$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)"
  echo "kernel	$(uname -r)"
  echo "os	$(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "commit	$(git -C "$PROJECT_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "date	$(date -u +%Y-%m-%d)"
  echo "quick	${QUICK:-0}"
  echo "seconds	$(( $(date +%s) - started ))"
} >"$DATA/machine.tsv"

say "writing the report"
# Debian's own Python, which has the python3-matplotlib package (a python3 earlier on PATH, pyenv's
# say, may not).
/usr/bin/python3 "$bench_dir/report.py" "$OUT"
echo "report: ${OUT#"$PROJECT_DIR"/}/report.md"
