# majors: all (what it tests differs by major: the WAL, shared memory, the generated SQL)
# Eight connections insert into one table keyed by DEFAULT snowflake_nextval() at once (pgbench,
# 8 clients x 5,000 single-row inserts): no duplicate, every connection's ids increase in the order
# it inserted them, and the connections really did overlap.
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
create_extension main
psql_on main \
  -c "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int NOT NULL, ord bigserial)"
echo 'INSERT INTO orders(conn) VALUES (:client_id);' > "$SCRATCH/insert.sql"
"$PG_BIN/pgbench" -n -h "$SCRATCH" -p "$(port_of main)" -U postgres -c 8 -j 2 -t 5000 -f "$SCRATCH/insert.sql" postgres \
  > "$SCRATCH/pgbench.log" 2>&1 || { cat "$SCRATCH/pgbench.log"; exit 1; }
psql_on main -A -F ' | ' <<'SQL'
\pset footer off
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids, count(DISTINCT conn) AS connections FROM orders;
SELECT count(*) AS out_of_order_within_a_connection
FROM (SELECT id, lag(id) OVER (PARTITION BY conn ORDER BY ord) AS prev FROM orders) s WHERE id <= prev;
-- Each connection's id range overlaps every other's: they ran at the same time.
SELECT bool_and(a.lo < b.hi AND b.lo < a.hi) AS connections_overlapped
FROM (SELECT conn, min(id) lo, max(id) hi FROM orders GROUP BY conn) a
JOIN (SELECT conn, min(id) lo, max(id) hi FROM orders GROUP BY conn) b ON a.conn < b.conn;
SELECT bool_and((snowflake_decode(id)).machine_id = 7) AS all_from_machine_7 FROM orders;
-- Nothing else issued ids here: the statistics (each process counts its own) add up exactly, and
-- a reset starts them from zero.
SELECT ids_issued = (SELECT count(*) FROM orders) AS stats_count_every_id FROM snowflake_stats();
SELECT snowflake_stats_reset();
SELECT count(snowflake_nextval()) AS issued_after_reset FROM generate_series(1, 123);
SELECT ids_issued AS counted_after_reset FROM snowflake_stats();
SQL
