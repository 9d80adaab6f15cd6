# The layout's ceiling (sourced by pgrx-tests/bench/bench.sh).
#
# With the default layout (12-bit sequence: 4,096 ids per millisecond per server), several
# sessions mint ids as fast as they can at once, each into its own unlogged table. The ids
# themselves then show how many were minted in each millisecond (all ids of a millisecond share
# its timestamp field), that no millisecond exceeded 2^sequence_bits, and that none repeats.
# Writes $DATA/ceiling_per_ms.tsv (tick, ids in it) and $DATA/ceiling.tsv (name, value).

sessions=4 per_session=2000000
[ -n "$QUICK" ] && per_session=200000
set_and_restart

psql_on bench -c "SELECT snowflake_stats_reset()" >/dev/null
start_ns=$(date +%s%N)
pids=()
for s in $(seq 1 "$sessions"); do
  psql_on bench -c "CREATE UNLOGGED TABLE ceiling_$s AS SELECT snowflake_nextval() AS id FROM generate_series(1, $per_session)" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || die "ceiling: a session failed"; done
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))

union=$(for s in $(seq 1 "$sessions"); do echo "SELECT id FROM ceiling_$s"; done | paste -sd'|' | sed 's/|/ UNION ALL /g')
psql_on bench -At -F $'\t' >"$DATA/ceiling_per_ms.tsv" <<SQL
CREATE UNLOGGED TABLE ceiling_ids AS $union;
SELECT id >> (machine_bits + sequence_bits) AS tick, count(*)
FROM ceiling_ids, snowflake_layout()
GROUP BY 1 ORDER BY 1;
SQL
psql_on bench -At -F $'\t' >"$DATA/ceiling.tsv" <<SQL
SELECT 'sessions', $sessions
UNION ALL SELECT 'elapsed_ms', $elapsed_ms
UNION ALL SELECT 'ids', count(*) FROM ceiling_ids
UNION ALL SELECT 'distinct_ids', count(DISTINCT id) FROM ceiling_ids
UNION ALL SELECT 'sequence_bits', sequence_bits FROM snowflake_layout()
UNION ALL SELECT 'ids_per_tick', ids_per_tick FROM snowflake_layout()
UNION ALL SELECT 'time_unit_ms', time_unit_ms FROM snowflake_layout()
UNION ALL SELECT 'max_sequence_seen', max(sequence) FROM (SELECT (snowflake_decode(id)).sequence FROM ceiling_ids) d
UNION ALL SELECT 'sequence_waits', sequence_waits FROM snowflake_stats();
SQL
psql_on bench -c "DROP TABLE ceiling_ids"
for s in $(seq 1 "$sessions"); do
  psql_on bench -c "DROP TABLE ceiling_$s"
done
