# Machine ids from a Kubernetes StatefulSet's pod index (snowflake.machine_id_source = 'pod_index'):
# the environment variable that the Downward API fills from the apps.kubernetes.io/pod-index label
# (snowflake.pod_index_variable, POD_INDEX by default), plus snowflake.machine_id_offset. A variable
# that is empty or not an index refuses to generate (22023) and says why, at start and at every
# call; so does a machine id set by hand beside it. (The hostname's ordinal, used when the
# variable is unset, is tested in the core: this machine's hostname is not a pod's.)
export PGOPTIONS="-c client_min_messages=error"
# start_with NAME VALUE: starts cluster NAME with POD_INDEX=VALUE in the server's environment.
start_with() {
  as_pg_owner env POD_INDEX="$2" LD_LIBRARY_PATH="$("$PG_CONFIG" --libdir)" "$PG_BIN/pg_ctl" -D "$SCRATCH/$1" \
    -l "$SCRATCH/$1.log" -w -t 60 start >/dev/null || { cat "$SCRATCH/$1.log"; die "$1 did not start"; }
}
pod=("shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id_source = 'pod_index'")
init_cluster pod3 "${pod[@]}"
init_cluster offset "${pod[@]}" "snowflake.machine_id_offset = 100"
init_cluster empty "${pod[@]}"
init_cluster letters "${pod[@]}"
init_cluster by_hand_too "${pod[@]}" "snowflake.machine_id = 5"
start_with pod3 3
start_with offset 3
start_with empty ""
start_with letters "pg-3"
start_with by_hand_too 3
for c in pod3 offset; do
  create_extension "$c"
  psql_on "$c" -At -c "SELECT '$c: machine id ' || machine_id || ' (' || source || '), ids under it: ' || (snowflake_machine_id(snowflake_nextval()) = machine_id) FROM snowflake_machine_id_status()"
done
for c in empty letters by_hand_too; do
  create_extension "$c"
  psql_on "$c" -c '\set VERBOSITY verbose' -c "SELECT snowflake_nextval()" 2>&1 | grep -v '^LOCATION' || true
  grep -c "pg_snowflake cannot generate ids: no machine id from" "$SCRATCH/$c.log" | sed "s/^/$c: said at start: /"
done
