#!/usr/bin/env bash
# Generates the extension's install script from the code (cargo pgrx schema) and compares it with
# the snapshot of the released SQL (pgrx-tests/checks/sql-snapshot/), or refreshes the snapshot. The test
# suite runs the same check on the install script it installs (scenario sql_snapshot).
#
# Usage: bash pgrx-tests/checks/sql_snapshot.sh [--refresh [--unreleased]]
#   --refresh      after a version bump with an upgrade script: make the generated SQL the snapshot
#                  of the new version, and freeze the old version's install script in sql/
#   --unreleased   with --refresh: the current version was never released; replace its snapshot
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
command=check
flags=()
for arg in "$@"; do
  case $arg in
    --refresh) command=refresh ;;
    --unreleased) flags+=(--unreleased) ;;
    *) die "unknown argument $arg (see the head of $0)" ;;
  esac
done
ensure_setup "${PG_MAJOR:-15}"
new_scratch
say "generating the SQL of pg_snowflake $(cargo_version) (cargo pgrx schema pg$PG_MAJOR)"
(cd "$PROJECT_DIR" && cargo pgrx schema "pg$PG_MAJOR" -o "$SCRATCH/generated.sql") >"$SCRATCH/schema.log" 2>&1 \
  || { cat "$SCRATCH/schema.log" >&2; die "cargo pgrx schema failed"; }
python3 "$PROJECT_DIR/pgrx-tests/checks/sql_snapshot.py" "$command" "$SCRATCH/generated.sql" "${flags[@]}"
