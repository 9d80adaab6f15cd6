# majors: 15
# long: half a minute or more, queued first
# The client packages of the repository (clients/python, clients/js: docs/application.md), built
# as their ecosystems build them and tested as built, against a real server with the extension
# and a key file. The clients do not depend on the major: they run on 15 only.
#   Python: the wheel (pip wheel, flit_core), its tests (clients/python/tests, unittest) run from
#   the wheel on the newest clients (Django 6.1, SQLAlchemy 2.1, psycopg 3.3, DRF, pydantic) and on
#   the older ones (Django 5.2 LTS, SQLAlchemy 2.0, psycopg 3.2), each in a database of its own:
#   every preset and the server's layout decoding and composing as the server's functions do, the
#   Django field, the SQLAlchemy type, JSON with ids as strings, public ids and time ranges.
#   JavaScript: the npm tarball (npm pack), unpacked as node_modules/pg-snowflake, its tests
#   (clients/js/test, node --test) through node-postgres and Postgres.js, and its declarations
#   checked by TypeScript (tsc --strict).
# The negative control: a preset of each package changed as a stale copy would be (Sonyflake's
# 10 ms ticks read as 1 ms), its server test fails.
# The packages and their test tools come from the set-up (ensure_client_tools): nothing installed here.
client_tools_ready || { echo "the clients are not installed: run pgrx-tests/test.sh (its set-up installs them)"; exit 1; }
export PGOPTIONS="-c client_min_messages=warning"
init_cluster pkgs "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
  "snowflake.public_key_file = 'snowflake.key'"
openssl rand -hex 32 | as_pg_owner tee "$SCRATCH/pkgs/snowflake.key" >/dev/null
as_pg_owner chmod 600 "$SCRATCH/pkgs/snowflake.key"
start_cluster pkgs
# A database per run, set up as the manual's Install says; libpq's variables name it (its Unix
# socket: every client here takes a directory as PGHOST).
database() {
  psql_on pkgs -c "CREATE DATABASE $1" >/dev/null
  create_extension pkgs "$1" >/dev/null
  export PGHOST=$SCRATCH PGPORT
  PGPORT=$(port_of pkgs)
  export PGUSER=postgres PGDATABASE=$1
}
# summary NAME LOG STATUS: one line when the run passed; its log when it did not.
summary() {
  if [ "$3" = 0 ]; then echo "$1"; else echo "$1: FAILED"; cat "$2"; fi
}
dist="$SCRATCH/dist"
mkdir -p "$dist"

echo "== Python: the wheel"
venv=$(client_venv)
"$venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$dist" "$PROJECT_DIR/clients/python" >"$SCRATCH/wheel.log" 2>&1 \
  || { cat "$SCRATCH/wheel.log"; exit 1; }
