# shellcheck shell=bash
# The scenario runner: one scenario, run on clusters of its own and compared with its expected
# output; which scenarios run on a major. Sourced by lib.sh.

# run_sh_scenario FILE REPORT: runs a .sh scenario in a bash process of its own, with lib.sh and
# the selected PostgreSQL, stopping at its first failing command. (In a subshell that would not
# hold: test.sh calls its runner from `if`, and bash then ignores `set -e` in everything the call
# runs, subshells included.) REPORT is the file for figures that are reported but not compared.
run_sh_scenario() {
  SCRATCH=${SCRATCH:-} PG_MAJOR=${PG_MAJOR:-} REPORT=$2 bash -euo pipefail -c \
    '. "$1"; [ -z "$PG_MAJOR" ] || use_pg "$PG_MAJOR"; . "$2"' _ "$HARNESS_DIR/lib.sh" "$1"
}

# run_scenario FILE: runs one scenario (on clusters of its own, none left from the one before) into
# $SCRATCH/NAME.actual and compares it with expected/NAME.out; with ACCEPT set, an output that
# differs becomes the expected one (accepted).
# A .sql scenario runs in psql on a cluster configured by its "-- conf: " lines, and its server log
# must hold each of its "-- log: " lines; a .sh scenario runs in bash, with this harness. KIND
# (scenario, package) is printed on its line.
run_scenario() {
  local file=$1 name actual started=$SECONDS
  name=$(basename "${file%.*}")
  actual="$SCRATCH/$name.actual"
  remove_all_clusters
  rm -f "$SCRATCH/$name.report"
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
  local expected="$TESTS_DIR/expected/$name.out"
  [ -f "$TESTS_DIR/expected/$name.pg$PG_MAJOR.out" ] && expected="$TESTS_DIR/expected/$name.pg$PG_MAJOR.out"
  time_step "pg$PG_MAJOR $KIND $name" "$started"
  if diff -u "$expected" "$actual" >"$SCRATCH/$name.diff" 2>&1; then
    printf 'pg%s %s %-40s ok (%ss)\n' "$PG_MAJOR" "$KIND" "$name" "$((SECONDS - started))"
    # Figures that vary from run to run, reported but not compared (REPORT is set for .sh scenarios).
    [ -f "$SCRATCH/$name.report" ] && sed 's/^/    /' "$SCRATCH/$name.report"
    return 0
  fi
  if [ -n "$ACCEPT" ]; then
    accepted "$KIND" "$name" "$actual" "$expected" "$started"
    return 0
  fi
  printf 'pg%s %s %-40s FAILED (%ss)\n' "$PG_MAJOR" "$KIND" "$name" "$((SECONDS - started))"
  cat "$SCRATCH/$name.diff"
  # Named again at the end of the run (test.sh), with the start of its diff, where a reader of the
  # last lines of a long run's output finds it.
  if [ -n "${FAILURES:-}" ]; then
    { printf '== pg%s %s %s FAILED; the start of its diff:\n' "$PG_MAJOR" "$KIND" "$name"
      head -n 30 "$SCRATCH/$name.diff"; } >>"$FAILURES"
  fi
  for log in "$SCRATCH"/*.log; do
    grep -H -E 'PANIC|FATAL|ERROR|WARNING' "$log" 2>/dev/null | tail -n 20 || true
  done
  return 1
}

# accepted KIND NAME ACTUAL EXPECTED STARTED: with --accept, a test whose output differs from its
# expected output: ACTUAL becomes EXPECTED, and its line says so (counted as passed: the run exits 0
# once every output is written; read the diff, git diff, before committing it).
accepted() {
  local changed="a new file"
  [ ! -f "$4" ] || changed="changed lines: $(diff "$4" "$3" | grep -c "^[<>]" || true)"
  mkdir -p "$(dirname "$4")"
  cp "$3" "$4"
  printf 'pg%s %s %-40s accepted (%ss): wrote %s, %s\n' "$PG_MAJOR" "$1" "$2" "$((SECONDS - $5))" \
    "${4#"$PROJECT_DIR"/}" "$changed"
}

# run_regress [NAME...]: the SQL tests of pgrx-tests/regress/sql (or only the NAMEs given), which
# need no settings of their own, run by PostgreSQL's pg_regress (--use-existing) on one cluster
# configured by regress/regress.conf, each in a database of its own; pg_regress compares its output
# with regress/expected/NAME.out. Counts into $passed and $failed; with ACCEPT set, an output that
# differs becomes the expected one (accepted), as a scenario's does.
run_regress() {
  local conf=() files=() f name started rc out="$SCRATCH/regress.out" pg_regress
  pg_regress="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress"
  for f in "$TESTS_DIR"/regress/sql/*.sql; do
    name=$(basename "$f" .sql)
    if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
    files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  mapfile -t conf < <(sed '/^#/d; /^$/d' "$TESTS_DIR/regress/regress.conf")
  remove_all_clusters
  init_cluster regress "${conf[@]}"
  start_cluster regress
  for f in "${files[@]}"; do
    name=$(basename "$f" .sql)
    started=$SECONDS
    rm -rf "$out" && mkdir -p "$out" && chmod 755 "$out"
    [ "$(id -u)" = 0 ] && chown postgres: "$out"
    psql_on regress -c "CREATE DATABASE $name" >/dev/null
    # From the tests' own directory, where psql resolves their \ir includes (they are read on stdin).
    rc=0
    (cd "$TESTS_DIR/regress/sql" && as_pg_owner "$pg_regress" --use-existing --bindir="$PG_BIN" --host="$SCRATCH" \
      --port="$(port_of regress)" --user=postgres --dbname="$name" --inputdir="$TESTS_DIR/regress" \
      --outputdir="$out" "$name") >"$SCRATCH/regress-$name.log" 2>&1 || rc=$?
    time_step "pg$PG_MAJOR regress $name" "$started"
    if [ "$rc" != 0 ] && [ -n "$ACCEPT" ] && [ -f "$out/results/$name.out" ]; then
      accepted regress "$name" "$out/results/$name.out" "$TESTS_DIR/regress/expected/$name.out" "$started"
      passed=$((passed + 1))
    elif [ "$rc" = 0 ]; then
      printf 'pg%s regress %-40s ok (%ss)\n' "$PG_MAJOR" "$name" "$((SECONDS - started))"
      passed=$((passed + 1))
    else
      printf 'pg%s regress %-40s FAILED (%ss)\n' "$PG_MAJOR" "$name" "$((SECONDS - started))"
      cat "$out/regression.diffs" 2>/dev/null || cat "$SCRATCH/regress-$name.log"
      failed=$((failed + 1))
    fi
  done
  stop_cluster regress
}

# scenarios_for MAJOR [NAME...]: the scenarios of scenarios/ (NAME.sql or NAME.sh) that run on
# PostgreSQL MAJOR, or only the NAMEs given. A scenario that does not depend on the major (a real
# HA engine's package, say) names the majors it runs on in a "# majors: 15 18" line.
scenarios_for() {
  local major=$1 file name majors
  shift
  for file in "$TESTS_DIR"/scenarios/*.sql "$TESTS_DIR"/scenarios/*.sh; do
    name=$(basename "${file%.*}")
    if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then
      continue
    fi
    majors=$(scenario_majors "$file")
    [ "$majors" = all ] && majors=$SUPPORTED_PG_MAJORS
    if [[ " $majors " != *" $major "* ]]; then
      continue
    fi
    echo "$file"
  done
}

# check_selection VERSIONS NAME...: refuses (exit 1, on stderr) a name that is no test (a scenario,
# a pg_regress test or pg_upgrade), with the names closest to it, and a test that runs on none of
# VERSIONS (its majors said), so that a misspelt or idle name is an error, never "0 passed".
# (Regress tests run on $DEFAULT_MAJORS, pg_upgrade needs the last major tested and the one before.)
check_selection() {
  local versions=$1 name file majors v runs problems=()
  shift
  for name; do
    runs=
    file=$(ls "$TESTS_DIR/scenarios/$name".sql "$TESTS_DIR/scenarios/$name".sh 2>/dev/null | head -n 1 || true)
    if [ -n "$file" ]; then
      majors=$(scenario_majors "$file")
      [ "$majors" = all ] && majors=$SUPPORTED_PG_MAJORS
    elif [ -f "$TESTS_DIR/regress/sql/$name.sql" ]; then
      majors=${DEFAULT_MAJORS:-15 18}
    elif [ "$name" = pg_upgrade ]; then
      majors=
      v=${versions##* }
      [[ " $versions " == *" $((v - 1)) "* ]] && majors=$v
    else
      problems+=("$name is no test: $(closest_tests "$name")")
      continue
    fi
    for v in $versions; do [[ " $majors " == *" $v "* ]] && runs=1; done
    if [ -z "$runs" ] && [ -n "$majors" ]; then
      problems+=("$name runs on none of the majors tested ($versions): it runs on $majors")
    elif [ -z "$runs" ]; then
      problems+=("$name runs on none of the majors tested ($versions): it needs the last major tested and the one before (--pg 17,18)")
    fi
  done
  [ ${#problems[@]} -eq 0 ] && return 0
  printf 'error: %s\n' "${problems[@]}" >&2
  return 1
}

# closest_tests NAME: the names of tests most like NAME, or where they are listed.
closest_tests() {
  local names
  names=$( { ls "$TESTS_DIR/scenarios" "$TESTS_DIR/regress/sql"; echo pg_upgrade.sh; } | sed -n 's/\.\(sh\|sql\)$//p' | sort -u)
  python3 -c 'import difflib, sys
near = difflib.get_close_matches(sys.argv[1], sys.argv[2].split(), n=3, cutoff=0.6)
print("did you mean " + " or ".join(near) + "?" if near else "the tests are pgrx-tests/scenarios/*.sh|sql and pgrx-tests/regress/sql/*.sql")' "$1" "$names"
}

# scenario_majors FILE: the majors a scenario runs on: its "# majors: " line ("-- majors: " in a
# .sql scenario), a list or "all" (what it tests differs by major: the WAL, shared memory, the
# generated SQL); without one, $DEFAULT_MAJORS (test.sh: 15 and 18 of those tested; else 15 18).
scenario_majors() {
  local majors
  majors=$(sed -n 's/^\(#\|--\) majors: \([^(]*\).*/\2/p' "$1" | head -n 1)
  majors=${majors% }
  echo "${majors:-${DEFAULT_MAJORS:-15 18}}"
}

