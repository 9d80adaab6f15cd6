#!/usr/bin/env bash
# The whole test suite, set-up included (idempotent, quick when already set up), against every
# supported PostgreSQL (14 to 18) or the ones named. First, once: the checks that need no
# PostgreSQL (pgrx-tests/checks.sh: the core is pure, its unit and property tests, rustfmt, the
# scenario runner). Then for each version:
#   1. clippy with -D warnings, and `cargo pgrx test pgNN`: the in-database tests on a cluster that
#      preloads the library with snowflake.machine_id = 7 (and the shell's few unit tests);
#   2. the cluster scenarios of pgrx-tests/scenarios: each starts clusters configured for it
#      (no preload, machine id unset, bad layouts, each seed layout, a hot standby, eight
#      connections at once) and its output must match pgrx-tests/expected/NAME.out;
#   3. once, on the last version: the benchmark in quick mode (pgrx-tests/bench.sh --quick), which
#      proves it still runs and that its ids hold the layout's ceiling; no speed figure can fail it.
#
# Usage: bash pgrx-tests/test.sh [--pg 14,15|all] [--scenarios] [--accept] [--no-bench] [SCENARIO...]
#   --pg LIST    PostgreSQL majors to test (default: $PG_VERSIONS, else all: 14 15 16 17 18)
#   --scenarios  skip the checks and step 1
#   --accept     write each scenario's output as its new expected output (review the diff!)
#   --no-bench   skip step 3
#   SCENARIO     run only these scenarios, and skip the checks and steps 1 and 3
set -euo pipefail
# shellcheck source=pgrx-tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ACCEPT=
NO_BENCH=
SCENARIOS_ONLY=
ONLY=()
VERSIONS=${PG_VERSIONS:-all}
while [ $# -gt 0 ]; do
  case $1 in
    --pg) VERSIONS=${2:?--pg needs a list such as 15 or 14,18 or all}; shift ;;
    --pg=*) VERSIONS=${1#--pg=} ;;
    --accept) ACCEPT=1 ;;
    --scenarios) SCENARIOS_ONLY=1 ;;
    --no-bench) NO_BENCH=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) ONLY+=("$1") ;;
  esac
  shift
done
[ "$VERSIONS" = all ] && VERSIONS=$SUPPORTED_PG_MAJORS
VERSIONS=${VERSIONS//,/ }
for v in $VERSIONS; do
  [[ " $SUPPORTED_PG_MAJORS " == *" $v "* ]] || die "PostgreSQL $v is not supported (supported: $SUPPORTED_PG_MAJORS)"
done

# shellcheck disable=SC2086
ensure_setup $VERSIONS
new_scratch

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
      run_sh_scenario "$file" "$SCRATCH/$name.report" >"$actual" 2>&1 || echo "scenario exited with status $?" >>"$actual"
      stop_all_clusters
      ;;
  esac
  # One expected output for every version, unless a version has its own (NAME.pgNN.out) because
  # it behaves differently, as documented.
  local expected="$PROJECT_DIR/pgrx-tests/expected/$name.out"
  [ -f "$PROJECT_DIR/pgrx-tests/expected/$name.pg$PG_MAJOR.out" ] && expected="$PROJECT_DIR/pgrx-tests/expected/$name.pg$PG_MAJOR.out"
  if [ -n "$ACCEPT" ]; then
    cp "$actual" "$expected"
  fi
  if diff -u "$expected" "$actual" >"$SCRATCH/$name.diff" 2>&1; then
    printf 'pg%s scenario %-40s ok\n' "$PG_MAJOR" "$name"
    # Figures that vary from run to run, reported but not compared (REPORT is set for .sh scenarios).
    [ -f "$SCRATCH/$name.report" ] && sed 's/^/    /' "$SCRATCH/$name.report"
    return 0
  fi
  printf 'pg%s scenario %-40s FAILED\n' "$PG_MAJOR" "$name"
  cat "$SCRATCH/$name.diff"
  for log in "$SCRATCH"/*.log; do
    grep -H -E 'PANIC|FATAL|ERROR|WARNING' "$log" | tail -n 20 || true
  done
  return 1
}

passed=0
failed=0
failed_units=()
checks=skipped
if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
  if bash "$PROJECT_DIR/pgrx-tests/checks.sh"; then checks=ok; else checks=FAILED; fi
fi
for v in $VERSIONS; do
  use_pg "$v"
  if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
    say "PostgreSQL $v: clippy -D warnings"
    (cd "$PROJECT_DIR" && cargo clippy -q --workspace --all-targets --no-default-features --features "pg$v pg_test" -- -D warnings) \
      || failed_units+=("clippy-pg$v")
    say "PostgreSQL $v: in-database tests (cargo pgrx test pg$v)"
    pgdata="$SCRATCH/pgrx-test-data-$v"
    runas=()
    if [ "$(id -u)" = 0 ]; then
      # initdb refuses root; pgrx runs the test cluster as `postgres` (through sudo).
      mkdir -p "$pgdata" && chown postgres: "$pgdata"
      runas=(--runas postgres)
    fi
    (cd "$PROJECT_DIR" && cargo pgrx test "pg$v" "${runas[@]}" --pgdata "$pgdata") || failed_units+=("pg$v")
  fi

  install_extension fault_injection
  say "PostgreSQL $v: cluster scenarios (pgrx-tests/scenarios)"
  rm -f "$SCRATCH"/*.log
  for file in "$PROJECT_DIR"/pgrx-tests/scenarios/*.sql "$PROJECT_DIR"/pgrx-tests/scenarios/*.sh; do
    name=$(basename "${file%.*}")
    if [ ${#ONLY[@]} -gt 0 ] && [[ " ${ONLY[*]} " != *" $name "* ]]; then
      continue
    fi
    # A scenario that does not depend on the major (a real HA engine's package, say) names the
    # majors it runs on in a "# majors: 15 18" line.
    majors=$(sed -n 's/^# majors: //p' "$file")
    if [ -n "$majors" ] && [[ " $majors " != *" $v "* ]]; then
      continue
    fi
    remove_all_clusters
    rm -f "$SCRATCH/$name.report"
    if run_scenario "$file"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
done

bench=skipped
if [ ${#ONLY[@]} -eq 0 ] && [ -z "$NO_BENCH" ]; then
  say "PostgreSQL $PG_MAJOR: the benchmark in quick mode (pgrx-tests/bench.sh --quick)"
  if bash "$PROJECT_DIR/pgrx-tests/bench.sh" --quick --pg "$PG_MAJOR" >"$SCRATCH/bench.log" 2>&1; then
    bench=ok
  else
    bench=FAILED
    tail -n 40 "$SCRATCH/bench.log"
  fi
fi

echo "PostgreSQL versions tested: $VERSIONS"
echo "checks without PostgreSQL (pgrx-tests/checks.sh): $checks"
[ ${#failed_units[@]} -eq 0 ] || echo "clippy or cargo pgrx test failed on: ${failed_units[*]}"
echo "scenarios: $passed passed, $failed failed"
echo "benchmark (quick mode, figures not judged): $bench"
[ "$failed" -eq 0 ] && [ ${#failed_units[@]} -eq 0 ] && [ "$bench" != FAILED ] && [ "$checks" != FAILED ]
