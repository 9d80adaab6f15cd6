#!/usr/bin/env bash
# The checkers' own tests: each check of checks.sh (and the scenario runner) run on a copy with
# faults planted, each of which it must report, at its file and line where it names one. They test
# the checkers, not the project: test.sh runs them as a step of their own, once in a full run, and
# in --quick only when a file under pgrx-tests/checks/ or the runner has changed since the last
# commit. (The README checker's own negative control, a drifted copy of the manual, is part of the
# readme scenario, since it needs a server.)
#   1. the scenario runner stops at a scenario's first failing command; the test command refuses a
#      misspelt name and a selection that runs nothing; the SQL fuzzer's cases with one more preset
#      differ only by that preset's (each kind its own random stream);
#   2. the cycle check sees a cycle through an inline module's `super::super::`, and the order check
#      a core module that uses one listed below it in lib.rs;
#   3. upgrade_copies.py sees a copy of a file that differs, and a description of sql/comments.sql
#      that differs, at its line;
#   4. install_way.py finds three plain installs planted in a pg_regress test, a .sh scenario and
#      the README, and exactly those;
#   5. no_installs.py finds an install planted in a scenario, not one named in a comment;
#   6. lists.py, on one copy with a preset added to the code and twelve stale places planted (a
#      list of presets in the prose, an action dropped, a setting, a function, a test), names each
#      at its line (and nothing else);
#   7. changelog.py, errors_page.py, manual_prose.py, mirrored_blocks.py, client_versions.py and
#      clients/generate.py --check, on one copy with 23 faults planted, name each (and nothing else).
#
# Usage: bash pgrx-tests/checks/self_tests.sh
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
cd "$PROJECT_DIR"
failed=0
fail() { echo "self-test FAILED: $*"; failed=1; }

say "the scenario runner stops at the first failing command"
probe=$(mktemp -d)
printf 'echo before\nfalse\necho after\n' >"$probe/stops.sh"
out=$(run_sh_scenario "$probe/stops.sh" /dev/null 2>&1 || echo "exit $?")
rm -rf "$probe"
[ "$out" = $'before\nexit 1' ] || fail "a scenario went on after a failing command: got: $out"

say "the test command refuses a misspelt name and a selection that runs nothing"
# (Before any set-up: these take a second.)
out=$(bash pgrx-tests/test.sh --pg 15 immutable_layout 2>&1 || echo "exit $?")
[[ $out == *"immutable_layout is no test: did you mean immutable_layouts?"*"exit 1" ]] || fail "a misspelt name was not refused: $out"
out=$(bash pgrx-tests/test.sh --pg 14 patroni 2>&1 || echo "exit $?")
[[ $out == *"patroni runs on none of the majors tested (14): it runs on 15"*"exit 1" ]] || fail "a selection that runs nothing was not refused: $out"
out=$(bash pgrx-tests/test.sh --pg 18 pg_upgrade 2>&1 || echo "exit $?")
[[ $out == *"pg_upgrade runs on none of the majors tested (18)"*"exit 1" ]] || fail "pg_upgrade with one major was not refused: $out"

say "the SQL fuzzer: a new preset changes only its own cases (fuzz_sql.py)"
# Each kind of case draws from its own stream: the cases with one more preset are the same, but
# that preset's. (With one stream for all, every kind after it would change.)
probe=$(mktemp -d)
python3 pgrx-tests/scenarios/fuzz_sql.py 7 40 twitter discord >"$probe/a.sql" 2>/dev/null
python3 pgrx-tests/scenarios/fuzz_sql.py 7 40 twitter planted discord >"$probe/b.sql" 2>/dev/null
changed=$(diff "$probe/a.sql" "$probe/b.sql" | grep '^[<>] SELECT' || true)
rm -rf "$probe"
[ -n "$changed" ] && ! grep -qv "text): planted'" <<<"$changed" \
  || fail "a new preset changed the fuzzer's other cases, or none (got: $(head -n 3 <<<"$changed"))"

