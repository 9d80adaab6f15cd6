# Per-id cost in one session (sourced by pgrx-tests/bench/bench.sh).
#
# Times `SELECT count(f()) FROM generate_series(1, N)` for each call in interleaved rounds and
# subtracts the bare loop, `SELECT count(*) FROM generate_series(1, N)`, of the same round: on a
# shared machine whole rounds run slower or faster, and pairing takes that out. The layout has a 22-bit
# sequence (1 machine bit) so that one session cannot reach the ids-per-millisecond ceiling: this
# measures the cost of a call, not the layout's limit (the ceiling experiment does that).
# Writes $DATA/per_id.tsv: call, round, milliseconds for N rows; $DATA/per_id_rows; and
# $DATA/clock_ns, the cost of one clock read by pg_test_timing.

rows=1000000 rounds=21
[ -n "$QUICK" ] && rows=200000 rounds=3
set_and_restart snowflake.machine_bits=1 snowflake.sequence_bits=22
psql_on bench -c "CREATE SEQUENCE per_id_seq"

calls=("count(*)" "count(random())" "count(snowflake_nextval())" "count(nextval('per_id_seq'))"
  "count(gen_random_uuid())" "count(snowflake_to_public(generate_series))"
  "count(snowflake_from_public('squg3pzlbqo6m356ttzatppcki'))")
[ "$MAJOR" -ge 18 ] && calls+=("count(uuidv7())")
# The physical floor (pgrx-tests/bench/floor/snowflake_floor.c): one vDSO clock read and one
# compare-and-swap on a word of shared memory, in C, built here with PGXS and loaded by its path.
rm -rf "$SCRATCH/floor" && cp -r "$TESTS_DIR/bench/floor" "$SCRATCH/floor"
make -s -C "$SCRATCH/floor" PG_CONFIG="$PG_CONFIG" >"$SCRATCH/floor.log" 2>&1 \
  || { cat "$SCRATCH/floor.log" >&2; die "per_id: the floor function did not build (make, gcc, PGXS)"; }
chmod -R a+rX "$SCRATCH/floor"
psql_on bench -c "CREATE FUNCTION snowflake_floor() RETURNS bigint VOLATILE LANGUAGE c AS '$SCRATCH/floor/snowflake_floor.so', 'snowflake_floor'"
calls+=("count(snowflake_floor())")

echo "$rows" >"$DATA/per_id_rows"
for round in $(seq 1 "$rounds"); do
  for call in "${calls[@]}"; do
    psql_on bench -At -c '\timing on' -c "SELECT $call FROM generate_series(1, $rows)" \
      | sed -n "s/^Time: \([0-9.]*\) ms.*/\1/p" | sed "s|^|$call\t$round\t|"
  done
done >"$DATA/per_id.tsv"
[ "$(wc -l <"$DATA/per_id.tsv")" -eq $(( rounds * ${#calls[@]} )) ] || die "per_id: some timings are missing"
# What one clock read costs on this machine (PostgreSQL's own timing tool, 1 s).
"$PG_BIN/pg_test_timing" -d 1 | sed -n 's/.*loop time including overhead: \([0-9.]*\) ns.*/\1/p' >"$DATA/clock_ns"
[ -s "$DATA/clock_ns" ] || die "per_id: pg_test_timing printed no loop time"
