# majors: 15
# alone: it injects I/O faults into a server's processes with strace, with nothing beside it
# I/O faults on the mark: the data directory's file system full (a 300 MB tmpfs filled up), the
# mark's directory read-only, and fsync failing (strace injects EIO into the writing backend's
# fsync calls). In each case ids go on while the current lease lasts, then generation refuses with
# the SQLSTATE PostgreSQL gives its own file errors (53100, 42501, 58030) and the system's reason;
# once the fault is gone it resumes by itself, without a restart; and after a crash that follows,
# no id is repeated or issued below an earlier one. Needs root (mount, strace).
export PGOPTIONS="-c client_min_messages=error"
[ "$(id -u)" = 0 ] || { echo "run as root: the scenario mounts a tmpfs and attaches strace"; exit 1; }
data="$SCRATCH/small"
mkdir -p "$data"
mount -t tmpfs -o size=300m,mode=700 tmpfs "$data"
chown postgres: "$data"
# unmount: the tmpfs let go of, once the last of the server's processes (whose working directory
# it is) has exited: pg_ctl's wait ends with the postmaster's pid file, which under load can be
# before its last child is gone (at most 10 s, then umount's own message).
unmount() {
  local _
  for _ in $(seq 1 100); do umount "$data" 2>/dev/null && return 0; sleep 0.1; done
  umount "$data" || true
}
trap 'as_pg_owner "$PG_BIN/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true; unmount' EXIT
init_cluster small "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster small
create_extension small
psql_on small -c "CREATE TABLE ids (n bigserial PRIMARY KEY, id bigint NOT NULL UNIQUE)"
phase=0

record() {
  psql_on small -c "INSERT INTO ids (id) SELECT snowflake_nextval() FROM generate_series(1, 1000)"
}

# refused: the error (SQLSTATE and message) of one call, which needs a new mark.
refused() {
  { psql_on small -v VERBOSITY=verbose -c "SELECT snowflake_nextval()" 2>&1 >/dev/null || true; } | sed -n 's/^ERROR:  //p'
}

# resumed TITLE: ids again without a restart (within 10 s), then a crash and ids above all before.
resumed() {
  local back=no
  for _ in $(seq 1 50); do
    record 2>/dev/null && back=yes && break
    sleep 0.2
  done
  echo "$1: the fault gone, ids again without a restart: $back"
  as_pg_owner "$PG_BIN/pg_ctl" -D "$data" -m immediate -w stop >/dev/null
  start_cluster small
  record
  psql_on small -At -c "SELECT '$1: after a crash, ids at or below an earlier one: '
    || count(*) FROM (SELECT id, max(id) OVER (ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM ids) x
    WHERE id <= before"
}

record
# 1. The file system full.
as_pg_owner dd if=/dev/zero of="$data/filler" bs=1M status=none 2>/dev/null || true
echo "disk full: ids while the lease lasts: $(psql_on small -At -c "SELECT count(snowflake_nextval()) FROM generate_series(1, 10)" 2>/dev/null || echo none)"
lease_spent small
echo "disk full: once the lease is spent: $(refused)"
rm -f "$data/filler"
resumed "disk full"

# 2. The mark's directory (the data directory) read-only.
lease_spent small
as_pg_owner chmod 500 "$data"
echo "read-only directory: $(refused)"
as_pg_owner chmod 700 "$data"
resumed "read-only directory"

# 3. fsync failing in the backend that writes the mark.
lease_spent small
cat >"$SCRATCH/fsync.sql" <<EOF
\\set ON_ERROR_STOP 0
\\set VERBOSITY verbose
SELECT pg_backend_pid() AS pid \\gset
\\setenv BACKEND :pid
\\! strace -f -qq -o /dev/null -e trace=fsync -e inject=fsync:error=EIO -p \$BACKEND & echo \$! > $SCRATCH/strace.pid; sleep 1
SELECT snowflake_nextval() IS NOT NULL AS issued;
\\! kill \$(cat $SCRATCH/strace.pid); sleep 0.5
SELECT snowflake_nextval() IS NOT NULL AS "issued once strace is gone";
EOF
psql_on small -At -f "$SCRATCH/fsync.sql" 2>&1 | sed -n 's/^psql:[^ ]* ERROR:  /ERROR:  /; s/^ERROR:  /fsync failing: /p; s/^t$/fsync failing: then, in the same session, an id: yes/p'
resumed "fsync failing"
