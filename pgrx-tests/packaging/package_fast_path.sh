# The package's library (a release build): snowflake_nextval()'s raw entry point calls nothing but
# the vDSO clock and the guarded function, with no panic site, trap or call into PostgreSQL
# (pgrx-tests/packaging/fast_path_code.py reads its machine code with objdump; issue 61). The
# negative control: the same check on pgrx's guarded function, which may raise: refused, each call
# outside the allowed set named (by its address where the stripped library has no name for it).
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
  echo "the control passed: the check cannot see a call outside the fast path"
else
  # The package's library is stripped: the guarded function's panic sites and calls into pgrx are
  # local functions without a name there, each named by its address.
  echo "the control (pgrx's guarded function) is refused: $(grep -c '^  ' "$SCRATCH/control.out" | sed 's/^[1-9][0-9]*$/it calls outside the allowed set/')"
fi
