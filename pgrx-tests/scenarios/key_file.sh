# The key of public ids from a file (snowflake.public_key_file), as PostgreSQL treats ssl_key_file:
# read at start and at each reload, refused when not owned by the server's OS user with mode 0600
# or less, rotation through the file, and the key in none of pg_settings, pg_db_role_setting,
# pg_stat_activity or the server log (log_statement = 'all'), for a plain role, a member of
# pg_read_all_settings, or a superuser. The retired inline settings refuse any value without
# repeating it. The hints name the OS user the server runs as: as root, a server run by `nobody`
# (not postgres) is told `chown nobody` (as another user, that user's own server).
export PGOPTIONS="-c client_min_messages=error"
K_FIXED=000102030405060708090a0b0c0d0e0f # the unit tests' key: its known answers
K1=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
K2=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
K_RETIRED=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
init_cluster keys "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" \
  "snowflake.public_key_file = 'snowflake.key'" "log_statement = 'all'" \
  "snowflake.public_key = '$K_RETIRED'"
DATA=$SCRATCH/keys
# write_key MODE LINE...: the key file, written by the server's OS user.
cat >"$SCRATCH/write_key.sh" <<EOF
mode=\$1; shift
if [ "\$(id -u)" = 0 ]; then run() { runuser -u postgres -- "\$@"; }; else run() { "\$@"; }; fi
printf '%s\n' "# pg_snowflake public-id keys: current, then previous" "\$@" | run tee "$DATA/snowflake.key.new" >/dev/null
run chmod "\$mode" "$DATA/snowflake.key.new"
run mv "$DATA/snowflake.key.new" "$DATA/snowflake.key"
EOF
write_key() { bash "$SCRATCH/write_key.sh" "$@"; }
reload() { psql_on keys -c "SELECT pg_reload_conf()" >/dev/null; sleep 0.5; }
q() { { psql_on keys -At -c "$1" 2>&1 || true; } | sed 's/^psql:[^E]*ERROR/ERROR/'; }

write_key 600 "$K_FIXED"
start_cluster keys
echo "-- read at start"
grep -c 'the key of public ids was read from snowflake.public_key_file "snowflake.key"' "$SCRATCH/keys.log" || true
grep -o 'snowflake.public_key and snowflake.public_key_previous are retired[^;]*' "$SCRATCH/keys.log" | head -n 1
create_extension keys
psql_on keys -c "CREATE ROLE app" -c "CREATE ROLE reader" \
  -c "CREATE ROLE settings_reader IN ROLE pg_read_all_settings" \
  -c "GRANT EXECUTE ON FUNCTION snowflake_to_public(bigint), snowflake_from_public(text), snowflake_try_from_public(text) TO app"
echo "-- the unit tests' known answer, round trips, tokens that are not ours"
q "SELECT snowflake_to_public(1)"
q "SELECT count(*) FROM generate_series(1, 2000) i WHERE snowflake_from_public(snowflake_to_public(i * 1234567::bigint)) <> i * 1234567::bigint"
q "SELECT snowflake_from_public('squg3pzlbqo6m356ttzatppckj')"
q "SELECT snowflake_try_from_public('squg3pzlbqo6m356ttzatppckj') IS NULL"

echo "-- rotation through the file, seen by a session that was already running"
write_key 600 "$K1"
reload
old=$(q "SELECT snowflake_to_public(42)")
psql_on keys -At -v ON_ERROR_STOP=0 -v VERBOSITY=terse 2>&1 <<SQL | sed -e 's/^psql:[^E]*ERROR/ERROR/' -e "s/$old/TOKEN_OF_42_UNDER_K1/"
SELECT 'made with K1: ' || snowflake_from_public('$old');
\! bash $SCRATCH/write_key.sh 600 $K2 $K1
SELECT 'K2 then K1 in the file, reloaded: ' || pg_reload_conf();
\! sleep 0.5
SELECT 'K1 now the previous key, its token still decodes: ' || snowflake_from_public('$old');
SELECT 'new tokens use K2: ' || (snowflake_to_public(42) <> '$old');
SELECT 'round trip under K2: ' || snowflake_from_public(snowflake_to_public(42));
\! bash $SCRATCH/write_key.sh 600 $K2
SELECT 'K2 alone in the file, reloaded: ' || pg_reload_conf();
\! sleep 0.5
SELECT 'K1 dropped, its token refused: ' || (snowflake_try_from_public('$old') IS NULL);
SELECT snowflake_from_public('$old');
SQL

