# majors: 15
# long: half a minute or more, queued first
# The README and the manual's pages (docs/*.md), executed (pgrx-tests/checks/readme/check.py): their SQL
# examples and their output, every row of the Errors table (the triggers of
# pgrx-tests/checks/readme/errors.toml), the Settings table against pg_settings, the SQL reference against
# the catalog, and the benchmark tables against the published reports. A difference names the file
# and line. README_ACCEPT=1 writes what the server did into the pages instead (then review the diff).
check() {
  SCRATCH=$SCRATCH PG_BIN=$PG_BIN PG_CONFIG=$PG_CONFIG PROJECT_DIR=$PROJECT_DIR python3 "$PROJECT_DIR/pgrx-tests/checks/readme/check.py"
}
check

# The negative control: a copy of the manual that drifted in eleven places (an example's output on a
# page and in the README, a function's volatility, a setting's default, a benchmark figure, an
# error's hint, a function revoked from PUBLIC whose row no longer says so, the Security
# inventory's row of a function for pg_monitor saying PUBLIC, the README's public id example no
# longer saying which key file it needs: the server has none of its own, the README's install no
# longer setting its own session's search_path: the first example pasted after it fails, a speed
# figure of Choosing an id no longer saying the layout it was measured with) fails, naming each
# file and line.
[ -z "${README_ACCEPT:-}" ] || exit 0
drifted="$SCRATCH/manual.drifted"
rm -rf "$drifted" && mkdir -p "$drifted" && cp -r "$PROJECT_DIR/README.md" "$PROJECT_DIR/docs" "$PROJECT_DIR/mkdocs.yml" "$drifted/"
python3 - "$drifted" >"$SCRATCH/drift.lines" <<'PY'
import glob, os, sys
names = ["README.md"] + sorted(os.path.relpath(p, sys.argv[1]) for p in glob.glob(sys.argv[1] + "/docs/*.md"))
pages = {n: open(os.path.join(sys.argv[1], n)).read().split("\n") for n in names}
for old, new in [
    (" 2026-11-30 04:27:36.731+00 |       7", " 2026-11-30 04:27:36.732+00 |       7"),
    (' {"id": "54910556208918528", "ts": "2025-06-01T12:34:56.789Z"', ' {"id": "54910556208918529", "ts": "2025-06-01T12:34:56.789Z"'),
    ("| `snowflake_clock()` | `timestamptz` | VOLATILE,", "| `snowflake_clock()` | `timestamptz` | STABLE,"),
    ("| `snowflake.machine_bits` | 10 |", "| `snowflake.machine_bits` | 11 |"),
    ("| `snowflake_nextval()` | 30 |", "| `snowflake_nextval()` | 58 |"),
    ("negative: check where this value came from.", "negative: look where this value came from."),
    ("(public-ids-and-security.md#public-ids). Revoked from PUBLIC. |", "(public-ids-and-security.md#public-ids). |"),
    ("| `snowflake_machine_id_status()` | **pg_monitor** (and superusers) |", "| `snowflake_machine_id_status()` | PUBLIC |"),
    ("-- postgresql.conf: snowflake.public_key_file = 'snowflake.key', then a reload;", "-- postgresql.conf: the key file, then a reload;"),
    ('SET search_path = "$user", public, snowflake;     -- this session too', 'SET search_path = "$user", public;     -- this session too'),
    ("per id in one session, on a server with a 22-bit sequence (so that one", "per id in one session, on a server (so that one"),
]:
    at = [(n, i) for n, lines in pages.items() for i, line in enumerate(lines) if old in line]
    assert len(at) == 1, old
    n, i = at[0]
    pages[n][i] = pages[n][i].replace(old, new)
    print(f"{n}:{i + 1}", new.strip(" |")[:40])
for n, lines in pages.items():
    open(os.path.join(sys.argv[1], n), "w").write("\n".join(lines))
PY
for part in blocks reference errors; do
  MANUAL_ROOT=$drifted README_ONLY=$part check >>"$SCRATCH/drift.out" 2>&1 && echo "the drifted manual ($part) passed"
done
# Each drifted line is named by a failure, and no other line is.
named=$(sed -n 's/^\([^ :]*\.md:[0-9]*\): .*/\1/p' "$SCRATCH/drift.out" | sort | uniq)
while read -r line what; do
  if grep -qxF "$line" <<<"$named"; then echo "drift named at its file and line: $what"; else echo "drift NOT named: $what"; fi
done <"$SCRATCH/drift.lines"
echo "failures at other lines: $(grep -cvxF -f <(cut -d' ' -f1 "$SCRATCH/drift.lines") <<<"$named" || true)"
# (KEEP_DRIFT=1: the drifted runs' failures are kept in /tmp/readme_drift.out, to see a line named that should not be.)
[ -n "${KEEP_DRIFT:-}" ] && cp "$SCRATCH/drift.out" /tmp/readme_drift.out
rm -rf "$drifted" "$SCRATCH/drift.out" "$SCRATCH/drift.lines"
