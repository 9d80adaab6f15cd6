# The package's library (a release build): snowflake_nextval()'s raw entry point calls nothing but
# the vDSO clock and the guarded function, with no panic site, trap or call into PostgreSQL
# (pgrx-tests/packaging/fast_path_code.py reads its machine code with objdump; issue 61). The
# negative control: the same check on pgrx's guarded function, which may raise, names its panic
# sites and its calls into pgrx's error handling.
version=$(cargo_version)
arch=$(dpkg --print-architecture)
deb="$PACKAGES_DIR/postgresql-$PG_MAJOR-pg-snowflake_${version}_$arch.deb"
x="$SCRATCH/deb-fast-path"
rm -rf "$x"
dpkg-deb -x "$deb" "$x"
lib=$(find "$x" -name 'pg_snowflake.so' | head -n 1)
[ -n "$lib" ] || die "no pg_snowflake.so in $deb"
python3 "$PROJECT_DIR/pgrx-tests/packaging/fast_path_code.py" "$lib"
if python3 "$PROJECT_DIR/pgrx-tests/packaging/fast_path_code.py" "$lib" snowflake_nextval_wrapper >"$SCRATCH/control.out"; then
  echo "the control passed: the check cannot see a panic site"
else
  grep -q 'core::panicking' "$SCRATCH/control.out" && grep -q 'pgrx_pg_sys' "$SCRATCH/control.out" \
    && echo "the control (pgrx's guarded function) is refused: it has panic sites and calls into pgrx's error handling"
fi