echo "-- a key file that cannot be used is refused (at reload in the log, at use with F0000)"
for bad in "640" "604" "644" "chown" "three keys" "not hex" "empty" "missing"; do
  case $bad in
    chown) write_key 644 "$K2"; chown root "$DATA/snowflake.key" ;;
    "three keys") write_key 600 "$K2" "$K1" "$K1" ;;
    "not hex") write_key 600 "${K2:0:31}x" ;;
    empty) write_key 600 ;;
    missing) rm "$DATA/snowflake.key" ;;
    *) write_key "$bad" "$K2" ;;
  esac
  reload
  echo "$bad: $({ psql_on keys -At -c "SELECT snowflake_to_public(1)" 2>&1 || true; } \
    | grep -o 'ERROR: .*' | sed "s/user id [0-9]*/user id N/g" | head -n 1)"
done
{ psql_on keys -At -v VERBOSITY=verbose -c "SELECT snowflake_to_public(1)" 2>&1 || true; } | grep -E '^(psql:.*ERROR|HINT)' | sed -E 's/^psql:[^E]*ERROR/ERROR/; s/user id [0-9]+/user id N/g'
{ grep -c 'public ids are refused until the key file is fixed' "$SCRATCH/keys.log" || true; } | sed 's/^/warnings logged at reload: /'
write_key 600 "$K2" "$K1"
reload
q "SELECT snowflake_from_public(snowflake_to_public(7))"

echo "-- a FIFO or a device as the key file: refused at reload without being opened; the server goes on taking connections"
# A blocking open() of a FIFO waits for a writer: the postmaster, which reads the file at reload,
# would accept no connection meanwhile.
rm -f "$DATA/snowflake.key"
as_pg_owner mkfifo -m 600 "$DATA/snowflake.key"
psql_on keys -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
if timeout 8 "$PG_BIN/psql" -X -At -h "$SCRATCH" -p "$(port_of keys)" -U postgres -d postgres -c "SELECT 'a new connection got through'" 2>&1; then :; else
  echo "no new connection within 8 s"
fi
# (Were the postmaster stuck in open(), a writer releases it, so that the scenario goes on.)
timeout 5 bash -c "exec 3>'$DATA/snowflake.key'" 2>/dev/null || true
q "SELECT snowflake_to_public(1)" | { grep -o 'ERROR: .*' || true; }
rm -f "$DATA/snowflake.key"
ln -s /dev/zero "$DATA/snowflake.key"
reload
q "SELECT snowflake_to_public(1)" | { grep -o 'ERROR: .*' || true; }
rm -f "$DATA/snowflake.key"
write_key 600 "$K2" "$K1"
reload
q "SELECT snowflake_from_public(snowflake_to_public(7))"

echo "-- the retired inline settings refuse a key without repeating it"
q "ALTER SYSTEM SET snowflake.public_key = '$K_RETIRED'" | sed "s/$K_RETIRED/THE KEY/g"
q "SET snowflake.public_key_previous = '$K_RETIRED'" | sed "s/$K_RETIRED/THE KEY/g"
q "ALTER ROLE reader SET snowflake.public_key = '$K_RETIRED'" | sed "s/$K_RETIRED/THE KEY/g"

echo "-- the keys are in none of the views, for any role"
# Controls: the same reads find a value put where each view shows it.
psql_on keys -c "ALTER ROLE reader SET application_name = 'control-in-role-setting'"
for role in reader settings_reader app postgres; do
  # One statement per line (psql before 15 prints only the last result of a multi-statement -c).
  psql_on keys -At >"$SCRATCH/views-$role.out" 2>&1 <<SQL
