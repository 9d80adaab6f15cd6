# majors: 15
# Machine ids leased from an etcd that speaks only TLS and asks for client certificates (Debian's
# etcd-server 3.4, --client-cert-auth, a CA made for the run; its certificate names IP 127.0.0.1
# only). With the CA, a client certificate and its key (the server's OS user's, mode 0600), the
# server claims an id over https://. It refuses (55000), saying why and naming the file at fault,
# with: no client certificate (etcd ends the handshake); another CA (etcd's certificate is not
# trusted); the endpoint named by a host the certificate does not name (https://localhost); a key
# file others can read; a key that is not the certificate's. The TLS files with http:// endpoints
# are refused at start. The key's text appears in no server log and no output.
export PGOPTIONS="-c client_min_messages=error"
trap stop_etcd EXIT
ETCD_TLS=1
plan_etcd 1
start_etcd
P=${ETCD_CLIENT_PORTS[0]}
T="$SCRATCH/etcd-tls"
make_etcd_ca "$SCRATCH/other-ca"
echo "etcd answers a client without a certificate: $(curl -s --max-time 5 --cacert "$T/ca.crt" \
  "https://127.0.0.1:$P/v3/kv/range" -d '{"key":"Lw=="}' >/dev/null && echo yes || echo no)"

conf=("shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'etcd'"
  "snowflake.etcd_prefix = '/pg_snowflake/tls'")
https=("snowflake.etcd_endpoints = 'https://127.0.0.1:$P'")
files=("snowflake.etcd_ca_file = 'etcd-ca.crt'" "snowflake.etcd_cert_file = 'etcd-client.crt'"
  "snowflake.etcd_key_file = 'etcd-client.key'")
init_cluster good "${conf[@]}" "${https[@]}" "${files[@]}"
init_cluster no_cert "${conf[@]}" "${https[@]}" "snowflake.etcd_ca_file = 'etcd-ca.crt'"
init_cluster other_ca "${conf[@]}" "${https[@]}" "${files[@]}"
init_cluster by_name "${conf[@]}" "snowflake.etcd_endpoints = 'https://localhost:$P'" "${files[@]}"
init_cluster loose_key "${conf[@]}" "${https[@]}" "${files[@]}"
init_cluster wrong_key "${conf[@]}" "${https[@]}" "${files[@]}"
init_cluster http "${conf[@]}" "snowflake.etcd_endpoints = 'http://127.0.0.1:$P'" "${files[@]}"
# place NAME CA_DIR KEY_DIR MODE: the CA, client certificate and key files into cluster NAME.
place() {
  as_pg_owner cp "$2/ca.crt" "$SCRATCH/$1/etcd-ca.crt"
  as_pg_owner cp "$T/client.crt" "$SCRATCH/$1/etcd-client.crt"
  as_pg_owner tee "$SCRATCH/$1/etcd-client.key" <"$3/client.key" >/dev/null
  as_pg_owner chmod "$4" "$SCRATCH/$1/etcd-client.key"
}
place good "$T" "$T" 600
place no_cert "$T" "$T" 600
place other_ca "$SCRATCH/other-ca" "$T" 600
place by_name "$T" "$T" 600
place loose_key "$T" "$T" 644
place wrong_key "$T" "$SCRATCH/other-ca" 600
place http "$T" "$T" 600
for c in good no_cert other_ca by_name loose_key wrong_key http; do
  start_cluster "$c"
  create_extension "$c"
done
echo "good holds machine id $(held_id good)"
psql_on good -At -c "SELECT 'an id under it: ' || (snowflake_machine_id(snowflake_nextval()) = 0)"
echo "etcd holds its claim: $(etcd_keys /pg_snowflake/tls/claim/)"
for c in no_cert other_ca by_name loose_key wrong_key; do
  wait_claim_error "$c"
  echo "$c:"
  psql_on "$c" -c "SELECT snowflake_nextval()" 2>&1 | grep ERROR | sed "s/$P/P/g; s#$SCRATCH#SCRATCH#g" || true
done
echo "http:"
psql_on http -c "SELECT snowflake_nextval()" 2>&1 | grep -E "ERROR|HINT" | sed "s/$P/P/g" || true
stop_cluster good
for c in good no_cert other_ca by_name loose_key wrong_key http; do
  psql_on "$c" -At -c "SELECT * FROM pg_settings WHERE name LIKE 'snowflake.%'" >>"$SCRATCH/shown.txt" 2>/dev/null || true
  psql_on "$c" -At -c "SELECT * FROM snowflake_machine_id_status()" >>"$SCRATCH/shown.txt" 2>/dev/null || true
done
# The key's middle line (base64 of the secret scalar), searched for everywhere.
SECRET=$(sed -n 2p "$T/client.key")
found=$(cat "$SCRATCH"/*.log "$SCRATCH/shown.txt" "$SCRATCH"/etcd-e1.log | grep -cF -- "$SECRET" || true)
echo "the client key in the server logs, pg_settings and snowflake_machine_id_status(): $found times"
echo "the same search in the key file: $(grep -cF -- "$SECRET" "$SCRATCH/good/etcd-client.key") time"
