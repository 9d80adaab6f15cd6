# majors: 15 18
# The README, executed (pgrx-tests/readme/check.py): its SQL examples and their output, every row
# of its Errors table (the triggers of pgrx-tests/readme/errors.toml), its Settings table against
# pg_settings, its SQL reference against the catalog, and its benchmark tables against the
# published reports. A difference names the README line. README_ACCEPT=1 writes what the server
# did into the README instead (then review the diff).
check() {
  SCRATCH=$SCRATCH PG_BIN=$PG_BIN PG_CONFIG=$PG_CONFIG PROJECT_DIR=$PROJECT_DIR python3 "$PROJECT_DIR/pgrx-tests/readme/check.py"
}
check

# The negative control: a README that drifted in five places (an example's output, a function's
# volatility, a setting's default, a benchmark figure, an error's hint) fails, naming each line.
[ -z "${README_ACCEPT:-}" ] || exit 0
drifted="$SCRATCH/README.drifted.md"
python3 - "$PROJECT_DIR/README.md" "$drifted" >"$SCRATCH/drift.lines" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
for old, new in [
    (' {"id": "54910556208918528", "ts": "2025-06-01T12:34:56.789Z"', ' {"id": "54910556208918529", "ts": "2025-06-01T12:34:56.789Z"'),
    ("| `snowflake_clock()` | `timestamptz` | VOLATILE,", "| `snowflake_clock()` | `timestamptz` | STABLE,"),
    ("| `snowflake.machine_bits` | 10 |", "| `snowflake.machine_bits` | 11 |"),
    ("| `snowflake_nextval()` | 85 |", "| `snowflake_nextval()` | 58 |"),
    ("negative: check where this value came from.", "negative: look where this value came from."),
]:
    at = [n for n, line in enumerate(lines) if old in line]
    assert len(at) == 1, old
    lines[at[0]] = lines[at[0]].replace(old, new)
    print(at[0] + 1, new.strip(" |")[:40])
open(sys.argv[2], "w").write("\n".join(lines))
PY
for part in blocks reference errors; do
  README_PATH=$drifted README_ONLY=$part check >>"$SCRATCH/drift.out" 2>&1 && echo "the drifted README ($part) passed"
done
# Each drifted line is named by a failure, and no other line is.
named=$(sed -n 's/^README.md:\([0-9]*\): .*/\1/p' "$SCRATCH/drift.out" | sort -n | uniq)
while read -r line what; do
  if grep -qx "$line" <<<"$named"; then echo "drift named at its README line: $what"; else echo "drift NOT named: $what"; fi
done <"$SCRATCH/drift.lines"
echo "failures at other lines: $(grep -cvxF -f <(cut -d' ' -f1 "$SCRATCH/drift.lines") <<<"$named" || true)"
rm -f "$drifted" "$SCRATCH/drift.out" "$SCRATCH/drift.lines"
