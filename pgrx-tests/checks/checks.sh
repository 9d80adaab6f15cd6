#!/usr/bin/env bash
# The checks that need no PostgreSQL, run once by test.sh before the per-version steps (about a
# minute once built):
#   1. the core is pure: its crate depends on no pgrx crate, and no file under src/core names
#      pgrx or pg_sys (so it cannot reach PostgreSQL, and builds without its headers);
#   2. the core's unit and property tests, with a plain `cargo test` (no PostgreSQL), the
#      lifecycle simulation among them (src/core/src/lifecycle_sim.rs: 200,000 seeded steps); then
#      the model check of the shared-memory protocol (src/core/tests/loom.rs) over loom's atomics,
#      built with --cfg loom in a target directory of its own;
#   3. rustfmt: `cargo fmt --all --check` (rustfmt.toml);
#   4. the scenario runner stops at a scenario's first failing command;
#   5. no import cycles between the modules of the core, the shell and the SQL API, and the cycle
#      check sees one that goes through an inline module's `super::super::` (a planted probe);
#   6. the upgrade script into the unreleased version holds its copies of sql/ files unchanged
#      (pgrx-tests/checks/upgrade_copies.py), and sees a copy that differs (a planted probe);
#   7. every test and example installs the extension in the schema snowflake, as the README's
#      Install says (pgrx-tests/checks/install_way.py), with its negative control;
#   8. no scenario installs anything: every install is the set-up's (pgrx-tests/checks/no_installs.py);
#   9. CHANGELOG.md names every function, type, column, privilege and setting change of the install
#      and upgrade scripts (pgrx-tests/checks/changelog.py);
#  10. the Errors page has a row for every error the code can raise: the core's errors with the
#      SQLSTATE the shell maps, the mark write's by system error, the shell's other errors, every
#      RAISE of sql/ (pgrx-tests/checks/errors_page.py);
#  11. the manual's prose names only functions, settings and columns that exist, a setting with
#      a SQLSTATE only as the Errors page has them, and its "above"/"below" lead somewhere
#      (pgrx-tests/checks/manual_prose.py);
#  12. a skipped block that a scenario runs shows what that scenario prints
#      (pgrx-tests/checks/mirrored_blocks.py);
#  13. the recipes of "From your application" name the client versions the clients scenario runs,
#      and older versions only with what differs there (pgrx-tests/checks/client_versions.py).
#  9 to 13 each run once more on a copy with planted faults, each of which they must name.
# clippy runs per PostgreSQL version in test.sh (its cfgs differ by version).
#
# Usage: bash pgrx-tests/checks/checks.sh
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
cd "$PROJECT_DIR"
failed=0
fail() { echo "check FAILED: $*"; failed=1; }

say "the core knows nothing of PostgreSQL (src/core)"
if cargo tree -q -p pg_snowflake_core -e normal,build --prefix none | grep -E '^pgrx'; then
  fail "the crate pg_snowflake_core depends on pgrx (above)"
fi
if grep -rnE 'pgrx|pg_sys' src/core; then
  fail "files under src/core name pgrx or pg_sys (above): PostgreSQL glue belongs in src/postgres"
fi
grep -q '^#!\[forbid(unsafe_code)\]' src/core/src/lib.rs || fail "src/core/src/lib.rs lacks #![forbid(unsafe_code)]"

say "the core's unit and property tests (cargo test -p pg_snowflake_core)"
cargo test -q -p pg_snowflake_core || fail "cargo test -p pg_snowflake_core"
say "the model check of the shared-memory protocol (loom: src/core/tests/loom.rs)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$PROJECT_DIR/target/loom" cargo test -q --release -p pg_snowflake_core --test loom \
  || fail "the loom model check (RUSTFLAGS=\"--cfg loom\" cargo test -p pg_snowflake_core --release --test loom)"

say "rustfmt (cargo fmt --all --check)"
cargo fmt --all --check >/dev/null || { cargo fmt --all --check | head -n 40; fail "cargo fmt --all --check: run cargo fmt --all"; }

