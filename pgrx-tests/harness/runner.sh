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
# $SCRATCH/NAME.actual and compares it with expected/NAME.out; with ACCEPT set, writes that first.
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
  if [ -n "$ACCEPT" ]; then
    cp "$actual" "$expected"
  fi
  time_step "pg$PG_MAJOR $KIND $name" "$started"
  if diff -u "$expected" "$actual" >"$SCRATCH/$name.diff" 2>&1; then
    printf 'pg%s %s %-40s ok (%ss)\n' "$PG_MAJOR" "$KIND" "$name" "$((SECONDS - started))"
    # Figures that vary from run to run, reported but not compared (REPORT is set for .sh scenarios).
    [ -f "$SCRATCH/$name.report" ] && sed 's/^/    /' "$SCRATCH/$name.report"
    return 0
  fi
  printf 'pg%s %s %-40s FAILED (%ss)\n' "$PG_MAJOR" "$KIND" "$name" "$((SECONDS - started))"
  cat "$SCRATCH/$name.diff"
  for log in "$SCRATCH"/*.log; do
    grep -H -E 'PANIC|FATAL|ERROR|WARNING' "$log" | tail -n 20 || true
  done
  return 1
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
    majors=$(sed -n 's/^# majors: //p' "$file")
    if [ -n "$majors" ] && [[ " $majors " != *" $major "* ]]; then
      continue
    fi
    echo "$file"
  done
}

# Where a run's time goes: time_step LABEL STARTED records the seconds since STARTED (a $SECONDS
# reading) under LABEL, in $SCRATCH/timings; timing_table prints them, the largest first, and the
# total of each kind of step (the label's first word but one: clippy, pgrx_test, build, scenario...).
time_step() {
  [ -n "${SCRATCH:-}" ] && printf '%s\t%s\n' "$((SECONDS - $2))" "$1" >>"$SCRATCH/timings"
  return 0
}

timing_table() {
  [ -f "$SCRATCH/timings" ] || return 0
  echo "where the time went (seconds; steps of 20 s or more, then totals by kind):"
  sort -rn "$SCRATCH/timings" | awk -F'\t' '$1 >= 20 { printf "  %6d  %s\n", $1, $2 }'
  awk -F'\t' '{ split($2, w, " "); k = (w[2] == "" ? w[1] : w[2]); t[k] += $1; n[k]++; all += $1 }
    END { for (k in t) printf "  %6d  all %s (%d)\n", t[k], k, n[k]; printf "  %6d  in all\n", all }' "$SCRATCH/timings" | sort -rn
}
