#!/usr/bin/env bash
# The whole test suite, set-up included (idempotent, quick when already set up), against every
# supported PostgreSQL (14 to 18) or the ones named. First, once: the checks that need no
# PostgreSQL (pgrx-tests/checks/checks.sh: the core is pure, its unit and property tests, rustfmt, the
# scenario runner). Then for each version:
#   1. clippy with -D warnings, and `cargo pgrx test pgNN`: the in-database tests on a cluster that
#      preloads the library with snowflake.machine_id = 7 (and the shell's few unit tests), run
#      with the README's commands as written (a normal user's, or root's with --runas postgres);
#   2. the cluster scenarios of pgrx-tests/scenarios: each starts clusters configured for it
#      (no preload, machine id unset, bad layouts, each seed layout, a hot standby, eight
#      connections at once) and its output must match pgrx-tests/expected/NAME.out;
#      Then, when the last version tested and the one before it are both tested (17 and 18 in a full
#      run): pg_upgrade from that one to the last (pgrx-tests/major_upgrade/pg_upgrade.sh);
#   3. the packages (pgrx-tests/package.sh) of 15 and of the last version tested (of those tested):
#      their contents (pgrx-tests/packaging/), core scenarios against the package's files in a copy
#      of the tests' PostgreSQL, its library refused by another major, and for 15 the Debian package
#      installed for real into Debian's postgresql-15 and removed (the only step that touches the
#      system's PostgreSQL);
#   4. once, on the last version: the benchmark in quick mode (pgrx-tests/bench/bench.sh --quick), which
#      proves it still runs and that its ids hold the layout's ceiling; no speed figure can fail it.
#
# Usage: bash pgrx-tests/test.sh [--pg 14,15|all] [--packages 15,18|none] [--scenarios] [--accept] [--no-bench] [SCENARIO...]
#   --pg LIST        PostgreSQL majors to test (default: $PG_VERSIONS, else all: 14 15 16 17 18)
#   --packages LIST  majors whose packages step 3 builds and tests (default: see step 3; none skips it)
#   --scenarios      skip the checks and steps 1 and 3
#   --accept         write each scenario's output as its new expected output (review the diff!)
#   --no-bench       skip step 4
#   SCENARIO         run only these scenarios, and skip the checks and steps 1, 3 and 4
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness/lib.sh"