# run_scenarios FILE...: runs these scenarios, counting into $passed and $failed, in lanes of
# their own (each lane a scratch dir of its own: its clusters, sockets and logs; their lines
# printed lane by lane when all are done). $SCENARIO_LANES lanes (default 2) take the next
# scenario from one queue as each finishes (those marked "# long" at its head); those marked
# "# alone" (real HA engines, timed faults, a worker's timeliness) run after all the lanes, one
# after the other, with no other scenario beside them (test.sh's background builds go on, at nice
# 19). SCENARIO_LANES=1 runs them all one after the other.
run_scenarios() {
  local lanes=${SCENARIO_LANES:-2} alone=() shared=() f i lane pids=() queue="$SCRATCH/queue"
  for f; do
    if grep -qE '^(#|--) alone' "$f"; then alone+=("$f"); else shared+=("$f"); fi
  done
  # Those marked "# long" (half a minute or more) first, so that none starts last.
  { for f in "${shared[@]}"; do grep -qE '^(#|--) long' "$f" && echo "$f"; done
    for f in "${shared[@]}"; do grep -qE '^(#|--) long' "$f" || echo "$f"; done; } >"$queue"
  echo 0 >"$queue.next"
  for ((i = 0; i < lanes; i++)); do
    lane="$SCRATCH/lane$i"
    mkdir -p "$lane" && chmod 755 "$lane"
    [ "$(id -u)" = 0 ] && chown postgres: "$lane"
    (
      SCRATCH=$lane
      while f=$(queue_next "$queue") && [ -n "$f" ]; do run_scenario "$f" || true; done
    ) >"$lane.out" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || true; done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    cat "$SCRATCH/lane$i.out"
    passed=$((passed + $(grep -cE "^pg[0-9]+ [a-z]+ +[a-z0-9_]+ +(ok|accepted) \(" "$SCRATCH/lane$i.out" || true)))
    failed=$((failed + $(grep -cE "^pg[0-9]+ [a-z]+ +[a-z0-9_]+ +FAILED \(" "$SCRATCH/lane$i.out" || true)))
    [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH/lane$i" "$SCRATCH/lane$i.out"
  done
  rm -f "$queue" "$queue.next" "$queue.lock"
  for f in "${alone[@]}"; do
    if run_scenario "$f"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
}

# queue_next QUEUE: the next line of file QUEUE (empty when none is left), each line given once
# among the lanes (QUEUE.next counts them, under a lock).
queue_next() {
  local n
  {
    flock 9
    n=$(cat "$1.next")
    echo $((n + 1)) >"$1.next"
  } 9>>"$1.lock"
  sed -n "$((n + 1))p" "$1"
}

# Where a run's time goes: time_step LABEL STARTED records the seconds since STARTED (a $SECONDS
# reading) under LABEL, in $TIMINGS; timing_table prints them, the largest first, and the total of
# each kind of step (the word after "pgNN": clippy, pgrx_test, build, scenario...; else the first).
time_step() {
  local file=${TIMINGS:-${SCRATCH:-}/timings}
  [ -n "${TIMINGS:-${SCRATCH:-}}" ] && printf '%s\t%s\n' "$((SECONDS - $2))" "$1" >>"$file"
  return 0
}

timing_table() {
  [ -f "$TIMINGS" ] || return 0
  echo "where the time went (seconds; steps of 20 s or more, then totals by kind):"
  sort -rn "$TIMINGS" | awk -F'\t' '$1 >= 20 { printf "  %6d  %s\n", $1, $2 }'
  awk -F'\t' '{ split($2, w, " "); k = (w[1] ~ /^pg[0-9]+$/ ? w[2] : w[1]); t[k] += $1; n[k]++; all += $1 }
    END { for (k in t) printf "  %6d  all %s (%d)\n", t[k], k, n[k]; printf "  %6d  steps in all (scenarios in lanes overlap)\n", all }' "$TIMINGS" | sort -rn
}
