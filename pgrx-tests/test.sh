#!/usr/bin/env bash
# The whole test suite, set-up included (idempotent, quick when already set up):
#   1. `cargo pgrx test`: the pure-Rust unit and property tests, and the in-database tests on a
#      cluster that preloads the library with snowflake.machine_id = 7;
#   2. the cluster scenarios of pgrx-tests/scenarios: each starts clusters configured for it
#      (no preload, machine id unset, bad layouts, each seed layout, a hot standby, eight
#      connections at once) and its output must match pgrx-tests/expected/NAME.out.
#
# Usage: bash pgrx-tests/test.sh [--scenarios] [--accept] [SCENARIO...]
#   --scenarios  skip step 1
#   --accept     write each scenario's output as its new expected output (review the diff!)
#   SCENARIO     run only these scenarios, and skip step 1
set -euo pipefail
# shellcheck source=pgrx-tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ACCEPT=
SCENARIOS_ONLY=
ONLY=()
for arg in "$@"; do
  case $arg in
    --accept) ACCEPT=1 ;;
    --scenarios) SCENARIOS_ONLY=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) ONLY+=("$arg") ;;
  esac
done

ensure_setup
new_scratch

if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
  say "unit, property and in-database tests: cargo pgrx test pg$PG_MAJOR"
  pgdata="$SCRATCH/pgrx-test-data"
  if [ "$(id -u)" = 0 ]; then
    # initdb refuses root; pgrx runs the test cluster as `postgres` (through sudo).
    mkdir -p "$pgdata" && chown postgres: "$pgdata"
    (cd "$PROJECT_DIR" && cargo pgrx test "pg$PG_MAJOR" --runas postgres --pgdata "$pgdata")
  else
    (cd "$PROJECT_DIR" && cargo pgrx test "pg$PG_MAJOR" --pgdata "$pgdata")
  fi
fi

install_extension

# run_scenario FILE: runs one scenario into $SCRATCH/NAME.actual and compares it with the expected.
run_scenario() {
  local file=$1 name actual
  name=$(basename "${file%.*}")
  actual="$SCRATCH/$name.actual"
  case $file in
    *.sql)
      local conf=() patterns=()
      mapfile -t conf < <(sed -n 's/^-- conf: //p' "$file")
      mapfile -t patterns < <(sed -n 's/^-- log: //p' "$file")
      init_cluster "$name" "${conf[@]}"
      start_cluster "$name"
      psql_on "$name" -a -f "$file" >"$actual" 2>&1 || echo "psql exited with status $?" >>"$actual"
      stop_cluster "$name"
      local p
      for p in "${patterns[@]}"; do
        grep -qF -- "$p" "$SCRATCH/$name.log" || echo "the server log lacks: $p" >>"$actual"
      done
      ;;
    *.sh)
      # shellcheck disable=SC1090
      (set -euo pipefail; . "$file") >"$actual" 2>&1 || echo "scenario exited with status $?" >>"$actual"
      stop_all_clusters
      ;;
  esac
  local expected="$PROJECT_DIR/pgrx-tests/expected/$name.out"
  if [ -n "$ACCEPT" ]; then
    cp "$actual" "$expected"
  fi
  if diff -u "$expected" "$actual" >"$SCRATCH/$name.diff" 2>&1; then
    printf 'scenario %-40s ok\n' "$name"
    return 0
  fi
  printf 'scenario %-40s FAILED\n' "$name"
  cat "$SCRATCH/$name.diff"
  for log in "$SCRATCH"/*.log; do
    grep -H -E 'PANIC|FATAL|ERROR|WARNING' "$log" | tail -n 20 || true
  done
  return 1
}

say "cluster scenarios (pgrx-tests/scenarios)"
passed=0
failed=0
for file in "$PROJECT_DIR"/pgrx-tests/scenarios/*.sql "$PROJECT_DIR"/pgrx-tests/scenarios/*.sh; do
  name=$(basename "${file%.*}")
  if [ ${#ONLY[@]} -gt 0 ] && [[ ! " ${ONLY[*]} " == *" $name "* ]]; then
    continue
  fi
  if run_scenario "$file"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "scenarios: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