say "the cycle and order checks see planted faults (module_cycles.py)"
probe=$(mktemp -d)
printf 'use super::b::g;\npub fn f() { g() }\n' >"$probe/a.rs"
printf 'pub fn g() {}\nmod inner {\n    pub fn h() { super::super::a::f() }\n}\n' >"$probe/b.rs"
out=$(python3 pgrx-tests/checks/module_cycles.py "$probe" super:: 2>&1 || true)
[[ $out == *"import cycle: a -> b -> a"* ]] || fail "the cycle check missed a cycle through super::super:: (got: $out)"
rm -f "$probe"/*.rs
printf '//! - [`b`]: second\n//! - [`a`]: first\npub mod a;\npub mod b;\n' >"$probe/lib.rs"
printf 'pub fn f() {}\n' >"$probe/a.rs"
printf 'use crate::a::f;\npub fn g() { f() }\n' >"$probe/b.rs"
out=$(python3 pgrx-tests/checks/module_cycles.py "$probe" crate:: --order "$probe/lib.rs" 2>&1 || true)
[[ $out == *"b uses a, which is listed below it"* ]] || fail "the order check missed a module using one listed below it (got: $out)"
rm -rf "$probe"

say "upgrade_copies.py sees a changed copy"
probe=$(mktemp -d)
mkdir "$probe/sql"
cp Cargo.toml "$probe/"
cp sql/*.sql "$probe/sql/"
sed -i '0,/RAISE EXCEPTION/s//RAISE WARNING/' "$probe"/sql/convert_column.sql
# A description changed in sql/comments.sql and not in the upgrade script's copy of it.
sed -i "s/'The machine field of an id, under a preset/'The machine id field of an id, under a preset/" "$probe"/sql/comments.sql
at=$(grep -n "^COMMENT ON FUNCTION snowflake_machine_id(bigint, text)" sql/pg_snowflake--0.1.0--0.2.0.sql | cut -d: -f1)
out=$(python3 pgrx-tests/checks/upgrade_copies.py "$probe" 2>&1 || echo "exit $?")
rm -rf "$probe"
[[ $out == *"copy of sql/convert_column.sql differs"*"exit 1" ]] || fail "upgrade_copies.py missed a changed source (got: $out)"
[[ $out == *"sql/pg_snowflake--0.1.0--0.2.0.sql:$at: the description of FUNCTION snowflake_machine_id(bigint, text) differs"* ]] \
  || fail "upgrade_copies.py missed a changed description (got: $out)"

say "install_way.py finds three planted installs into public"
# Its negative control: a copy with a plain CREATE EXTENSION planted in a .sql scenario, a .sh
# scenario and the README's first block fails at exactly those three lines.
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests/harness"
cp -r README.md docs "$probe/" && cp -r pgrx-tests/scenarios pgrx-tests/regress "$probe/pgrx-tests/" && cp -r pgrx-tests/harness/sql "$probe/pgrx-tests/harness/"
sed -i 's|^\\ir ../../harness/sql/create_extension.sql$|CREATE EXTENSION pg_snowflake;|' "$probe/pgrx-tests/regress/sql/json_ids.sql"
sed -i 's|^create_extension main$|psql_on main -c "CREATE EXTENSION pg_snowflake"|' "$probe/pgrx-tests/scenarios/lease_worker.sh"
sed -i '0,/^CREATE TABLE orders/s//CREATE EXTENSION IF NOT EXISTS pg_snowflake;\n&/' "$probe/README.md"
planted=$(python3 pgrx-tests/checks/install_way.py "$probe" 2>&1 | sed -n 's/: creates pg_snowflake without SCHEMA snowflake.*//p' | sed 's/:[0-9]*$//' | sort | tr '\n' ' ' || true)
rm -rf "$probe"
[ "$planted" = "README.md pgrx-tests/regress/sql/json_ids.sql pgrx-tests/scenarios/lease_worker.sh " ] \
  || fail "install_way.py's negative control: three planted installs into public, found: $planted"

say "no_installs.py finds a planted install"
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests/scenarios"
printf '# majors: 15\nensure_debian_packages libfoo\necho ok  # apt-get install is named in a comment only\n' >"$probe/pgrx-tests/scenarios/x.sh"
out=$(python3 pgrx-tests/checks/no_installs.py "$probe" 2>&1 || true)
rm -rf "$probe"
[[ $out == "pgrx-tests/scenarios/x.sh:2: installs in a scenario"* && $out != *"x.sh:3"* ]] || fail "no_installs.py's negative control (got: $out)"

