# majors: 15 18
# The README, executed (pgrx-tests/readme/check.py): its SQL examples and their output, every row
# of its Errors table (pgrx-tests/readme/errors.toml), its Settings table against pg_settings and
# its SQL reference against the catalog. A difference names the README line; README_ACCEPT=1
# writes what the server did into the README instead.
SCRATCH=$SCRATCH PG_BIN=$PG_BIN PG_CONFIG=$PG_CONFIG PROJECT_DIR=$PROJECT_DIR python3 "$PROJECT_DIR/pgrx-tests/readme/check.py"
