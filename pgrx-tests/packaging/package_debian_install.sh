# The Debian package installed for real into Debian's own postgresql-<N> (the system's PostgreSQL:
# this and the demo are the only tests that touch it): `apt-get install ./file.deb` on a tree where
# no pg_snowflake file is (files no package owns are set aside meanwhile), `dpkg --verify`, a cluster of Debian's
# server with the library preloaded runs the demo's SQL and an update from the released 0.1.0
# through the packaged scripts, then `dpkg -r` removes every file the package installed.
# (The major is printed as <N>, the version as <version>.)
version=$(cargo_version)
arch=$(dpkg --print-architecture)
name="postgresql-$PG_MAJOR-pg-snowflake"
deb="$PACKAGES_DIR/${name}_${version}_$arch.deb"
n() { sed -e "s/${version//./\\.}/<version>/g" -e "s/postgresql-$PG_MAJOR-/postgresql-<N>-/g" -e "s#/$PG_MAJOR/#/<N>/#g"; }
libdir="/usr/lib/postgresql/$PG_MAJOR/lib"
extdir="/usr/share/postgresql/$PG_MAJOR/extension"
dpkg-query -W -f='${Status}' "postgresql-$PG_MAJOR" 2>/dev/null | grep -q 'ok installed' \
  || { echo "Debian's postgresql-$PG_MAJOR is not installed"; exit 1; }
# A run that was cut short may have left the package installed: remove it first.
dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'installed' && as_root dpkg -r "$name" >/dev/null
# Files of pg_snowflake that no package installed (the demo's, or a cargo pgrx install's) are set
# aside for the test and put back after it, so that the package meets a clean tree and running the
# demo before the tests breaks nothing.
stray=$(find "$libdir" "$extdir" -maxdepth 1 -name 'pg_snowflake*')
if [ -n "$stray" ]; then
  mkdir -p "$SCRATCH/set_aside"
  echo "$stray" >"$SCRATCH/set_aside.list"
  while read -r f; do as_root mv "$f" "$SCRATCH/set_aside/"; done <"$SCRATCH/set_aside.list"
  put_back() {
    while read -r f; do as_root mv "$SCRATCH/set_aside/${f##*/}" "$f"; done <"$SCRATCH/set_aside.list"
  }
  trap put_back EXIT
  echo "set aside for the test and put back after it: $(wc -l <"$SCRATCH/set_aside.list") files of the demo or a cargo pgrx install" >>"$REPORT"
fi
echo "before: no pg_snowflake file in $libdir or $extdir" | n

as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >"$SCRATCH/apt.log" 2>&1 \
  || { cat "$SCRATCH/apt.log"; exit 1; }
echo "apt-get install ./${deb##*/}: $(dpkg-query -W -f='${Status}, version ${Version}' "$name")" | n
dpkg-query -L "$name" | grep -v '^/\.$' | sort >"$SCRATCH/files"
while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done <"$SCRATCH/files" | n | grep -v '/html/' | sed 's/^/  installed: /'
echo "  installed: the manual's site, $(grep -c '/html/.*\.html$' "$SCRATCH/files") pages under /usr/share/doc/postgresql-<N>-pg-snowflake/html/ ($([ -f "/usr/share/doc/$name/html/index.html" ] && echo index.html || echo 'no index.html'))"
as_root dpkg --verify "$name" && echo "dpkg --verify: every file as packaged"

use_system_pg "$PG_MAJOR"
init_cluster debian "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster debian
echo "server: $PG_BIN/postgres, $("$PG_BIN/postgres" --version | grep -q '(Debian ' && echo "Debian's build")" | n
psql_on debian -e -f "$PROJECT_DIR/pgrx-tests/harness/sql/demo.sql" >>"$REPORT" 2>&1
psql_on debian -At <<'SQL'
SELECT 'demo: ' || count(*) || ' rows, ids distinct: ' || (count(DISTINCT id) = count(*))
       || ', machine ids: ' || string_agg(DISTINCT snowflake_machine_id(id)::text, ',') FROM orders;
SELECT 'library: ' || probin || ', the functions in it: ' || (count(*) > 0)
FROM pg_proc WHERE probin IS NOT NULL AND proname LIKE 'snowflake%' GROUP BY probin;
CREATE DATABASE old;
SQL
create_extension debian old 0.1.0
psql_on debian -d old -At <<'SQL' | n
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
INSERT INTO t SELECT FROM generate_series(1, 100);
SELECT max(id) AS before FROM t \gset
ALTER EXTENSION pg_snowflake UPDATE;
INSERT INTO t SELECT FROM generate_series(1, 100);
SELECT 'from 0.1.0, updated to ' || extversion || ' by the packaged script; new ids above the old: '
       || (SELECT min(id) > :before FROM (SELECT id FROM t ORDER BY id DESC LIMIT 100) s)
FROM pg_extension WHERE extname = 'pg_snowflake';
SQL
stop_cluster debian

as_root dpkg -r "$name" >"$SCRATCH/dpkg-r.log" 2>&1 || { cat "$SCRATCH/dpkg-r.log"; exit 1; }
status=$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null) || status="dpkg no longer knows the package"
echo "after dpkg -r: $status"
left=0
while read -r f; do
  if [ -f "$f" ] || { [ -d "$f" ] && [ -z "$(dpkg-query -S "$f" 2>/dev/null)" ]; }; then
    echo "  left behind: $f" | n
    left=$((left + 1))
  fi
done <"$SCRATCH/files"
echo "files and directories of the package left behind: $left"
echo "pg_snowflake files in $libdir and $extdir: $(find "$libdir" "$extdir" -maxdepth 1 -name 'pg_snowflake*' | wc -l)" | n
as_root dpkg --purge "$name" >/dev/null 2>&1 || true
dpkg-query -W "$name" >/dev/null 2>&1 && echo "dpkg still knows $name after --purge" | n || echo "after dpkg --purge: dpkg does not know the package"
