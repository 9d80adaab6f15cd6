# majors: all (what it tests differs by major: the WAL, shared memory, the generated SQL)
# The CI check that the SQL surface changes only with a new version and an upgrade script
# (pgrx-tests/checks/sql_snapshot.py): the install script that `cargo pgrx install` generated for this
# PostgreSQL must match the snapshot in pgrx-tests/checks/sql-snapshot/, blocks compared as a set without
# comments. Then, on a scratch copy of the project: the same SQL with the Rust paths in pgrx's
# comments moved and its blocks in another order passes (the code may move); a changed function
# and a new function fail and say what to do; a bump without an upgrade script fails; with one, the
# check asks for a refresh, which freezes the old version's install script and writes the new
# snapshot in the old one's order (only the new function's lines differ); a released version
# without an upgrade path fails. (The current version is printed as <version>.) No cluster.
version=$(cargo_version)
v() { sed "s/${version//./\\.}/<version>/g"; }
generated="$("$PG_CONFIG" --sharedir)/extension/pg_snowflake--$version.sql"
# (The scratch dir serves every version of a run: start from a clean copy.)
project="$SCRATCH/project"
rm -rf "$project" "$SCRATCH/project2"
mkdir -p "$project/pgrx-tests/checks"
cp -r "$PROJECT_DIR/Cargo.toml" "$PROJECT_DIR/sql" "$project/"
cp -r "$PROJECT_DIR/pgrx-tests/checks/sql-snapshot" "$project/pgrx-tests/checks/"
check() {
  local rc=0
  python3 "$PROJECT_DIR/pgrx-tests/checks/sql_snapshot.py" "$@" >"$SCRATCH/check.out" 2>&1 || rc=$?
  # (Without the diff's line numbers, which move whenever the SQL grows.)
  grep -v '^    @@ ' "$SCRATCH/check.out" | v
  echo "exit status $rc"
}
# edit PYTHON: the generated SQL changed by PYTHON (acting on the string `s`), into $SCRATCH/edited.sql.
edit() {
  python3 - "$generated" "$SCRATCH/edited.sql" "$1" <<'PY'
import sys
s = open(sys.argv[1]).read()
exec(sys.argv[3])
open(sys.argv[2], "w").write(s)
PY
}

echo "== the generated SQL of this build"
check check "$generated"
echo "== the code moved: other Rust paths in pgrx's comments, blocks in reverse order"
edit '
B = "/* <begin connected objects> */"
s = s.replace("src/sql_api/", "src/postgres/sql_api/").replace("pg_snowflake::sql_api::", "pg_snowflake_postgres::sql_api::")
s = s.replace("/* i64 */", "/* core::primitive::i64 */")
s = B + B.join(reversed(s.split(B)[1:]))'
check check "$SCRATCH/edited.sql" --project "$project"
echo "== a changed function: snowflake_timestamp() made VOLATILE"
edit '
i = s.index("CREATE  FUNCTION \"snowflake_timestamp\"")
j = s.index("STRICT STABLE", i)
s = s[:j] + "STRICT VOLATILE" + s[j + len("STRICT STABLE"):]'
check check "$SCRATCH/edited.sql" --project "$project"
echo "== a new function"
edit 's += "\n/* <begin connected objects> */\nCREATE FUNCTION snowflake_epoch() RETURNS timestamptz\nSTRICT STABLE PARALLEL SAFE\nLANGUAGE c\nAS '"'"'MODULE_PATHNAME'"'"', '"'"'snowflake_epoch_wrapper'"'"';\n/* </end connected objects> */\n"'
check check "$SCRATCH/edited.sql" --project "$project"
echo "== the new function, the version bumped to 9.0.0, no upgrade script"
sed -i 's/^version = ".*"$/version = "9.0.0"/' "$project/Cargo.toml"
check check "$SCRATCH/edited.sql" --project "$project"
echo "== refresh refused"
check refresh "$SCRATCH/edited.sql" --project "$project"
echo "== with sql/pg_snowflake--<version>--9.0.0.sql"
echo "-- CREATE FUNCTION snowflake_epoch() ..." >"$project/sql/pg_snowflake--$version--9.0.0.sql"
check check "$SCRATCH/edited.sql" --project "$project"
echo "== refresh"
check refresh "$SCRATCH/edited.sql" --project "$project"
(cd "$project" && find sql pgrx-tests/checks/sql-snapshot -name "pg_snowflake--*" | sort | v)
# The refresh wrote the snapshot's own order, whatever pgrx's (the blocks were reversed): the new
# snapshot is the old one and the new function, nothing moved.
changes=$(diff <(tail -n +3 "$project/sql/pg_snowflake--$version.sql") "$project/pgrx-tests/checks/sql-snapshot/pg_snowflake--9.0.0.sql" || true)
echo "the refresh, against the snapshot before it: $(grep -c '^<' <<<"$changes") lines removed, $(grep -c '^>' <<<"$changes") added, $(grep -c '^[0-9]' <<<"$changes") hunks (the new function's block alone: 0, 7, 1)"
check check "$SCRATCH/edited.sql" --project "$project"
echo "== the frozen install script of <version> is the released SQL"
# (Blocks compared as a set: pgrx's order of them differs between runs and majors.)
PYTHONPATH="$PROJECT_DIR/pgrx-tests/checks" python3 -c 'import sys, sql_snapshot as s
a, b = (sorted(s.blocks(open(f).read())) for f in sys.argv[1:3])
sys.exit(a != b)' "$project/sql/pg_snowflake--$version.sql" "$generated" && echo "same SQL as this build's"
echo "== a released version without an upgrade path"
rm "$project/sql/pg_snowflake--$version--9.0.0.sql"
check check "$SCRATCH/edited.sql" --project "$project"
echo "== the SQL of a version never released changed (snowflake_timestamp() made VOLATILE)"
project="$SCRATCH/project2"
mkdir -p "$project/pgrx-tests/checks"
cp -r "$PROJECT_DIR/Cargo.toml" "$PROJECT_DIR/sql" "$project/"
cp -r "$PROJECT_DIR/pgrx-tests/checks/sql-snapshot" "$project/pgrx-tests/checks/"
edit '
i = s.index("CREATE  FUNCTION \"snowflake_timestamp\"")
j = s.index("STRICT STABLE", i)
s = s[:j] + "STRICT VOLATILE" + s[j + len("STRICT STABLE"):]'
check refresh "$SCRATCH/edited.sql" --project "$project"
check refresh "$SCRATCH/edited.sql" --project "$project" --unreleased
check check "$SCRATCH/edited.sql" --project "$project"
