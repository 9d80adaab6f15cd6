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
#   4. (the scenario runner's own test is in self_tests.sh)
#   5. no import cycles between the modules of the core, the shell and the SQL API;
#   6. the upgrade script into the unreleased version holds its copies of sql/ files unchanged
#      (pgrx-tests/checks/upgrade_copies.py);
#   7. every test and example installs the extension in the schema snowflake, as the README's
#      Install says (pgrx-tests/checks/install_way.py);
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
#      and older versions only with what differs there (pgrx-tests/checks/client_versions.py);
#  14. one fact, one place: each list the project keeps (presets, the actions of as_owner(),
#      settings, functions) against its source in the code, every stale copy named
#      (pgrx-tests/checks/lists.py);
#  15. the client packages hold the core's presets, the licence and the version
#      (clients/generate.py --check).
# The checkers' own tests (each run on planted faults) are pgrx-tests/checks/self_tests.sh, a step
# of its own in test.sh.
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

say "no import cycles (pgrx-tests/checks/module_cycles.py)"
python3 pgrx-tests/checks/module_cycles.py src/core/src crate:: --order src/core/src/lib.rs || fail "an import cycle in the core, or a module that uses one listed below it in lib.rs"
python3 pgrx-tests/checks/module_cycles.py src/postgres super:: || fail "an import cycle in the shell"
python3 pgrx-tests/checks/module_cycles.py src/postgres/sql_api super:: || fail "an import cycle in the SQL API"

say "the upgrade script's copies of sql/ files equal them (pgrx-tests/checks/upgrade_copies.py)"
python3 pgrx-tests/checks/upgrade_copies.py "$PROJECT_DIR" || fail "an upgrade script's copy differs from its source (above)"

say "every test and example installs pg_snowflake in the schema snowflake (pgrx-tests/checks/install_way.py)"
python3 pgrx-tests/checks/install_way.py || fail "a test or example creates pg_snowflake without SCHEMA snowflake (above)"

say "no scenario installs anything (pgrx-tests/checks/no_installs.py)"
python3 pgrx-tests/checks/no_installs.py || fail "a scenario installs something (above): installs belong to harness/setup.sh"

# 9 to 13: the manual's statements against the code.
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
say "one fact, one place: the lists against their source (pgrx-tests/checks/lists.py)"
python3 pgrx-tests/checks/lists.py || fail "a copy of a list is out of step with its source in the code (above)"
say "the client packages' presets, licence and version (clients/generate.py --check)"
python3 clients/generate.py --check || fail "a client package differs from what clients/generate.py makes (above): run it"

if [ "$failed" = 0 ]; then echo "checks: 14 passed, 0 failed"; else echo "checks: some FAILED"; fi
exit "$failed"