ACCEPT=
NO_BENCH=
SCENARIOS_ONLY=
ONLY=()
VERSIONS=${PG_VERSIONS:-all}
PACKAGES=default
while [ $# -gt 0 ]; do
  case $1 in
    --pg) VERSIONS=${2:?--pg needs a list such as 15 or 14,18 or all}; shift ;;
    --pg=*) VERSIONS=${1#--pg=} ;;
    --packages) PACKAGES=${2:?--packages needs a list such as 15 or 15,18 or none}; shift ;;
    --packages=*) PACKAGES=${1#--packages=} ;;
    --accept) ACCEPT=1 ;;
    --scenarios) SCENARIOS_ONLY=1 ;;
    --no-bench) NO_BENCH=1 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
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
# Step 3's majors: 15 (Debian's server is 15: the real install test) and the last one tested (whose
# release build the benchmark shares), of those tested.
if [ "$PACKAGES" = default ]; then
  PACKAGES=
  if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
    [[ " $VERSIONS " == *" $SYSTEM_PG_MAJOR "* ]] && PACKAGES=$SYSTEM_PG_MAJOR
    last=${VERSIONS##* }
    [ "$last" = "$SYSTEM_PG_MAJOR" ] || PACKAGES="$PACKAGES $last"
  fi
fi
[ "$PACKAGES" = none ] && PACKAGES=
PACKAGES=${PACKAGES//,/ }
for v in $PACKAGES; do
  [[ " $VERSIONS " == *" $v "* ]] || die "--packages $v: PostgreSQL $v is not among the versions tested ($VERSIONS)"
done

# Step 3 also needs `file`, and Debian's own server for the package install test.
if [ -n "$PACKAGES" ]; then
  needed_pkgs="file"
  [[ " $PACKAGES " == *" $SYSTEM_PG_MAJOR "* ]] && needed_pkgs="$needed_pkgs postgresql-$SYSTEM_PG_MAJOR"
  # shellcheck disable=SC2086
  ensure_debian_packages $needed_pkgs
fi
# The pg_auto_failover and pg_partman scenarios (PostgreSQL 15 only) need Debian's packages of
# them, which bring Debian's postgresql-15 along; each scenario copies its extension's files into
# the tests' PostgreSQL 15 (Debian's own files stay as the packages installed them). The patroni
# scenario (15 only) needs Debian's patroni (with its python3-psycopg2 and python3-yaml) and
# etcd-server; it runs them on 127.0.0.1 with the tests' PostgreSQL 15, and installing them
# starts no service of theirs that it uses. The mark_io_faults scenario (15 only) needs strace; the
# manual's site (the manual_site scenario, 15 only) is looked at in Debian's chromium.
[[ " $VERSIONS " == *" 15 "* ]] && ensure_debian_packages postgresql-15-auto-failover postgresql-15-partman patroni etcd-server curl strace chromium prometheus prometheus-postgres-exporter
# shellcheck disable=SC2086
ensure_setup $VERSIONS
new_scratch

# readme_pgrx_test N: the README's `cargo pgrx test` commands (the sh block under its comment
# `<!-- test: cargo pgrx test ... -->`), for PostgreSQL N: one a line.
readme_pgrx_test() {
  awk '/^<!-- test: cargo pgrx test/ { c = 1; next } c == 1 && /^```sh$/ { c = 2; next } c == 2 && /^```$/ { exit } c == 2 { print }' \
    "$PROJECT_DIR/README.md" | sed -E "s/\bpg15\b/pg$1/g; s/-15\b/-$1/g"
}

KIND=scenario
passed=0
failed=0
failed_units=()
checks=skipped
if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
  if bash "$PROJECT_DIR/pgrx-tests/checks/checks.sh"; then checks=ok; else checks=FAILED; fi
fi
for v in $VERSIONS; do
  use_pg "$v"
  if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
    say "PostgreSQL $v: clippy -D warnings"
    (cd "$PROJECT_DIR" && cargo clippy -q --workspace --all-targets --no-default-features --features "pg$v pg_test" -- -D warnings) \
      || failed_units+=("clippy-pg$v")
    say "PostgreSQL $v: in-database tests (cargo pgrx test pg$v), as the README's quick start gives it"
    # The README's commands, run as written (for another major with its number in place of 15):
    # its first line as a normal user; as root (initdb refuses root) the other two, which run the
    # test cluster as `postgres` in a directory it owns (a leftover of an earlier run removed first).
    mapfile -t pgrx_test < <(readme_pgrx_test "$v")
    [ ${#pgrx_test[@]} -eq 3 ] || die "README.md: no block of three commands under <!-- test: cargo pgrx test ... -->"
    if [ "$(id -u)" = 0 ]; then
      rm -rf "/tmp/pg_snowflake-pgrx-test-$v"
      (cd "$PROJECT_DIR" && echo "+ ${pgrx_test[1]}" && bash -ec "${pgrx_test[1]}" && echo "+ ${pgrx_test[2]}" && bash -ec "${pgrx_test[2]}") || failed_units+=("pg$v")
    else
      (cd "$PROJECT_DIR" && echo "+ ${pgrx_test[0]}" && bash -ec "${pgrx_test[0]}") || failed_units+=("pg$v")
    fi
  fi

  install_extension fault_injection
  say "PostgreSQL $v: cluster scenarios (pgrx-tests/scenarios)"
  rm -f "$SCRATCH"/*.log
  for file in $(scenarios_for "$v" "${ONLY[@]}"); do
    if run_scenario "$file"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
done

# Step 2, last: pg_upgrade from the major before the last tested to the last, both tested (so both
# test installations hold the fault_injection build the scenarios installed).
last=${VERSIONS##* }
if [[ " $VERSIONS " == *" $((last - 1)) "* ]] && { [ ${#ONLY[@]} -eq 0 ] || [[ " ${ONLY[*]} " == *" pg_upgrade "* ]]; }; then
  use_pg "$last"
  export OLD_MAJOR=$((last - 1))
  say "pg_upgrade from PostgreSQL $OLD_MAJOR to $last (pgrx-tests/major_upgrade)"
  if run_scenario "$PROJECT_DIR/pgrx-tests/major_upgrade/pg_upgrade.sh"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

# Step 3: the packages. Core scenarios that need no fault injection run against the package's
# files (its release build, its SQL scripts) in a copy of the tests' PostgreSQL.
PACKAGE_SCENARIOS="not_preloaded machine_id_unset one_generator_per_server seed_layout_41_10_12 extension_upgrade"
export PACKAGES_DIR="$PROJECT_DIR/target/packages"
KIND=package
for p in $PACKAGES; do
  say "PostgreSQL $p: packages (pgrx-tests/package.sh --pg $p) and their tests"
  if ! bash "$PROJECT_DIR/pgrx-tests/package.sh" --pg "$p" >"$SCRATCH/package-$p.log" 2>&1; then
    tail -n 40 "$SCRATCH/package-$p.log"
    echo "pg$p package build FAILED"
    failed=$((failed + 1))
    continue
  fi
  tests=("$PROJECT_DIR/pgrx-tests/packaging/package_contents.sh" "$PROJECT_DIR/pgrx-tests/packaging/package_wrong_major.sh")
  [ "$p" = "$SYSTEM_PG_MAJOR" ] && tests+=("$PROJECT_DIR/pgrx-tests/packaging/package_debian_install.sh")
  for file in "${tests[@]}"; do
    use_pg "$p"
    if run_scenario "$file"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
  package_into_copy "$p" "$p" "$SCRATCH/package-pg$p"
  for name in $PACKAGE_SCENARIOS; do
    file=$(ls "$PROJECT_DIR/pgrx-tests/scenarios/$name".*)
    if run_scenario "$file"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
  unset PG_CONFIG_OVERRIDE
done

bench=skipped
if [ ${#ONLY[@]} -eq 0 ] && [ -z "$NO_BENCH" ]; then
  say "PostgreSQL $PG_MAJOR: the benchmark in quick mode (pgrx-tests/bench/bench.sh --quick)"
  if bash "$PROJECT_DIR/pgrx-tests/bench/bench.sh" --quick --pg "$PG_MAJOR" >"$SCRATCH/bench.log" 2>&1; then
    bench=ok
  else
    bench=FAILED
    tail -n 40 "$SCRATCH/bench.log"
  fi
fi

echo "PostgreSQL versions tested: $VERSIONS"
echo "checks without PostgreSQL (pgrx-tests/checks/checks.sh): $checks"
echo "packages built and tested: ${PACKAGES:-none}"
[ ${#failed_units[@]} -eq 0 ] || echo "clippy or cargo pgrx test failed on: ${failed_units[*]}"
echo "scenarios: $passed passed, $failed failed"
echo "benchmark (quick mode, figures not judged): $bench"
[ "$failed" -eq 0 ] && [ ${#failed_units[@]} -eq 0 ] && [ "$bench" != FAILED ] && [ "$checks" != FAILED ]
