# majors: 15
# Machine ids leased from an etcd with authentication on (Debian's etcd-server 3.4 on 127.0.0.1):
# a user of its own with read-write on the id space's prefix, its password in
# snowflake.etcd_credentials_file (the server's OS user's, mode 0600, as the key file of public
# ids). With the file the server claims an id; without it, with the wrong password, or with a file
# others can read, it refuses (55000) and says why, naming the file and the user, never the
# password. The password planted in the file appears in no server log, no output and no setting
# (and the same search finds it in the file itself: the search works). The commands the manual and
# the hints give are run as written (issue 57, item 3): the good server's file is written by the
# manual's block (Running on many servers, etcd's authentication); the file others could read is
# fixed, and the worker restarted with the command of the refusal's hint (the worker is in
# pg_stat_activity): it reads the file again and claims an id.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
plan_etcd 1
start_etcd
E=http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}
SECRET=S3cret-Planted-$$
b64() { printf %s "$1" | base64 -w0; }
post() { curl -sf --max-time 5 "$E$1" -d "$2" >/dev/null || die "etcd refused $1"; }
post /v3/auth/user/add '{"name":"root","password":"root-pw"}'
post /v3/auth/role/add '{"name":"root"}'
post /v3/auth/user/grant '{"user":"root","role":"root"}'
post /v3/auth/user/add "{\"name\":\"snowflake\",\"password\":\"$SECRET\"}"
post /v3/auth/role/add '{"name":"snowflake"}'
post /v3/auth/role/grant "{\"name\":\"snowflake\",\"perm\":{\"permType\":\"READWRITE\",\"key\":\"$(b64 /pg_snowflake/)\",\"range_end\":\"$(b64 /pg_snowflake0)\"}}"
post /v3/auth/user/grant '{"user":"snowflake","role":"snowflake"}'
post /v3/auth/enable '{}'
echo "etcd's authentication is on: an anonymous read is refused: $(curl -s "$E/v3/kv/range" -d "{\"key\":\"$(b64 /pg_snowflake/)\"}" | grep -q 'user name is empty' && echo yes || echo no)"

conf=("shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'etcd'"
  "snowflake.etcd_endpoints = '$E'" "snowflake.etcd_prefix = '/pg_snowflake/auth'")
init_cluster good "${conf[@]}" "snowflake.etcd_credentials_file = 'etcd.credentials'"
init_cluster anonymous "${conf[@]}"
init_cluster wrong "${conf[@]}" "snowflake.etcd_credentials_file = 'etcd.credentials'"
init_cluster loose "${conf[@]}" "snowflake.etcd_credentials_file = 'etcd.credentials'"
# credentials NAME USER PASSWORD MODE
credentials() {
  printf '%s\n%s\n' "$2" "$3" | as_pg_owner tee "$SCRATCH/$1/etcd.credentials" >/dev/null
  as_pg_owner chmod "$4" "$SCRATCH/$1/etcd.credentials"
}
# The manual's block, as written: PGDATA and ETCD_PASSWORD set, as the server's OS user.
block=$(sed -n "/^\*\*etcd's authentication\*\*/,/^\`\`\`ini/p" "$PROJECT_DIR/docs/many-servers.md" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
[ -n "$block" ] || die "no shell block under etcd's authentication in docs/many-servers.md"
as_pg_owner env PGDATA="$SCRATCH/good" ETCD_PASSWORD="$SECRET" bash -euc "$block"
echo "the manual's block wrote good's file: $(as_pg_owner stat -c '%a %U' "$SCRATCH/good/etcd.credentials")"
credentials wrong snowflake "not-$SECRET" 600
credentials loose snowflake "$SECRET" 644
for c in good anonymous wrong loose; do
  start_cluster "$c"
  create_extension "$c"
done
echo "good holds machine id $(held_id good)"
psql_on good -At -c "SELECT 'an id under it: ' || (snowflake_machine_id(snowflake_nextval()) = 0)"
for c in anonymous wrong loose; do
  wait_claim_error "$c"
  psql_on "$c" -c "SELECT snowflake_nextval()" 2>&1 | tee -a "$SCRATCH/refusals.txt" | grep ERROR | sed "s/${ETCD_CLIENT_PORTS[0]}/P1/g; s#$SCRATCH#SCRATCH#g" || true
done
python3 "$PROJECT_DIR/pgrx-tests/harness/errors_in_page.py" "the three refusals" "$SCRATCH/refusals.txt" 2>>"$REPORT"
# The loose file fixed, the worker restarted with the hint's own command (as the hint writes it).
as_pg_owner chmod 600 "$SCRATCH/loose/etcd.credentials"
command=$(sed -n "s/^HINT: .*its worker (\(SELECT .*\))\.\$/\1/p" "$SCRATCH/refusals.txt" | head -n 1)
echo "the hint's command: $command"
echo "run on loose, it terminated $(psql_on loose -At -c "$command" | grep -c '^t$') worker"
echo "loose, its file fixed and its worker restarted, holds machine id $(held_id loose)"
stop_cluster good
for c in good anonymous wrong loose; do
  psql_on "$c" -At -c "SELECT * FROM pg_settings WHERE name LIKE 'snowflake.%'" >>"$SCRATCH/shown.txt" 2>/dev/null || true
  psql_on "$c" -At -c "SELECT * FROM snowflake_machine_id_status()" >>"$SCRATCH/shown.txt" 2>/dev/null || true
done
found=$(cat "$SCRATCH"/*.log "$SCRATCH/shown.txt" "$SCRATCH"/etcd-e1.log | grep -c -- "$SECRET" || true)
echo "the password in the server logs, pg_settings and snowflake_machine_id_status(): $found times"
echo "the same search in the credentials file: $(grep -c -- "$SECRET" "$SCRATCH/good/etcd.credentials") time"
