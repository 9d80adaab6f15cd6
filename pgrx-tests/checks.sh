#!/usr/bin/env bash
# The checks that need no PostgreSQL, run once by test.sh before the per-version steps (about a
# minute once built):
#   1. the core is pure: its crate depends on no pgrx crate, and no file under src/core names
#      pgrx or pg_sys (so it cannot reach PostgreSQL, and builds without its headers);
#   2. the core's unit and property tests, with a plain `cargo test` (no PostgreSQL);
#   3. rustfmt: `cargo fmt --all --check` (rustfmt.toml);
#   4. the scenario runner stops at a scenario's first failing command;
#   5. no import cycles between the modules of the core, the shell and the SQL API;
#   6. every test and example installs the extension in the schema snowflake, as the README's
#      Install says (pgrx-tests/install_way.py), with its negative control.
# clippy runs per PostgreSQL version in test.sh (its cfgs differ by version).
#
# Usage: bash pgrx-tests/checks.sh
set -euo pipefail
# shellcheck source=pgrx-tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
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

say "rustfmt (cargo fmt --all --check)"
cargo fmt --all --check >/dev/null || { cargo fmt --all --check | head -n 40; fail "cargo fmt --all --check: run cargo fmt --all"; }

say "the scenario runner stops at the first failing command"
probe=$(mktemp -d)
printf 'echo before\nfalse\necho after\n' >"$probe/stops.sh"
out=$(run_sh_scenario "$probe/stops.sh" /dev/null 2>&1 || echo "exit $?")
rm -rf "$probe"
[ "$out" = $'before\nexit 1' ] || fail "a scenario went on after a failing command: got: $out"

say "no import cycles (pgrx-tests/module_cycles.py)"
python3 pgrx-tests/module_cycles.py src/core/src crate:: || fail "an import cycle in the core"
python3 pgrx-tests/module_cycles.py src/postgres super:: || fail "an import cycle in the shell"
python3 pgrx-tests/module_cycles.py src/postgres/sql_api super:: || fail "an import cycle in the SQL API"

say "every test and example installs pg_snowflake in the schema snowflake (pgrx-tests/install_way.py)"
python3 pgrx-tests/install_way.py || fail "a test or example creates pg_snowflake without SCHEMA snowflake (above)"
# Its negative control: a copy with a plain CREATE EXTENSION planted in a .sql scenario, a .sh
# scenario and the README's first block fails at exactly those three lines.
probe=$(mktemp -d)
mkdir -p "$probe/pgrx-tests"
cp -r README.md docs "$probe/" && cp -r pgrx-tests/scenarios pgrx-tests/include "$probe/pgrx-tests/"
sed -i 's|^\\ir ../include/create_extension.sql$|CREATE EXTENSION pg_snowflake;|' "$probe/pgrx-tests/scenarios/json_ids.sql"
sed -i 's|^create_extension main$|psql_on main -c "CREATE EXTENSION pg_snowflake"|' "$probe/pgrx-tests/scenarios/lease_worker.sh"
sed -i '0,/^CREATE TABLE orders/s//CREATE EXTENSION IF NOT EXISTS pg_snowflake;\n&/' "$probe/README.md"
planted=$(python3 pgrx-tests/install_way.py "$probe" 2>&1 | sed -n 's/: creates pg_snowflake without SCHEMA snowflake.*//p' | sed 's/:[0-9]*$//' | sort | tr '\n' ' ' || true)
rm -rf "$probe"
[ "$planted" = "README.md pgrx-tests/scenarios/json_ids.sql pgrx-tests/scenarios/lease_worker.sh " ] \
  || fail "install_way.py's negative control: three planted installs into public, found: $planted"

if [ "$failed" = 0 ]; then echo "checks: 6 passed, 0 failed"; else echo "checks: some FAILED"; fi
exit "$failed"