wheel=$(ls "$dist"/pg_snowflake-*-py3-none-any.whl)
python3 -m zipfile -l "$wheel" | awk 'NR > 1 {print "  " $1}' | sort
echo "wheel $(basename "$wheel"): $(stat -c %s "$wheel") bytes" >>"$REPORT"
# The tests run from a copy, the package imported from the wheel alone (a zip on the path: the
# checkout's clients/python/src is on no path here).
cp -r "$PROJECT_DIR/clients/python/tests" "$SCRATCH/tests"
# run_python VENV DB [PACKAGE]: the tests in a fresh database DB, with PACKAGE (default the wheel)
# providing pg_snowflake; prints the clients' versions and the verdict.
run_python() {
  local venv=$1 db=$2 package=${3:-$wheel} log="$SCRATCH/py_$2.log" status=0 versions tests
  database "$db"
  (cd "$SCRATCH" && PYTHONPATH="$package:$SCRATCH" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m unittest discover -s tests -t .) \
    >"$log" 2>&1 || status=$?
  versions=$(cd "$SCRATCH" && PYTHONPATH="$package" "$venv/bin/python" -c '
import sys
import django, psycopg, pydantic, rest_framework, sqlalchemy, pg_snowflake
assert pg_snowflake.__file__.startswith(sys.argv[1]), pg_snowflake.__file__
print(f"Django {django.__version__}, SQLAlchemy {sqlalchemy.__version__}, psycopg {psycopg.__version__}, DRF {rest_framework.__version__}, pydantic {pydantic.VERSION}")' "$package")
  tests=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$log")
  summary "$versions: ${tests:-no} tests, $(tail -n 1 "$log")" "$log" "$status"
}
run_python "$(client_venv)" py_newest
run_python "$(client_venv requirements-older.txt)" py_older

echo "== JavaScript: the npm tarball"
node_dir=$(client_node)
(cd "$dist" && npm pack --silent "$PROJECT_DIR/clients/js") >"$SCRATCH/pack.log" 2>&1 || { cat "$SCRATCH/pack.log"; exit 1; }
tarball=$(ls "$dist"/pg-snowflake-*.tgz)
tar -tzf "$tarball" | sort | sed 's/^/  /'
echo "npm $(basename "$tarball"): $(stat -c %s "$tarball") bytes" >>"$REPORT"
js="$SCRATCH/js"
mkdir -p "$js/node_modules/pg-snowflake"
for m in "$node_dir"/node_modules/*; do ln -s "$m" "$js/node_modules/"; done
ln -s "$node_dir/node_modules/.bin" "$js/node_modules/.bin"
tar -xzf "$tarball" -C "$js/node_modules/pg-snowflake" --strip-components=1
cp -r "$PROJECT_DIR/clients/js/test" "$js/test"
run_node() {
  local log="$SCRATCH/js_$1.log" status=0
  database "$1"
  (cd "$js" && node --test "${@:2}") >"$log" 2>&1 || status=$?
  summary "node $(node --version | cut -d. -f1), pg $(node -p 'require("'"$js"'/node_modules/pg/package.json").version'), postgres $(node -p 'require("'"$js"'/node_modules/postgres/package.json").version'): $(sed -n 's/^# pass //p' "$log") passed, $(sed -n 's/^# fail //p' "$log") failed" "$log" "$status"
}
run_node js test/
status=0
(cd "$js" && node_modules/.bin/tsc --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 test/types.ts) >"$SCRATCH/tsc.log" 2>&1 || status=$?
summary "TypeScript $(node -p 'require("'"$js"'/node_modules/typescript/package.json").version'): the declarations type-check (tsc --strict)" "$SCRATCH/tsc.log" "$status"

echo "== negative control: a stale preset (Sonyflake's 10 ms ticks read as 1 ms)"
stale="$SCRATCH/stale"
mkdir -p "$stale" && (cd "$stale" && python3 -m zipfile -e "$wheel" .)
sed -i 's/"sonyflake": (\([0-9]*\), 10,/"sonyflake": (\1, 1,/' "$stale/pg_snowflake/presets.py"
database py_stale
(cd "$SCRATCH" && PYTHONPATH="$stale:$SCRATCH" PYTHONDONTWRITEBYTECODE=1 "$(client_venv)/bin/python" -m unittest \
  tests.test_server.Presets.test_every_preset_decodes_as_the_server_does) >"$SCRATCH/stale_py.log" 2>&1 && echo "python: the stale preset passed"
grep -o "AssertionError: .*" "$SCRATCH/stale_py.log" | head -n 1 | sed 's/^/python: /'
sed -i 's/sonyflake: Object.freeze({ epochMs: \([0-9]*\), tickMs: 10,/sonyflake: Object.freeze({ epochMs: \1, tickMs: 1,/' "$js/node_modules/pg-snowflake/presets.js"
database js_stale
(cd "$js" && node --test --test-name-pattern "every preset decodes" test/server.test.mjs) >"$SCRATCH/stale_js.log" 2>&1 && echo "javascript: the stale preset passed"
grep -o "sonyflake: id [0-9-]*" "$SCRATCH/stale_js.log" | head -n 1 | sed 's/^/javascript: fails at /'
