# META.json, PGXN's distribution metadata: it follows the PGXN Meta Spec v1.0.0 (required keys, the
# form of each value) and agrees with Cargo.toml, the control file and the library's version. Then
# the negative controls: copies of it with one thing wrong each must fail the same check, naming it.
# (No cluster. The current version is printed as <version>, so a version bump changes no output.)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$PROJECT_DIR/Cargo.toml")
check() {
  local rc=0
  python3 "$PROJECT_DIR/pgrx-tests/checks/check_meta.py" "$@" >"$SCRATCH/meta.out" 2>&1 || rc=$?
  sed "s/${version//./\\.}/<version>/g" "$SCRATCH/meta.out"
  echo "exit status $rc"
}
# mutate NAME PYTHON: a copy of META.json changed by PYTHON (acting on the dict `m`), checked.
mutate() {
  echo "== $1"
  python3 - "$PROJECT_DIR/META.json" "$SCRATCH/META.json" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), indent=3)
PY
  check --meta "$SCRATCH/META.json"
}

echo "== the repository's META.json"
check
mutate "no provides" 'del m["provides"]'
mutate "no meta-spec, no maintainer" 'del m["meta-spec"]; del m["maintainer"]'
mutate "version not bumped with Cargo.toml" 'm["version"] = "0.0.1"; m["provides"]["pg_snowflake"]["version"] = "0.0.1"'
mutate "provides without a version" 'del m["provides"]["pg_snowflake"]["version"]'
mutate "not a semantic version" 'm["version"] = "1.0"'
mutate "a licence the spec does not know" 'm["license"] = "PostgreSQL License"'
mutate "release status beta" 'm["release_status"] = "beta"'
mutate "meta-spec 2.0.0" 'm["meta-spec"]["version"] = "2.0.0"'
mutate "a file that is not there" 'm["provides"]["pg_snowflake"]["file"] = "sql/pg_snowflake.sql"'
mutate "PostgreSQL 13 required, 14 the oldest tested" 'm["prereqs"]["runtime"]["requires"]["PostgreSQL"] = "13.0.0"'
echo "== Cargo.toml bumped, META.json not"
sed 's/^version = ".*"$/version = "9.9.9"/' "$PROJECT_DIR/Cargo.toml" >"$SCRATCH/Cargo.toml"
check --cargo-toml "$SCRATCH/Cargo.toml"
echo "== not JSON"
echo '{"name": "pg_snowflake",' >"$SCRATCH/META.json"
check --meta "$SCRATCH/META.json" | sed 's/: Expecting.*/: .../'