say "lists.py names every stale copy of a list planted in a copy of the checkout"
# Its negative control: a preset added to the code, an action dropped from a copy of the actions, a
# stale list of presets in the prose, a setting and a function left out of (or added to) the pages.
probe=$(mktemp -d)
git ls-files -z | xargs -0 cp --parents -t "$probe" 2>/dev/null || true
cp pgrx-tests/checks/lists.py "$probe/pgrx-tests/checks/"
python3 - "$probe" >"$probe/planted" <<'PY'
import re, sys
root = sys.argv[1]
def plant(name, old, new, what, where=None):
    """Replaces old (once, and it must be there once); prints FILE:LINE WHAT, the line of `where`
    (a text of the result) or of the change."""
    path = f"{root}/{name}"
    text = open(path).read()
    assert text.count(old) == 1, (name, old)
    text = text.replace(old, new)
    open(path, "w").write(text)
    at = text.index(where if where else new)
    print(f"{name}:{text[:at].count(chr(10)) + 1} {what}")
# A function's row, inventory row and description gone (first: the lines below are counted after).
for name, row in (("docs/sql-reference.md", "the SQL reference lacks snowflake_presets()"),
                  ("docs/public-ids-and-security.md", "the inventory lacks snowflake_presets()")):
    text = open(f"{root}/{name}").read()
    text = re.sub(r"\n\| `snowflake_presets\(\)` \|[^\n]*", "", text, count=1)
    open(f"{root}/{name}", "w").write(text)
    print(f"{name} {row}")
text = open(f"{root}/sql/comments.sql").read()
text = re.sub(r"COMMENT ON FUNCTION snowflake_presets\(\) IS\n[^\n]*\n", "", text, count=1)
open(f"{root}/sql/comments.sql", "w").write(text)
print("sql/comments.sql:1 no description of snowflake_presets()")
# A list of the presets in the prose, then a preset added to the code: the list, the manual's
# blocks and the fuzzer's expected output are now stale; an action dropped from its description.
real = re.findall(r'name: "(\w+)"', open(f"{root}/src/core/src/presets.rs").read().split("pub const PRESETS")[1])
with open(f"{root}/docs/faq.md", "a") as f:
    f.write(f"\nThe presets: {', '.join(real)}.\n")  # (written before the planted preset is added)
print(f"docs/faq.md:{open(f'{root}/docs/faq.md').read().count(chr(10))} a stale list of the presets")
# A preset added to the code: the manual's block and the fuzzer's expected output are now stale.
path = f"{root}/src/core/src/presets.rs"
text = open(path).read()
text = text.replace("\n];", '\n    Preset {\n        name: "planted",\n        epoch_ms: 0,\n        tick_ms: 1,\n'
                    '        timestamp_bits: 41,\n        machine_bits: 10,\n        sequence_bits: 12,\n'
                    '        sequence_above_machine: false,\n        source: "planted",\n        example: None,\n    },\n];', 1)
open(path, "w").write(text)
ref = open(f"{root}/docs/sql-reference.md").read().split("\n")
block = ref.index("SELECT name, epoch, fields FROM snowflake_presets();")
print(f"docs/sql-reference.md:{block + 4} the presets block lacks the preset planted")
print(f"docs/sql-reference.md:{ref.index('SELECT name, source FROM snowflake_presets();') + 4} the sources block lacks the preset planted")
fuzz = open(f"{root}/pgrx-tests/expected/fuzz_sql.out").read().split("\n")
print(f"pgrx-tests/expected/fuzz_sql.out:{next(i for i, l in enumerate(fuzz) if any(n in l for n in real)) + 1} a list of the presets without planted")
plant("sql/comments.sql", "(max, min, lock, hold,", "(max, min, hold,", "a list of the actions without lock")
# A test's line of docs/tests.md renamed (no such test, and the real one missing).
plant("docs/tests.md", "- `time_unit_10`: ", "- `time_unit_ten`: ", "no such test")
lines = open(f"{root}/docs/tests.md").read().split("\n")
print(f"docs/tests.md:{lines.index(next(l for l in lines if l.startswith('- `time_unit_ten`'))) + 1} the list lacks time_unit_10 (named at the line after it)")
# A setting's row renamed (no such setting, and the real one missing).
plant("docs/settings.md", "| `snowflake.lease_sync` |", "| `snowflake.lease_syncs` |", "no such setting")
lines = open(f"{root}/docs/settings.md").read().split("\n")
print(f"docs/settings.md:{max(i for i, l in enumerate(lines) if l.startswith('| `snowflake.')) + 2} the table lacks snowflake.lease_sync")
PY
out=$(python3 pgrx-tests/checks/lists.py "$probe" 2>&1 || true)
while read -r at what; do
  if [[ $at == *:* ]]; then grep -q "^$at: " <<<"$out" || fail "lists.py did not name the planted fault at $at ($what): $out"; fi
