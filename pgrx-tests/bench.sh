#!/usr/bin/env bash
# Per-id cost in one session, set-up included: builds the release extension, starts a throwaway
# server, and times `SELECT count(f()) FROM generate_series(1, N)` for each generator in
# interleaved rounds, subtracting the bare loop (`count(*)`). Prints a Markdown table of medians
# (and minimums, steadier on a shared machine) in ns per id and as ratios to a sequence's
# nextval(), and writes it to target/bench/.
#
# The server uses a 22-bit sequence (1 machine bit) so that one session cannot reach the
# ids-per-millisecond ceiling: this measures the cost of a call, not the layout's limit.
#
# Usage: bash pgrx-tests/bench.sh [--quick] [--pg N]
#   --quick  fewer and shorter rounds (seconds, not minutes): proves the benchmark still works
#   --pg N   the PostgreSQL major (default 15); on 18 the core uuidv7() is measured too
set -euo pipefail
# shellcheck source=pgrx-tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROWS=3000000
ROUNDS=7
MAJOR=15
while [ $# -gt 0 ]; do
  case $1 in
    --quick) ROWS=200000; ROUNDS=3 ;;
    --pg) MAJOR=${2:?--pg needs a major}; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
  shift
done

ensure_setup "$MAJOR"
new_scratch
say "building and installing the release build into PostgreSQL $MAJOR"
(cd "$PROJECT_DIR" && cargo pgrx install --release --pg-config "$PG_CONFIG" --no-default-features --features "pg$MAJOR") \
  >/dev/null 2>"$SCRATCH/install.log" || { cat "$SCRATCH/install.log" >&2; die "cargo pgrx install failed"; }

init_cluster bench "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 1" \
  "snowflake.machine_bits = 1" "snowflake.sequence_bits = 22" "jit = off" "max_parallel_workers_per_gather = 0" \
  "snowflake.public_key = '000102030405060708090a0b0c0d0e0f'"
start_cluster bench
psql_on bench -c "CREATE EXTENSION pg_snowflake" -c "CREATE SEQUENCE seq"

calls=("count(*)" "count(random())" "count(snowflake_nextval())" "count(nextval('seq'))" "count(gen_random_uuid())"
  "count(snowflake_to_public(generate_series))" "count(snowflake_from_public('squg3pzlbqo6m356ttzatppcki'))")
[ "$MAJOR" -ge 18 ] && calls+=("count(uuidv7())")

say "timing ${#calls[@]} calls x $ROUNDS rounds x $ROWS rows"
for _ in $(seq 1 "$ROUNDS"); do
  for call in "${calls[@]}"; do
    psql_on bench -At -c '\timing on' -c "SELECT $call FROM generate_series(1, $ROWS)" \
      | sed -n "s/^Time: \([0-9.]*\) ms.*/\1/p" | sed "s|^|$call\t|"
  done
done >"$SCRATCH/timings.tsv"

mkdir -p "$PROJECT_DIR/target/bench"
report="$PROJECT_DIR/target/bench/per_id_pg$MAJOR.md"
python3 - "$SCRATCH/timings.tsv" "$ROWS" "$ROUNDS" "$MAJOR" "$(nproc)" >"$report" <<'PY'
import statistics, sys
path, rows, rounds, major, cores = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
times = {}
for line in open(path):
    call, ms = line.rstrip("\n").split("\t")
    times.setdefault(call, []).append(float(ms))
def per_row(stat):
    ns = {call: stat(v) * 1e6 / rows for call, v in times.items()}
    loop = ns.pop("count(*)")
    return {call: v - loop for call, v in ns.items()}, loop
med, loop_med = per_row(statistics.median)
low, loop_low = per_row(min)
seq = med["count(nextval('seq'))"]
print(f"Per-id cost, PostgreSQL {major}, {cores} cores, {rows:,} rows x {rounds} interleaved rounds; "
      f"the bare loop (median {loop_med:.0f}, minimum {loop_low:.0f} ns per row) subtracted.\n")
print("| call | ns per id, median | ns per id, minimum | median ratio to nextval(seq) |")
print("|---|---|---|---|")
names = {"count(random())": "`random()` (the floor: a bare built-in call)"}
for call in med:
    name = names.get(call, "`" + call[len("count("):-1] + "`")
    print(f"| {name} | {med[call]:.1f} | {low[call]:.1f} | {med[call] / seq:.2f} |")
PY
cat "$report"
echo "written to ${report#"$PROJECT_DIR"/}"
