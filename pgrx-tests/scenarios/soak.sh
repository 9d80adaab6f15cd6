# majors: 15
# long: half a minute or more, queued first
# The soak (issue 58), short and seeded: pgrx-tests/soak/run.sh for 3 minutes at seed 58 (by hand:
# bash pgrx-tests/soak.sh --seed N --minutes 60). etcd's three members (3.4, 3.4, 3.5), each reached
# by each server through a fault-injecting proxy of its own; five servers of the fault_injection
# build in a 4-id space (snowflake.machine_bits = 2): l1, l2 and l3 leasing their machine id, h set
# by hand to 3 with its reservation, s a standby of l1 that the nemesis promotes (then four leasing
# servers share three free ids, so ids move between holders); clients on every server inserting
# with DEFAULT snowflake_nextval() in four connections each, every acknowledged id kept; a nemesis
# drawn from the seed that injects every kind of fault (backends stopped, killed; postmasters
# killed and started; clean restarts; the machine-id worker terminated; etcd members stopped, the
# leader too; the proxies' delays, lost answers and requests, requests applied late, 3.4/3.5/3.6
# error answers, resets; a server cut off from etcd, with a mark write of its own applied late in
# the partition, or with a backend stopped right after loading its grant until the server holds
# an id again; a clock offset; the promotion). The checker then proves, over every acknowledged
# id: none twice; each life of a server above its earlier lives; each leased id within the range of
# one of its own server's holdings of its machine id, by etcd's whole history of claims and marks
# (an id above the mark its machine id's next holder found is caught whether or not that holder
# issued the same id); no claim of a reserved id. The availability of each fault against the
# manual, and the plot, are in target/soak/ci-seed-58/ (report.txt, plot.png); the headline
# figures go to the report.
# Then its negative controls, each a shorter soak with one mechanism switched off on every leasing
# server (the fault_injection build's switches), at a seed whose nemesis reaches it; the checker
# must fail, naming the ids (they go to the report; each run's files in target/soak/control-NAME/):
# - start_grant (snowflake.fault_start_grant: the start before issue 51's fix, a leased server
#   issuing under machine id 0 before its claim): a leased server restarted by the nemesis issues
#   ids under machine id 0 while another server holds it;
# - mark_unguarded (snowflake.fault_mark_unguarded: mark writes guarded by the claim alone): a mark
#   write held by a server's proxies, applied once the next went through and the server was cut
#   off (the nemesis's late_partition), lowers the mark; the server waiting for an id claims the
#   cut-off server's once its lease expires, and finds that mark below the ids issued under it;
# - stale_grant (snowflake.fault_stale_grant: the grant checked as before issue 56's fix): the
#   backend stopped right after loading its grant while its server lost its id to the server
#   waiting for one and claimed another (the nemesis's stall_across_switch) issues, when continued,
#   under the lost id, above the mark its new holder found.
# All three at seed 6, 1.5 minutes each. About 9 minutes in all.
export PGOPTIONS="-c client_min_messages=error"
SEED=58
out="$PROJECT_DIR/target/soak/ci-seed-$SEED"
rc=0
bash "$TESTS_DIR/soak/run.sh" --seed "$SEED" --minutes 3 --out "$out" >"$SCRATCH/soak.out" 2>&1 || rc=$?
echo "the soak ran to its end: $([ "$rc" != 2 ] && echo yes || echo "no (status $rc)")"
[ "$rc" != 2 ] || { tail -n 40 "$SCRATCH/soak.out"; exit 1; }
sed -n 's/^summary: //p' "$out/report.txt"
echo "the checker's verdict: $([ "$rc" = 0 ] && echo "every promise kept" || echo "a promise broken (status $rc)")"
[ "$rc" = 0 ] || { sed -n '/^no id twice/,/^availability/p' "$out/report.txt" | head -n 60 || true; }
{
  sed -n '2,4p' "$out/report.txt"
  grep -E '^faults that cost more' "$out/report.txt"
  echo "the availability of each fault and the plot: $out/report.txt, $out/plot.png"
} >>"$REPORT"

# control NAME SEED MINUTES
control() {
  local name=$1 seed=$2 minutes=$3 out="$PROJECT_DIR/target/soak/control-$1" rc=0
  echo "== negative control $name, seed $seed, $minutes minutes"
  bash "$TESTS_DIR/soak/run.sh" --seed "$seed" --minutes "$minutes" --control "$name" --out "$out" \
    >"$SCRATCH/soak-$name.out" 2>&1 || rc=$?
  echo "the soak ran to its end: $([ "$rc" != 2 ] && echo yes || echo "no (status $rc)")"
  [ "$rc" != 2 ] || { tail -n 40 "$SCRATCH/soak-$name.out"; return 0; }
  echo "the checker failed: $([ "$rc" = 1 ] && echo yes || echo "no (status $rc)")"
  grep '^summary: every id within a holding' "$out/report.txt" | sed 's/^summary: //'
  echo "it printed the seed, the schedule and the line that replays it: $(
    grep -q "^replay: bash pgrx-tests/soak.sh --seed $seed --minutes $minutes --control $name$" "$SCRATCH/soak-$name.out" \
      && grep -q '^  #1 at ' "$SCRATCH/soak-$name.out" && echo yes || echo no)"
  {
    echo "control $name (seed $seed, $minutes min): $(grep -E '^(no id twice|every)[^:]*: FAILED' "$out/report.txt" | paste -sd ';' -)"
    grep -A1 '^every id within a holding.*FAILED' "$out/report.txt" | tail -n 1 | cut -c1-400
  } >>"$REPORT"
}
control start_grant 6 1.5
control mark_unguarded 6 1.5
control stale_grant 6 1.5