SET application_name = 'control-in-activity';
SET ROLE $role;
SELECT 'pg_settings ' || string_agg(s::text, ' ') FROM pg_settings s;
SELECT 'show_all ' || string_agg(a::text, ' ') FROM (SELECT * FROM pg_show_all_settings()) a;
SELECT 'db_role_setting ' || string_agg(r::text, ' ') FROM pg_db_role_setting r;
SELECT 'activity ' || string_agg(a::text, ' ') FROM pg_stat_activity a;
SELECT 'current_setting ' || current_setting('snowflake.public_key_file');
SQL
  found=$({ grep -o -e "$K1" -e "$K2" -e "$K_RETIRED" "$SCRATCH/views-$role.out" || true; } | wc -l)
  controls=$(grep -c -e 'control-in-activity' -e 'control-in-role-setting' "$SCRATCH/views-$role.out" || true)
  echo "$role: keys found: $found; controls found in $controls views"
done
stop_cluster keys
echo "-- the server log (log_statement = 'all') after all of this: only the statements we typed the retired key into"
for k in K1 K2 K_RETIRED; do
  echo "$k in the log: $(grep -c -- "${!k}" "$SCRATCH/keys.log" || true) lines, outside our own statements: $(grep -- "${!k}" "$SCRATCH/keys.log" | grep -vc -e ' LOG:  statement: ' -e ' STATEMENT:  ' || true)"
done

echo "-- the hints name the server's OS user, whoever it is (not always postgres)"
# As root: a server of its own run by the OS user nobody (its data dir owned by nobody, so that
# stop_all_clusters stops it as nobody too), its key file owned by root, then by nobody with mode
# 0644. As another user, the servers here are already that user's: its key file unreadable (mode
# 0000), then with mode 0644.
if [ "$(id -u)" = 0 ]; then
  other=nobody odir="$SCRATCH/by_other" orun="$SCRATCH/by_other.run"
  install -d -o nobody -m 700 "$odir" && install -d -o nobody -m 755 "$orun"
  as_other() { runuser -u nobody -- env LD_LIBRARY_PATH="$("$PG_CONFIG" --libdir)" "$@"; }
  as_other "$PG_BIN/initdb" -D "$odir" -U postgres -A trust --no-sync >/dev/null
  printf '%s\n' "listen_addresses = ''" "unix_socket_directories = '$orun'" "port = 5432" "fsync = off" \
    "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "snowflake.public_key_file = '$orun/snowflake.key'" \
    | as_other tee -a "$odir/postgresql.conf" >/dev/null
  echo "$K_FIXED" >"$orun/snowflake.key"
  chmod 644 "$orun/snowflake.key"
  as_other "$PG_BIN/pg_ctl" -D "$odir" -l "$orun/log" -w start >/dev/null
  oq() { { "$PG_BIN/psql" -X -q -At -h "$orun" -p 5432 -U postgres -d postgres -c "$1" 2>&1 || true; } | sed 's/^psql:[^E]*ERROR/ERROR/'; }
  create_extension_sql postgres | "$PG_BIN/psql" -X -q -h "$orun" -p 5432 -U postgres -d postgres >/dev/null
  wrong_owner() { chown root "$orun/snowflake.key"; }
  own_file() { chown nobody "$orun/snowflake.key"; }
  reload_other() { oq "SELECT pg_reload_conf()" >/dev/null; sleep 0.5; }
  stop_other() { as_other "$PG_BIN/pg_ctl" -D "$odir" -m fast -w stop >/dev/null; }
else
  other=$(id -un) orun=$DATA
  start_cluster keys
  write_key 644 "$K_FIXED"
  oq() { q "$1"; }
  # Another owner than the server's user cannot be made without root: the hints of a loose mode
  # and of an unreadable file name the user all the same.
  wrong_owner() { chmod 000 "$orun/snowflake.key"; }
  own_file() { chmod 644 "$orun/snowflake.key"; }
  reload_other() { reload; }
  stop_other() { stop_cluster keys; }
fi
echo "the server's OS user: $other" >>"$REPORT"
wrong_owner
reload_other
oq "SELECT snowflake_to_public(1)" >"$SCRATCH/other.out"
grep -q "OS user, $other," "$SCRATCH/other.out" && echo "the hint names the server's OS user: yes" || echo "the hint names the server's OS user: no"
{ grep -c "postgres" "$SCRATCH/other.out" || true; } | sed 's/^/lines naming postgres: /'
own_file
reload_other
oq "SELECT snowflake_to_public(1)" >>"$SCRATCH/other.out"
grep -q "Only the server's OS user, $other, may" "$SCRATCH/other.out" && echo "the loose mode's hint names it: yes" || echo "the loose mode's hint names it: no"
stop_other