say "the scenario runner stops at the first failing command"
probe=$(mktemp -d)
printf 'echo before\nfalse\necho after\n' >"$probe/stops.sh"
out=$(run_sh_scenario "$probe/stops.sh" /dev/null 2>&1 || echo "exit $?")
rm -rf "$probe"
[ "$out" = $'before\nexit 1' ] || fail "a scenario went on after a failing command: got: $out"

say "no import cycles (pgrx-tests/checks/module_cycles.py)"
python3 pgrx-tests/checks/module_cycles.py src/core/src crate:: --order src/core/src/lib.rs || fail "an import cycle in the core, or a module that uses one listed below it in lib.rs"
python3 pgrx-tests/checks/module_cycles.py src/postgres super:: || fail "an import cycle in the shell"
python3 pgrx-tests/checks/module_cycles.py src/postgres/sql_api super:: || fail "an import cycle in the SQL API"
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

say "the upgrade script's copies of sql/ files equal them (pgrx-tests/checks/upgrade_copies.py)"
python3 pgrx-tests/checks/upgrade_copies.py "$PROJECT_DIR" || fail "an upgrade script's copy differs from its source (above)"
probe=$(mktemp -d)
mkdir "$probe/sql"
cp Cargo.toml "$probe/"
cp sql/*.sql "$probe/sql/"
sed -i '0,/RAISE EXCEPTION/s//RAISE WARNING/' "$probe"/sql/convert_column.sql
out=$(python3 pgrx-tests/checks/upgrade_copies.py "$probe" 2>&1 || echo "exit $?")
rm -rf "$probe"
[[ $out == *"copy of sql/convert_column.sql differs"*"exit 1" ]] || fail "upgrade_copies.py missed a changed source (got: $out)"

say "every test and example installs pg_snowflake in the schema snowflake (pgrx-tests/checks/install_way.py)"
python3 pgrx-tests/checks/install_way.py || fail "a test or example creates pg_snowflake without SCHEMA snowflake (above)"
# Its negative control: a copy with a plain CREATE EXTENSION planted in a .sql scenario, a .sh
# scenario and the README's first block fails at exactly those three lines.
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests/harness"
cp -r README.md docs "$probe/" && cp -r pgrx-tests/scenarios "$probe/pgrx-tests/" && cp -r pgrx-tests/harness/sql "$probe/pgrx-tests/harness/"
sed -i 's|^\\ir ../harness/sql/create_extension.sql$|CREATE EXTENSION pg_snowflake;|' "$probe/pgrx-tests/scenarios/json_ids.sql"
sed -i 's|^create_extension main$|psql_on main -c "CREATE EXTENSION pg_snowflake"|' "$probe/pgrx-tests/scenarios/lease_worker.sh"
sed -i '0,/^CREATE TABLE orders/s//CREATE EXTENSION IF NOT EXISTS pg_snowflake;\n&/' "$probe/README.md"
planted=$(python3 pgrx-tests/checks/install_way.py "$probe" 2>&1 | sed -n 's/: creates pg_snowflake without SCHEMA snowflake.*//p' | sed 's/:[0-9]*$//' | sort | tr '\n' ' ' || true)
rm -rf "$probe"
[ "$planted" = "README.md pgrx-tests/scenarios/json_ids.sql pgrx-tests/scenarios/lease_worker.sh " ] \
  || fail "install_way.py's negative control: three planted installs into public, found: $planted"

say "no scenario installs anything (pgrx-tests/checks/no_installs.py)"
python3 pgrx-tests/checks/no_installs.py || fail "a scenario installs something (above): installs belong to harness/setup.sh"
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests/scenarios"
printf '# majors: 15\nensure_debian_packages libfoo\necho ok  # apt-get install is named in a comment only\n' >"$probe/pgrx-tests/scenarios/x.sh"
out=$(python3 pgrx-tests/checks/no_installs.py "$probe" 2>&1 || true)
rm -rf "$probe"
[[ $out == "pgrx-tests/scenarios/x.sh:2: installs in a scenario"* && $out != *"x.sh:3"* ]] || fail "no_installs.py's negative control (got: $out)"

