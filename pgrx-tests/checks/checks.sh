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
#   8. no scenario installs anything: every install is the set-up's (pgrx-tests/checks/no_installs.py).
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

if [ "$failed" = 0 ]; then echo "checks: 8 passed, 0 failed"; else echo "checks: some FAILED"; fi
exit "$failed"