done <"$probe/planted"
for want in "the SQL reference lacks snowflake_presets()" "the inventory \"Who may call what\" lacks snowflake_presets()" \
            "no description (COMMENT ON FUNCTION) of snowflake_presets()" "the Settings table lacks snowflake.lease_sync" \
            "snowflake.lease_syncs is no setting" "without planted" "without lock" \
            "the list of tests lacks time_unit_10" "time_unit_ten is no test"; do
  grep -qF "$want" <<<"$out" || fail "lists.py did not name: $want (got: $out)"
done
[ "$(grep -c '^[^ ]*:[0-9]*: ' <<<"$out")" = 12 ] || fail "the planted faults make 12 failures, not: $out"
rm -rf "$probe"

say "the manual's checks (9 to 13 and 15 of checks.sh) name 23 planted faults"
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests/checks"
cp -r README.md CHANGELOG.md Cargo.toml LICENSE mkdocs.yml docs sql src monitoring clients "$probe/"
cp -r pgrx-tests/scenarios pgrx-tests/expected "$probe/pgrx-tests/" && cp -r pgrx-tests/checks/sql-snapshot "$probe/pgrx-tests/checks/"
mkdir -p "$probe/pgrx-tests/checks/readme/clients/rust"
cp pgrx-tests/checks/readme/clients/{requirements.txt,requirements-older.txt,package.json} "$probe/pgrx-tests/checks/readme/clients/"
cp pgrx-tests/checks/readme/clients/rust/Cargo.lock "$probe/pgrx-tests/checks/readme/clients/rust/"
python3 - "$probe" >"$probe/planted" <<'PY'
import re, sys
root = sys.argv[1]
def plant(name, old, new, what, count=1, line=True):
    """Replaces the first of `count` occurrences; prints FILE:LINE WHAT (FILE WHAT: named otherwise)."""
    path = f"{root}/{name}"
    text = open(path).read()
    assert text.count(old) == count, (name, old)
    at = text.index(old)
    open(path, "w").write(text.replace(old, new, 1))
    print(f"{name}:{text[:at].count(chr(10)) + 1} {what}" if line else f"{name} {what}")
# 9. CHANGELOG.md: a column, a function, a setting, a privilege left out (named by its section);
# Upgrading's summary without a setting of the changelog's.
plant("CHANGELOG.md", "`clock_waits` and ", "", "a statistics column", line=False)
plant("CHANGELOG.md", "`snowflake_to_jsonb(bigint)`", "", "a function", line=False)
plant("CHANGELOG.md", "  `snowflake.lease_sync` (leases confirmed by the synchronous standbys),\n", "", "a setting", line=False)
plant("CHANGELOG.md", "`snowflake_internal.peer_deadline(int)`. Grant", "the deadline. Grant", "a privilege", line=False)
plant("docs/upgrading.md", "`snowflake.max_clock_jump`,\n", "the clock jump guard,\n", "a setting Upgrading no longer names", line=False)
# 10. the Errors page: a row gone, a SQLSTATE wrong, the shell's own error gone, a reason of a
# machine id source gone, a reason a public id is refused for gone.
text = open(f"{root}/docs/errors.md").read()
for pattern, what in ((r"\| 58000 \| `the system clock did not reach.*\n", "the clock that stands still"),
                      (r"\| 54000 \| .*\n", "dblink_poll's 54000"),
                      (r"\| 22023 \| `no machine id from snowflake.machine_id_source: 'consul' is not a source.*\n", "a source that does not exist"),
                      (r"\| 22P02 \| `invalid snowflake public id \"[a-z0-9]*\": its last character .*\n", "a public id's spare bits")):
    text = re.sub(pattern, "", text, count=1)
    print(f"docs/errors.md {what}")