# 9 to 13: the manual's statements against the code. Their negative controls run on one copy of
# the checkout with faults planted, each of which one check must name at its file and line.
say "CHANGELOG.md against the scripts (pgrx-tests/checks/changelog.py)"
python3 pgrx-tests/checks/changelog.py || fail "CHANGELOG.md misses a change of sql/ (above)"
say "the Errors page against the code (pgrx-tests/checks/errors_page.py)"
python3 pgrx-tests/checks/errors_page.py || fail "the Errors page lacks an error the code can raise (above)"
say "the manual's prose: names and pointers (pgrx-tests/checks/manual_prose.py)"
python3 pgrx-tests/checks/manual_prose.py || fail "the manual names what does not exist, or points nowhere (above)"
say "skipped blocks against the scenarios that run them (pgrx-tests/checks/mirrored_blocks.py)"
python3 pgrx-tests/checks/mirrored_blocks.py || fail "a block differs from the scenario that runs it (above)"
say "the client recipes' versions (pgrx-tests/checks/client_versions.py)"
python3 pgrx-tests/checks/client_versions.py || fail "a client recipe does not say the version it is tested with (above)"
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests/checks"
cp -r README.md CHANGELOG.md Cargo.toml mkdocs.yml docs sql src monitoring "$probe/"
cp -r pgrx-tests/scenarios pgrx-tests/expected "$probe/pgrx-tests/" && cp -r pgrx-tests/checks/sql-snapshot "$probe/pgrx-tests/checks/"
mkdir -p "$probe/pgrx-tests/checks/readme/clients/rust"
cp pgrx-tests/checks/readme/clients/{requirements.txt,package.json} "$probe/pgrx-tests/checks/readme/clients/"
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
plant("CHANGELOG.md", "`snowflake_convert_reach(regclass, smallint)`,", "", "a function", line=False)
plant("CHANGELOG.md", "  `snowflake.lease_sync` (leases confirmed by the synchronous standbys),\n", "", "a setting", line=False)
plant("CHANGELOG.md", "`snowflake_peer_deadline(int)`. Grant", "the deadline. Grant", "a privilege", line=False)
plant("docs/upgrading.md", "`snowflake.max_clock_jump`,\n", "the clock jump guard,\n", "a setting Upgrading no longer names", line=False)
# 10. the Errors page: a row gone, a SQLSTATE wrong, the shell's own error gone.
text = open(f"{root}/docs/errors.md").read()
for pattern, what in ((r"\| 58000 \| `the system clock did not reach.*\n", "the clock that stands still"),
                      (r"\| 54000 \| .*\n", "dblink_poll's 54000")):
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
plant("docs/application.md", "leaves it out of the `INSERT`", "leaves it out of the `INSERT` (Django 5.0 and later)", "an older version claimed without what differs")
PY
out=$(for c in changelog errors_page manual_prose mirrored_blocks client_versions; do python3 "pgrx-tests/checks/$c.py" "$probe" 2>&1 || true; done)
# Each fault planted at a line is named at that line; the others by what they lack; nothing else.
while read -r at what; do
  if [[ $at == *:* ]]; then grep -q "^$at: " <<<"$out" || fail "the planted fault at $at ($what) was not named: $out"; fi
done <"$probe/planted"
for want in "does not name the function snowflake_convert_reach(regclass, smallint)" "does not name the column clock_waits" \
            "does not name the setting snowflake.lease_sync" "does not name the privileges of snowflake_peer_deadline(int)" \
            "snowflake.max_clock_jump is named by the changelog's section only" "no row for Error::ClockStalled" ": no row of docs/errors.md with 54000 and a message holding"; do
  grep -qF "$want" <<<"$out" || fail "a planted fault was not named: $want (got: $out)"
done
# (The setting left out of the changelog is named twice: by its section, and as one Upgrading names alone.)
[ "$(grep -c . <<<"$out")" = 19 ] || fail "the planted faults make 19 failures, not: $out"
rm -rf "$probe"

if [ "$failed" = 0 ]; then echo "checks: 13 passed, 0 failed"; else echo "checks: some FAILED"; fi
exit "$failed"
