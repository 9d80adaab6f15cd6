# long: half a minute or more, queued first
# Hostile input at the SQL boundary, fuzzed with a fixed seed (pgrx-tests/scenarios/fuzz_sql.py): random
# bigints (negative, 0, the extremes, every power of two) through every decode, extractor, the JSON form and
# preset and through the public ids; random strings (empty, 10 kB, bytes that are not UTF-8,
# mixed case, lookalike characters, any Unicode) through snowflake_from_public() and
# snowflake_try_from_public(); random timestamps (infinity, before the epoch, year 294276, past
# timestamptz) through the time helpers; then random layout settings at start. Properties: the
# server never crashes (no backend ends by a signal, no restart), every refusal is an ERROR with a
# SQLSTATE of its own (never XX000, the SQLSTATE of a Rust panic, nor any other XX or 58), try_
# never raises and agrees with from_, round trips hold. Counts go to the report.
export PGOPTIONS="-c client_min_messages=error"
SEED=20261130
PER_KIND=${FUZZ_PER_KIND:-1500}
init_cluster fuzz "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
  "snowflake.public_key_file = 'snowflake.key'" "include_if_exists = 'fuzz_layout.conf'"
echo 000102030405060708090a0b0c0d0e0f | as_pg_owner tee "$SCRATCH/fuzz/snowflake.key" >/dev/null
as_pg_owner chmod 600 "$SCRATCH/fuzz/snowflake.key"
start_cluster fuzz
create_extension fuzz
psql_on fuzz -q <<'SQL'
CREATE TABLE fuzz_results (n bigserial, fn text, expr text, state text, message text, value text);
-- Runs one case; records 'ok' and its value, or the SQLSTATE and message of its refusal.
CREATE FUNCTION fuzz(fn text, expr text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v text;
    st text;
    msg text;
BEGIN
    EXECUTE 'SELECT row_to_json(t)::text FROM (SELECT ' || expr || ') t' INTO v;
    INSERT INTO fuzz_results (fn, expr, state, value) VALUES (fn, expr, 'ok', v);
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    INSERT INTO fuzz_results (fn, expr, state, message) VALUES (fn, expr, st, msg);
END $$;
SQL
started=$(psql_on fuzz -At -c "SELECT pg_postmaster_start_time()")
t0=$(date +%s)
# The presets are the server's: each is a kind of its own (a new preset adds its own line below).
mapfile -t presets < <(psql_on fuzz -At -c "SELECT name FROM snowflake_presets()")
python3 "$PROJECT_DIR/pgrx-tests/scenarios/fuzz_sql.py" "$SEED" "$PER_KIND" "${presets[@]}" 2>"$SCRATCH/fuzz_cases.log" >"$SCRATCH/fuzz_cases.sql"
psql_on fuzz -q -f "$SCRATCH/fuzz_cases.sql" >/dev/null
t1=$(date +%s)

echo "-- SQL boundary: seed $SEED, $PER_KIND cases of each kind (a fifth of it for each preset and the odd names)"
psql_on fuzz -At -F ' | ' <<'SQL'
-- Per function: how many cases, how many answered, and which SQLSTATEs refused the others (each
-- kind of case draws from its own stream: a new kind changes its own lines only).
SELECT fn, count(*) AS cases, count(*) FILTER (WHERE state = 'ok') AS ok,
       coalesce(string_agg(DISTINCT state, ',') FILTER (WHERE state <> 'ok'), '-') AS refused_with
FROM fuzz_results GROUP BY fn ORDER BY fn;
SELECT 'refusals without a SQLSTATE of their own (XX, 58, empty) or without a message: ' || count(*)
FROM fuzz_results WHERE state <> 'ok' AND (state ~ '^(XX|58)' OR state = '' OR coalesce(message, '') = '');
-- The string input alone comes two cases before try_from_public's.
SELECT 'try_from_public raised on an input that PostgreSQL accepted: ' || count(*)
FROM fuzz_results t JOIN fuzz_results i ON i.n = t.n - 2 AND i.fn = '(the string input alone)'
WHERE t.fn = 'snowflake_try_from_public' AND t.state <> 'ok' AND i.state = 'ok';
SELECT 'try_from_public cases that returned NULL / an id: ' || count(*) FILTER (WHERE value LIKE '%:null}') || ' / ' || count(*) FILTER (WHERE value NOT LIKE '%:null}')
FROM fuzz_results WHERE fn = 'snowflake_try_from_public' AND state = 'ok';
-- from_ and try_ get the same input, one after the other.
SELECT 'from_public and try_from_public disagree: ' || count(*)
FROM fuzz_results f JOIN fuzz_results t ON t.n = f.n + 1 AND f.fn = 'snowflake_from_public' AND t.fn = 'snowflake_try_from_public'
WHERE f.state NOT IN ('ok', '42501') AND t.value NOT LIKE '%:null}'
   OR f.state = 'ok' AND replace(f.value, 'snowflake_from_public', 'x') IS DISTINCT FROM replace(t.value, 'snowflake_try_from_public', 'x');
SELECT 'public id round trips that failed: ' || count(*) FROM fuzz_results WHERE fn = 'round trip' AND state = 'ok' AND value NOT LIKE '%true}';
SELECT 'compose round trips that came back other than machine/sequence: ' || count(*)
FROM fuzz_results WHERE fn = 'snowflake_compose round trip' AND state = 'ok' AND value !~ ':"[0-9]+/[0-9]+"}$' AND expr !~ 'NULL::timestamptz';
-- An altered valid token: what changes only case or surrounding blanks decodes to its id, anything
-- else is refused (from_: 22P02) or NULL (try_); the expression says which it should be.
SELECT 'altered tokens: ' || count(*) || ', answered as expected: ' || count(*) FILTER (WHERE value LIKE '%true}')
       || ', refused by from_public (22P02): ' || count(*) FILTER (WHERE fn LIKE '%from_public' AND fn NOT LIKE '%try%' AND state = '22P02')
FROM fuzz_results WHERE fn LIKE 'altered token%';
SELECT 'altered tokens answered otherwise: ' || count(*) FROM fuzz_results
WHERE fn LIKE 'altered token%' AND NOT (value LIKE '%true}' OR fn = 'altered token, from_public' AND state = '22P02');
SELECT 'negative ids accepted by the server layout: ' || count(*) FROM fuzz_results
WHERE fn IN ('snowflake_timestamp', 'snowflake_machine_id', 'snowflake_sequence') AND state = 'ok' AND expr ~ '\(''-[0-9]';
SELECT 'negative ids (of those above) refused: ' || count(*) FROM fuzz_results
WHERE fn IN ('snowflake_timestamp', 'snowflake_machine_id', 'snowflake_sequence') AND state <> 'ok' AND expr ~ '\(''-[0-9]';
SQL
echo "still the same postmaster: $([ "$(psql_on fuzz -At -c "SELECT pg_postmaster_start_time()")" = "$started" ] && echo true || echo false)"
{ echo "fuzz_sql: $(psql_on fuzz -At -c "SELECT count(*) FROM fuzz_results") cases at the SQL boundary in $((t1 - t0)) s"; } >>"$REPORT"

echo "-- random layout settings at start"
# fuzz_layout.conf is included by postgresql.conf; each round writes one, restarts, and asks.
layouts=$(python3 - "$SEED" <<'PY'
import random, sys
rng = random.Random(int(sys.argv[1]))
vals = {
    "snowflake.machine_bits": ["0", "1", "5", "10", "12", "22", "24", "25", "40", "63", "64", "-1", "abc", "2.5", "''", "99999999999"],
    "snowflake.sequence_bits": ["0", "1", "12", "14", "22", "24", "30", "63", "-3", "x1", "1e3"],
    "snowflake.time_unit": ["0", "1", "10", "1000", "60000", "60001", "-1", "2147483647", "ms"],
    "snowflake.epoch": ["'2025-01-01 00:00:00+00'", "'1970-01-01 00:00:00+00'", "'1969-12-31 23:59:59+00'", "'2025-01-01'",
                        "'9999-01-01 00:00:00+00'", "'garbage'", "''", "'2025-01-01 00:00:00Z'", "'2010-11-04 01:42:54.657+00'",
                        "'2025-13-01 00:00:00+00'", "'infinity'", "'1900-01-01 00:00:00+14:00'"],
    "snowflake.machine_id": ["7", "0", "-1", "1023", "1024", "2147483647", "-2", "seven", "127"],
}
good = {k: [x for x in v if x in ("0", "1", "5", "7", "10", "12", "14", "22", "24", "1000", "60000", "127", "1023",
          "'2025-01-01 00:00:00+00'", "'1970-01-01 00:00:00+00'", "'2025-01-01 00:00:00Z'", "'2010-11-04 01:42:54.657+00'")]
        for k, v in vals.items()}
for r in range(24):
    # Every other round only values that can work (a layout may still be refused as a whole).
    pool = good if r % 2 else vals
    # Quoted, so that every value reaches pg_snowflake (PostgreSQL's own lexer refuses some bare ones).
    quote = lambda x: x if x.startswith("'") else "'" + x + "'"
    chosen = [f"{k} = {quote(rng.choice(v))}" for k, v in pool.items() if rng.random() < 0.7]
    print(" ; ".join(chosen) or "snowflake.machine_id = 7")
PY
)
round=0
while IFS= read -r layout; do
  round=$((round + 1))
  tr ';' '\n' <<<"$layout" | sed 's/^ *//' | as_pg_owner tee "$SCRATCH/fuzz/fuzz_layout.conf" >/dev/null
  # A fresh server each time: a mark written under another layout would refuse them all.
  [ ! -f "$SCRATCH/fuzz/postmaster.pid" ] || stop_cluster fuzz
  rm -f "$SCRATCH/fuzz/pg_snowflake.mark"
  if ! try_start_cluster fuzz; then
    echo "round $round: the server did not start with: $layout"
    continue
  fi
  psql_on fuzz -At -F ' | ' -c "TRUNCATE fuzz_results" -c "
    SELECT fuzz('nextval', 'snowflake_nextval()'), fuzz('layout', '(snowflake_layout()).*'),
           fuzz('stats', '(snowflake_stats()).layout'), fuzz('decode', '(snowflake_decode(4194304)).*'),
           fuzz('from_timestamp', 'snowflake_from_timestamp(now())'), fuzz('compose', 'snowflake_compose(now(), 1, 1)'),
           fuzz('public', 'snowflake_to_public(1)')" >/dev/null
  psql_on fuzz -At -c "
    SELECT 'round $round: ' || string_agg(fn || '=' || CASE WHEN state = 'ok' THEN 'ok' ELSE state END, ' ' ORDER BY n)
           || CASE WHEN bool_or(state ~ '^(XX|58)' OR (state <> 'ok' AND coalesce(message, '') = '')) THEN '  <- NO PROPER SQLSTATE' ELSE '' END
    FROM fuzz_results"
done <<<"$layouts"
stop_cluster fuzz
echo "-- the server log: backends ended by a signal, crash restarts, panics"
{ grep -E 'terminated by signal|was terminated|PANIC|reinitializing|server process .* exited with exit code [^0]' "$SCRATCH/fuzz.log" || true; } | wc -l
echo "fuzz_sql: 24 layouts at start, in $(( $(date +%s) - t1 )) s" >>"$REPORT"
