# majors: 15
# pg_partman, a real install (Debian's postgresql-15-partman), keeping a table partitioned BY RANGE
# on its snowflake id: pg_partman's "id" partitioning with an interval of one day's worth of ids,
# computed from snowflake_layout(). Ids of given times (snowflake_compose) land in the partition of
# their day, run_maintenance() creates partitions ahead of the newest data, and both plan-time and
# runtime pruning show in EXPLAIN. Then the generator itself, its clock moved days forward
# (snowflake.fault_clock_offset), mints the later ids, and run_maintenance() follows them.
export PGOPTIONS="-c client_min_messages=warning"

# Debian's package installs pg_partman into Debian's PostgreSQL 15; the tests' PostgreSQL 15 is
# another build of the same major. Its SQL and control files (pg_partman 4.x is PL/pgSQL only; its
# optional background worker is not used here) are copied into the tests' installation, which is
# under the cache dir: Debian's files stay as the package installed them.
ls /usr/share/postgresql/15/extension/pg_partman.control >/dev/null
install -m 644 /usr/share/postgresql/15/extension/pg_partman* "$("$PG_CONFIG" --sharedir)/extension/"

init_cluster pm "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 1"
start_cluster pm
create_extension pm

# The page of the manual with the section "With pg_partman" (its heading at any level).
partman_page=$(cd "$PROJECT_DIR" && grep -lE '^#+ With pg_partman$' README.md $(ls docs/*.md 2>/dev/null))
echo "-- the manual's example ($partman_page, \"With pg_partman\"): its blocks run in order, each one's output compared"
# Each ```sql block of the section, and the output block after it, into files.
python3 - "$PROJECT_DIR/$partman_page" "$SCRATCH/partman_readme" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
i = next(n for n, l in enumerate(lines) if re.fullmatch(r"#+ With pg_partman", l))
end = next((n for n in range(i + 1, len(lines)) if lines[n].startswith("#")), len(lines))
k = 0
while i < end:
    if lines[i].strip() != "```sql":
        i += 1
        continue
    s = e = i + 1
    while lines[e].strip() != "```":
        e += 1
    out, i = [], e + 1
    if lines[e + 1].strip() == "```":
        o = i = e + 2
        while lines[i].strip() != "```":
            i += 1
        out = lines[o:i]
        i += 1
    k += 1
    for ext, text in (("sql", lines[s:e]), ("out", out), ("line", [str(s)])):
        with open(f"{sys.argv[2]}_{k}.{ext}", "w") as f:
            f.write("\n".join(text) + "\n")
PY
blocks=$(ls "$SCRATCH"/partman_readme_*.sql | wc -l)
for k in $(seq 1 "$blocks"); do
  psql_on pm --pset footer=off -f "$SCRATCH/partman_readme_$k.sql" 2>&1 | sed 's/ *$//' | sed '${/^$/d}' >"$SCRATCH/partman_readme_$k.actual" || true
  if diff "$SCRATCH/partman_readme_$k.out" "$SCRATCH/partman_readme_$k.actual" >"$SCRATCH/partman_readme_$k.diff"; then
    echo "block $k of $blocks: output as the page shows it"
  else
    echo "block $k of $blocks ($partman_page line $(cat "$SCRATCH/partman_readme_$k.line")): output differs from the page's"
    cat "$SCRATCH/partman_readme_$k.diff"
  fi
done
rm -f "$SCRATCH"/partman_readme_*
psql_on pm -At -c "SELECT 'pg_partman ' || split_part(extversion, '.', 1) || '.x' FROM pg_extension WHERE extname = 'pg_partman'"
# pg_partman 4.x calls a declarative partition set 'native'; 5.x calls it 'range' (its default).
ptype=$(psql_on pm -At -c "SELECT CASE WHEN extversion < '5' THEN 'native' ELSE 'range' END FROM pg_extension WHERE extname = 'pg_partman'")

# The partitions of a table, their bounds as ids and as times, and their rows.
psql_on pm -q <<'SQL'
CREATE FUNCTION partitions_of(parent regclass)
RETURNS TABLE (partition text, from_ts timestamptz, to_ts timestamptz, rows bigint, outside_bounds bigint)
LANGUAGE plpgsql AS $$
DECLARE p record; b text[];
BEGIN
  FOR p IN SELECT c.oid, c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = parent LOOP
    b := regexp_match(p.bound, 'FROM \(''?(\d+)''?\) TO \(''?(\d+)''?\)');
    partition := p.relname;
    from_ts := snowflake_timestamp(b[1]::bigint);
    to_ts := snowflake_timestamp(b[2]::bigint);
    -- Rows whose time (decoded from the id) is not in [from_ts, to_ts): none, if the interval is right.
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE NOT (snowflake_timestamp(id) >= $1 AND snowflake_timestamp(id) < $2)) FROM %s', p.oid::regclass)
      USING from_ts, to_ts INTO rows, outside_bounds;
    IF b IS NULL THEN from_ts := NULL; to_ts := NULL; END IF;
    RETURN NEXT;
  END LOOP;
END $$;
SQL

echo "-- the page's table, checked"
psql_on pm -a <<'SQL'
SELECT * FROM partitions_of('events') ORDER BY from_ts NULLS LAST;
SELECT count(*) FROM events
WHERE id >= snowflake_from_timestamp('2025-03-06+00') AND id < snowflake_from_timestamp('2025-03-07+00');
-- Plan-time pruning (the IMMUTABLE form, the layout in the call, folds into a constant).
EXPLAIN (COSTS OFF) SELECT count(*) FROM events
WHERE id >= snowflake_from_timestamp('2025-03-02+00', '2025-01-01+00', 10, 12)
  AND id < snowflake_from_timestamp('2025-03-03+00', '2025-01-01+00', 10, 12);
SQL

echo "-- ids minted by the generator, its clock moved days forward"
# The partition set starts on the generator's day D (today, UTC); the generator's clock is then
# set to noon of D+1, then of D+3 (offsets from the real clock, so never near a day's boundary).
# Partitions are shown relative to D.
day0=$(psql_on pm -At -c "SELECT date_trunc('day', clock_timestamp())")
day_of_ids=$(psql_on pm -At -c "SELECT (86400000 / time_unit_ms)::bigint << (machine_bits + sequence_bits) FROM snowflake_layout()")
psql_on pm -q -v ptype="$ptype" -v day0="$day0" -v day_of_ids="$day_of_ids" <<'SQL'
CREATE TABLE ticks (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), day int) PARTITION BY RANGE (id);
SELECT partman.create_parent(p_parent_table := 'public.ticks', p_control := 'id', p_type := :'ptype',
                             p_interval := :'day_of_ids', p_premake := 2,
                             p_start_partition := snowflake_from_timestamp(:'day0')::text) \g /dev/null
CREATE VIEW ticks_partitions AS
SELECT CASE WHEN from_ts IS NULL THEN 'default' ELSE 'D+' || extract(day FROM from_ts - :'day0'::timestamptz) END AS partition,
       rows, outside_bounds,
       CASE WHEN from_ts IS NULL THEN '' ELSE 'D+' || extract(day FROM to_ts - :'day0'::timestamptz) END AS up_to
FROM partitions_of('ticks') ORDER BY from_ts NULLS LAST;
SQL
for d in 1 3; do
  psql_on pm -At -v day0="$day0" <<SQL
SELECT (extract(epoch FROM :'day0'::timestamptz + interval '$d days 12 hours') * 1000
        - extract(epoch FROM clock_timestamp()) * 1000)::int AS offset_ms \\gset
SET snowflake.fault_clock_offset = :offset_ms;
INSERT INTO ticks(day) SELECT $d FROM generate_series(1, 100);
SELECT 'generator at noon of D+$d: 100 ids minted, their time: ' || string_agg(DISTINCT 'D+' || extract(day FROM snowflake_timestamp(id) - :'day0'::timestamptz), ', ')
FROM ticks WHERE day = $d;
SELECT partman.run_maintenance('public.ticks') \g /dev/null
SQL
  psql_on pm -c "SELECT * FROM ticks_partitions"
done
psql_on pm -At -c "SELECT 'rows in the partition of their day: ' || count(*) FILTER (WHERE tableoid::regclass::text = 'ticks_p' || ($day_of_ids * (day + (snowflake_from_timestamp('$day0') / $day_of_ids)))) || ' of ' || count(*) FROM ticks"
