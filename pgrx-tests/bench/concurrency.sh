# Throughput under concurrency (sourced by pgrx-tests/bench/bench.sh).
#
# pgbench at 1, 4, 16 and 64 clients: `SELECT snowflake_nextval()` against `SELECT 1` (the
# floor: a round trip that does nothing), a sequence's nextval() and gen_random_uuid(); and an
# INSERT of one row into tables keyed by DEFAULT snowflake_nextval(), bigserial and
# gen_random_uuid() (and uuidv7() on PostgreSQL 18). The default layout. Prepared statements, one
# pgbench thread per core, rounds interleaved (every workload at every client count, then again).
# Writes $DATA/concurrency.tsv: workload, clients, round, tps.

clients_list="1 4 16 64" rounds=5 run=(-T 3)
[ -n "$QUICK" ] && clients_list="1 4" rounds=1 run=(-t 300)
set_and_restart

psql_on bench <<'SQL'
CREATE SEQUENCE conc_seq;
CREATE TABLE ins_snowflake (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v int);
CREATE TABLE ins_bigserial (id bigserial PRIMARY KEY, v int);
CREATE TABLE ins_uuidv4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), v int);
SQL
declare -A workloads=(
  [select_1]="SELECT 1;"
  [select_snowflake]="SELECT snowflake_nextval();"
  [select_sequence]="SELECT nextval('conc_seq');"
  [select_uuidv4]="SELECT gen_random_uuid();"
  [insert_snowflake]="INSERT INTO ins_snowflake (v) VALUES (1);"
  [insert_bigserial]="INSERT INTO ins_bigserial (v) VALUES (1);"
  [insert_uuidv4]="INSERT INTO ins_uuidv4 (v) VALUES (1);"
)
if [ "$MAJOR" -ge 18 ]; then
  psql_on bench -c "CREATE TABLE ins_uuidv7 (id uuid PRIMARY KEY DEFAULT uuidv7(), v int)"
  workloads[select_uuidv7]="SELECT uuidv7();"
  workloads[insert_uuidv7]="INSERT INTO ins_uuidv7 (v) VALUES (1);"
fi
for name in "${!workloads[@]}"; do
  echo "${workloads[$name]}" >"$SCRATCH/$name.pgbench"
done

cores=$(nproc)
for round in $(seq 1 "$rounds"); do
  psql_on bench -c "TRUNCATE ins_snowflake, ins_bigserial, ins_uuidv4" -c "CHECKPOINT"
  for clients in $clients_list; do
    for name in $(printf '%s\n' "${!workloads[@]}" | sort); do
      tps=$("$PG_BIN/pgbench" -n -M prepared "${run[@]}" -c "$clients" -j $(( clients < cores ? clients : cores )) \
          -h "$SCRATCH" -p "$(port_of bench)" -U postgres -f "$SCRATCH/$name.pgbench" postgres 2>"$SCRATCH/pgbench.err" \
        | sed -n 's/^tps = \([0-9.]*\) (\(without initial connection time\|excluding connections establishing\)).*/\1/p') \
        || { cat "$SCRATCH/pgbench.err" >&2; die "pgbench failed: $name, $clients clients"; }
      [ -n "$tps" ] || { cat "$SCRATCH/pgbench.err" >&2; die "pgbench printed no tps: $name, $clients clients"; }
      printf '%s\t%s\t%s\t%s\n' "$name" "$clients" "$round" "$tps"
    done
  done
done >"$DATA/concurrency.tsv"
