# The seeds' B-tree experiment (sourced by pgrx-tests/bench/bench.sh).
#
# The same N rows loaded into four tables whose primary key is a bigserial, a UUIDv4
# (gen_random_uuid()), a UUIDv7 (core uuidv7() on PostgreSQL 18; before 18 a SQL function doing
# the same: 48-bit Unix milliseconds, then random bits) and a snowflake id, one table after the
# other, with a 32 MB buffer pool against final indexes of hundreds of MB. Each is loaded by
# INSERT ... SELECT in equal batches, each batch its own transaction; per batch: the time taken
# and the WAL written. After: the sizes, and pgstattuple's pgstatindex() for leaf density.
# Writes $DATA/btree_batches.tsv (key, rows after the batch, seconds, WAL bytes) and
# $DATA/btree.tsv (key, rows, index bytes, table bytes, leaf density %, leaf pages).

rows=10000000 batches=40
[ -n "$QUICK" ] && rows=100000 batches=4
set_and_restart shared_buffers=32MB

uuidv7=uuidv7
if [ "$MAJOR" -lt 18 ]; then
  uuidv7=bench_uuidv7
  psql_on bench <<'SQL'
-- RFC 9562 UUIDv7: a v4 UUID with its first 48 bits replaced by the Unix time in milliseconds and
-- its version nibble turned from 4 (0100) into 7 (0111) by setting two bits.
CREATE FUNCTION bench_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
      PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
      FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;
SQL
fi

psql_on bench <<SQL
CREATE TABLE key_bigserial (id bigserial PRIMARY KEY, v int);
CREATE TABLE key_uuidv4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), v int);
CREATE TABLE key_uuidv7 (id uuid PRIMARY KEY DEFAULT $uuidv7(), v int);
CREATE TABLE key_snowflake (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v int);
CREATE TABLE btree_batches (key text, rows_after bigint, seconds float8, wal_bytes numeric);

-- Loads rows in batches, one transaction each, timing each and measuring its WAL.
CREATE PROCEDURE btree_load(key text, total bigint, batches int) LANGUAGE plpgsql AS \$\$
DECLARE
  per bigint := total / batches;
  t0 timestamptz;
  lsn0 pg_lsn;
BEGIN
  FOR b IN 1..batches LOOP
    t0 := clock_timestamp();
    lsn0 := pg_current_wal_insert_lsn();
    EXECUTE format('INSERT INTO %I (v) SELECT g FROM generate_series(1, %s) g', 'key_' || key, per);
    INSERT INTO btree_batches VALUES (key, b * per, extract(epoch FROM clock_timestamp() - t0),
      pg_wal_lsn_diff(pg_current_wal_insert_lsn(), lsn0));
    COMMIT;
  END LOOP;
END
\$\$;
SQL

for key in bigserial uuidv4 uuidv7 snowflake; do
  psql_on bench -c "CHECKPOINT" -c "CALL btree_load('$key', $rows, $batches)"
done

psql_on bench -At -F $'\t' -c "SELECT key, rows_after, seconds, wal_bytes FROM btree_batches ORDER BY key, rows_after" \
  >"$DATA/btree_batches.tsv"
psql_on bench -At -F $'\t' >"$DATA/btree.tsv" <<'SQL'
SELECT key, max_rows,
       pg_relation_size(format('key_%s_pkey', key)), pg_relation_size(format('key_%s', key)),
       s.avg_leaf_density, s.leaf_pages
FROM (SELECT key, max(rows_after) AS max_rows FROM btree_batches GROUP BY key) k,
     pgstatindex(format('key_%s_pkey', key)) s
ORDER BY key;
SQL
psql_on bench -c "DROP TABLE key_bigserial, key_uuidv4, key_uuidv7, key_snowflake, btree_batches"