text = text.replace("| `ENOSPC` (no space left on the device) | 53100 |", "| `ENOSPC` (no space left on the device) | 58030 |")
open(f"{root}/docs/errors.md", "w").write(text)
print(f"docs/errors.md:{text[:text.index('| `ENOSPC`')].count(chr(10)) + 1} a wrong SQLSTATE")
# 11. the prose: a setting with the wrong error, See above, (below) at the end, made-up names.
plant("docs/failover-and-backups.md", "`snowflake.max_mark_wait` (55000: the synchronous standbys did not\n  confirm it)", "`snowflake.max_clock_wait` (58030)", "a setting with another error's SQLSTATE")
plant("docs/troubleshooting.md", "they share a machine id. Give each server its own (see", "they share a machine id. See above. Give each server its own (see", "See above.")
plant("docs/upgrading.md", "**dump and restore**\n", "**dump and restore** (below)\n", "(below) on the last lines")
plant("docs/operations.md", "`writer_takeovers`", "`writer_timeouts`", "a statistics column that does not exist (the first of two)", count=2)
plant("docs/settings.md", "misspelt `snowflake.*` name", "misspelt `snowflake.max_mark_waits` name", "a setting that does not exist")
plant("docs/sql-reference.md", "What `snowflake_nextval()` guarantees", "What `snowflake_nextvals()` guarantees", "a function that does not exist")
# 12. skipped blocks: a line the scenario does not print, a statement it does not run.
plant("docs/conversion.md", "accounts ALTER COLUMN id SET DEFAULT snowflake.snowflake_nextval()", "accounts ALTER COLUMN id SET DEFAULT public.snowflake_nextval()", "a line convert_column does not print")
plant("docs/many-servers.md", "WITH (origin = none, copy_data = false);\n-- on db2", "WITH (copy_data = false);\n-- on db2", "a statement active_active does not run")
# 13. client recipes: a heading broader than the version tested, an older version claimed bare.
plant("docs/application.md", "## Python: SQLAlchemy 2.1", "## Python: SQLAlchemy 2", "a heading that claims every 2.x")
plant("docs/application.md", "it out of the `INSERT` and reads it back", "it out of the `INSERT` (Django 5.0 and later) and reads it back", "an older version claimed without what differs")
plant("docs/application.md", "**Older versions**: psycopg 3.2 runs", "**Older versions**: psycopg runs", "an older version the packages' tests run, no longer named", line=False)
# 14. the client packages: a preset changed in the core, not in the packages.
plant("src/core/src/presets.rs", "tick_ms: 10,", "tick_ms: 1,", "a preset changed in the core only", line=False)
PY
out=$(for c in changelog errors_page manual_prose mirrored_blocks client_versions; do python3 "pgrx-tests/checks/$c.py" "$probe" 2>&1 || true; done
      python3 clients/generate.py --check "$probe" 2>&1 || true)
# Each fault planted at a line is named at that line; the others by what they lack; nothing else.
while read -r at what; do
  if [[ $at == *:* ]]; then grep -q "^$at: " <<<"$out" || fail "the planted fault at $at ($what) was not named: $out"; fi
done <"$probe/planted"
for want in "does not name the function snowflake_to_jsonb(bigint)" "does not name the column clock_waits" \
            "does not name the setting snowflake.lease_sync" "does not name the privileges of snowflake_internal.peer_deadline(int)" \
            "snowflake.max_clock_jump is named by the changelog's section only" "no row for Error::ClockStalled" ": no row of docs/errors.md with 54000 and a message holding" \
            "src/core/src/etcd/machine_source.rs:18: no row of docs/errors.md with 22023 and a message 'no machine id from ...' holding \"' is not a source" \
            "no row of docs/errors.md with 22P02 and a message 'invalid snowflake public id ...' holding ') sets bits that no token has: a token ends in one of'" \
            "the psycopg section's **Older versions** paragraph must name psycopg 3.2" \
            "clients/python/src/pg_snowflake/presets.py: not what clients/generate.py makes" "clients/js/presets.js: not what clients/generate.py makes"; do
  grep -qF "$want" <<<"$out" || fail "a planted fault was not named: $want (got: $out)"
done
# (The setting left out of the changelog is named twice: by its section, and as one Upgrading names alone.)
[ "$(grep -c . <<<"$out")" = 24 ] || fail "the planted faults make 24 failures, not: $out"
rm -rf "$probe"

if [ "$failed" = 0 ]; then echo "self-tests: 9 passed, 0 failed"; else echo "self-tests: some FAILED"; fi
exit "$failed"
