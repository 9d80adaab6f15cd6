# The packages of one PostgreSQL major, as pgrx-tests/package.sh wrote them: the Debian package's
# control fields, every file with its mode and owner, its md5sums, the copyright file; the library
# is a release build for PostgreSQL (magic block, _PG_init) without the test-only fault injection;
# the tarball holds the same files; the monitoring files (docs/monitoring.md) are the checkout's. (The major is printed as <N>, the version as <version>.)
version=$(cargo_version)
arch=$(dpkg --print-architecture)
name="postgresql-$PG_MAJOR-pg-snowflake"
deb="$PACKAGES_DIR/${name}_${version}_$arch.deb"
tgz="$PACKAGES_DIR/${name}_${version}_$arch.tar.gz"
n() {
  sed -e "s/${version//./\\.}/<version>/g" -e "s/postgresql-$PG_MAJOR-/postgresql-<N>-/g" \
      -e "s#/$PG_MAJOR/#/<N>/#g" -e "s/PostgreSQL $PG_MAJOR\$/PostgreSQL <N>/" -e "s/postgresql-$PG_MAJOR\b/postgresql-<N>/g"
}
echo "== ${deb##*/}" | n
dpkg-deb -f "$deb" Package Source Version Architecture Depends Section Priority Maintainer \
  | sed 's/libc6 (>= [0-9.]*)/libc6 (>= <glibc of the build>)/' | n
dpkg-deb -f "$deb" Description | n
# The manual's site (html/): its pages by name, its other files (theme, search index) counted.
site() { grep -v '/html/.*/.' | grep -v '/html/[^/]*\.[a-z]*$'; }
echo "files (mode, owner, path; html/ below):"
dpkg-deb -c "$deb" | awk '{print $1, $2, $6}' | n | site
echo "control members: $(dpkg-deb --ctrl-tarfile "$deb" | tar -t | sort | tr '\n' ' ')"
x="$SCRATCH/deb"
t="$SCRATCH/tgz"
rm -rf "$x" "$t"   # (left by another major's run)
dpkg-deb -x "$deb" "$x"
(cd "$x" && dpkg-deb -I "$deb" md5sums | md5sum -c --quiet) && echo "md5sums: every file matches"
doc="$x/usr/share/doc/$name"
echo "copyright:"
sed -n '1,/^License:/p' "$doc/copyright"
diff <(sed -n '/^Permission to use/,$p' "$PROJECT_DIR/LICENSE") <(sed -n '/^ Permission to use/,$p' "$doc/copyright" | sed 's/^ //; s/^\.$//') \
  && echo "  its licence text is LICENSE's"
cmp -s "$PROJECT_DIR/README.md" "$doc/README.md" && echo "README.md: the checkout's"
for f in "$PROJECT_DIR"/monitoring/*.yaml; do
  cmp -s "$f" "$doc/monitoring/${f##*/}" && echo "monitoring/${f##*/}: the checkout's"
done
# html/: a page for the README and for each page of docs/, the search index, and nothing that
# loads from outside the site (the manual reads offline).
pages=yes
[ -f "$doc/html/index.html" ] || pages="no index.html"
for f in "$PROJECT_DIR"/docs/*.md; do
  b=${f##*/}; [ -f "$doc/html/${b%.md}.html" ] || pages="no ${b%.md}.html"
done
echo "html/: a page for README.md and each of docs/*.md: $pages; the search index: $([ -f "$doc/html/search/search_index.json" ] && echo yes || echo no); $(find "$doc/html" -type f | wc -l | awk '{print ($1 > 30) ? "its theme and scripts" : "too few files"}')"
echo "html/ loads from outside the site: $(grep -rlE '(src|href)="https?://(fonts|cdn|unpkg|cdnjs)' "$doc/html" | wc -l) files"
so="$x/usr/lib/postgresql/$PG_MAJOR/lib/pg_snowflake.so"
file -b "$so" | cut -d, -f1-2
echo "needs: $(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')"
echo "exports: $(nm -D --defined-only "$so" | awk '{print $3}' | grep -E '^(Pg_magic_func|_PG_init|snowflake_nextval_wrapper)$' | sort | tr '\n' ' ')"
strings "$so" | grep -q fault_clock_offset && echo "the library has the test-only fault_clock_offset setting" || echo "no test-only fault injection in the library"
# Every SQL script in the package: the frozen and generated install scripts are the checkout's.
for f in "$x/usr/share/postgresql/$PG_MAJOR/extension/"*.sql; do
  case ${f##*/} in
    "pg_snowflake--$version.sql") python3 "$PROJECT_DIR/pgrx-tests/checks/sql_snapshot.py" check "$f" >/dev/null && echo "${f##*/}: matches the SQL snapshot" | n ;;
    *) cmp -s "$f" "$PROJECT_DIR/sql/${f##*/}" && echo "${f##*/}: the checkout's sql/${f##*/}" | n ;;
  esac
done
echo "== ${tgz##*/}" | n
tar -tzvf "$tgz" | awk '{print $1, $2, $6}' | n | site
mkdir -p "$t"
tar -xzf "$tgz" -C "$t"
tdir="$t/${name}_${version}_$arch"
same=yes
for f in "$tdir"/lib/*; do
  cmp -s "$f" "$x/usr/lib/postgresql/$PG_MAJOR/lib/${f##*/}" || same="no: lib/${f##*/}"
done
for f in "$tdir"/extension/*; do
  cmp -s "$f" "$x/usr/share/postgresql/$PG_MAJOR/extension/${f##*/}" || same="no: extension/${f##*/}"
done
for f in "$tdir"/monitoring/*; do
  cmp -s "$f" "$doc/monitoring/${f##*/}" || same="no: monitoring/${f##*/}"
done
[ "$(find "$tdir/lib" "$tdir/extension" -name "pg_snowflake*" | wc -l)" = "$(dpkg-deb -c "$deb" | grep -c 'pg_snowflake[-.]')" ] || same="no: not the same files"
[ "$(find "$tdir/monitoring" -type f | wc -l)" = "$(dpkg-deb -c "$deb" | grep -c 'pg-snowflake/monitoring/.')" ] || same="no: not the same monitoring files"
echo "its library, SQL and monitoring files are the Debian package's: $same"
