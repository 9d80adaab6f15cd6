#!/usr/bin/env bash
# The main job, end to end, set-up included (idempotent, quick when already set up): build and
# install pg_snowflake, start a throwaway PostgreSQL with the library preloaded and a machine id
# set, create a table keyed by DEFAULT snowflake_nextval(), insert rows, print the ids with their
# decoded parts, then stop the server and remove it.
#
# Usage: bash pgrx-tests/demo.sh
#   MACHINE_ID=42 bash pgrx-tests/demo.sh    another machine id
#   PG_MAJOR=18 bash pgrx-tests/demo.sh      another PostgreSQL (14 to 18; default 15)
#
# With PostgreSQL 15 (the default) the demo installs the extension into Debian's postgresql-15
# (/usr/lib/postgresql/15, /usr/share/postgresql/15/extension), the system's PostgreSQL: the demo is
# meant to show the extension where a user would run it. With another major it uses the tests' own
# PostgreSQL of that major. (Of the tests, only the package install test touches the system's
# PostgreSQL: it installs the .deb into Debian's postgresql-15 and removes it; see the README.)
set -euo pipefail
# shellcheck source=pgrx-tests/harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness/lib.sh"

major=${PG_MAJOR:-15}
[ "$major" = "$SYSTEM_PG_MAJOR" ] && ensure_debian_packages "postgresql-$major"
ensure_setup "$major"
[ "$major" = "$SYSTEM_PG_MAJOR" ] && use_system_pg "$major"
new_scratch
install_extension

say "starting a throwaway PostgreSQL $PG_MAJOR in $SCRATCH"
init_cluster demo "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = ${MACHINE_ID:-7}"
start_cluster demo

say "inserting rows and decoding their ids"
psql_on demo -e -f "$PROJECT_DIR/pgrx-tests/harness/sql/demo.sql"
say "done; the server and its data are removed"
