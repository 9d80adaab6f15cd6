# snowflake_convert_column() on an existing schema: a serial key referenced by foreign keys (one
# from another table, one self-referencing, and a second level below), an identity column (ALWAYS),
# a bigserial. The dry run changes nothing; the conversion widens every column in one
# transaction, keeps the rows as they are, and new rows get snowflake ids; refusals (a view, a
# composite key, a non-integer column, a partitioned table, a temporary table, a column without a
# sequence, a user who does not own the tables, NULLs) leave nothing changed. Then pg_dump of the converted database restores into a
# new one, which takes new rows too.
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
q() { psql_on main -X -A -F '|' --pset footer=off "$@"; }
q <<'SQL'
CREATE EXTENSION pg_snowflake;
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE categories (id serial PRIMARY KEY, parent_id int REFERENCES categories(id), name text);
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL REFERENCES customers(id), category_id int REFERENCES categories(id));
CREATE INDEX ON orders (customer_id);
CREATE TABLE order_notes (order_id bigint REFERENCES orders(id), note text);
CREATE TABLE items (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, sku text);
INSERT INTO customers(name) VALUES ('ann'), ('bob');
INSERT INTO categories(parent_id, name) VALUES (NULL, 'books'), (1, 'novels');
INSERT INTO orders(customer_id, category_id) VALUES (1, 2), (2, 1);
INSERT INTO order_notes VALUES (1, 'gift');
INSERT INTO items(sku) VALUES ('a'), ('b');
SQL
echo "== dry run: the DDL, nothing changed"
q -c "SELECT * FROM snowflake_convert_column('customers', 'id')"
q -c "SELECT * FROM snowflake_convert_column('categories', 'id')"
q -c "SELECT * FROM snowflake_convert_column('orders', 'id')"
q -c "SELECT * FROM snowflake_convert_column('items', 'id')"
types() {
  q -c "SELECT attrelid::regclass AS tbl, attname, atttypid::regtype, attidentity, pg_get_expr(d.adbin, d.adrelid) AS default
        FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE attrelid IN ('customers'::regclass, 'categories'::regclass, 'orders'::regclass, 'items'::regclass, 'order_notes'::regclass)
          AND attnum > 0 AND atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) ORDER BY attrelid::regclass::text, attnum"
  q -c "SELECT count(*) AS sequences FROM pg_class WHERE relkind = 'S'"
}
types
echo "== refusals: SQLSTATE, message, hint; nothing changed"
q -f "$PROJECT_DIR/pgrx-tests/include/error_of.sql" >/dev/null
q <<'SQL'
CREATE VIEW customer_names AS SELECT id, name FROM customers;
CREATE TABLE pairs (a serial, b int, PRIMARY KEY (a, b));
CREATE TABLE plain (id int PRIMARY KEY, label text);
CREATE TABLE parted (id serial, PRIMARY KEY (id)) PARTITION BY RANGE (id);
SELECT * FROM error_of($$SELECT snowflake_convert_column('customers', 'id', false)$$);
DROP VIEW customer_names;
SELECT * FROM error_of($$SELECT snowflake_convert_column('pairs', 'a', false)$$);
SELECT * FROM error_of($$SELECT snowflake_convert_column('plain', 'id', false)$$);
SELECT * FROM error_of($$SELECT snowflake_convert_column('plain', 'label', false)$$);
SELECT * FROM error_of($$SELECT snowflake_convert_column('plain', 'nope', false)$$);
SELECT * FROM error_of($$SELECT snowflake_convert_column('parted', 'id', false)$$);
SELECT * FROM error_of($$SELECT snowflake_convert_column('no_such_table', 'id', false)$$);
SELECT * FROM error_of($$CREATE TEMP TABLE tmp (id serial PRIMARY KEY); SELECT snowflake_convert_column('tmp', 'id', false)$$);
SELECT count(*) AS rows_for_null FROM snowflake_convert_column(NULL, 'id', false);
CREATE ROLE alice;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO alice;
SET ROLE alice;
SELECT * FROM error_of($$SELECT snowflake_convert_column('customers', 'id', false)$$);
RESET ROLE;
SQL
types
echo "== a failure half-way (an event trigger refuses the third statement) leaves nothing changed"
q <<'SQL'
CREATE FUNCTION refuse_orders() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() WHERE object_identity LIKE 'public.orders%') THEN
    RAISE EXCEPTION 'orders is frozen';
  END IF;
END $$;
CREATE EVENT TRIGGER freeze_orders ON ddl_command_end EXECUTE FUNCTION refuse_orders();
SELECT * FROM error_of($$SELECT snowflake_convert_column('customers', 'id', false)$$);
DROP EVENT TRIGGER freeze_orders;
SQL
types
echo "== the conversion"
q <<'SQL'
BEGIN;
SELECT * FROM snowflake_convert_column('customers', 'id', false);
SELECT * FROM snowflake_convert_column('categories', 'id', false);
SELECT * FROM snowflake_convert_column('orders', 'id', false, drop_sequence => false);
SELECT * FROM snowflake_convert_column('items', 'id', false);
COMMIT;
SQL
types
q -c "SELECT c.relname AS kept_sequence, d.refobjid IS NULL AS not_owned FROM pg_class c LEFT JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'a' WHERE c.relkind = 'S'"
new_rows() {
  local db=$1
  q -d "$db" <<'SQL'
INSERT INTO customers(name) VALUES ('cat') ;
INSERT INTO categories(parent_id, name) SELECT id, 'poetry' FROM categories WHERE name = 'books';
INSERT INTO orders(customer_id, category_id) SELECT (SELECT max(id) FROM customers), (SELECT max(id) FROM categories);
INSERT INTO items(sku) VALUES ('c');
SELECT 'customers' AS tbl, count(*) AS rows, count(*) FILTER (WHERE id <= 2) AS old_ids, count(*) FILTER (WHERE snowflake_machine_id(id) = 7 AND id > 2^53) AS snowflake_ids FROM customers
UNION ALL SELECT 'categories', count(*), count(*) FILTER (WHERE id <= 2), count(*) FILTER (WHERE snowflake_machine_id(id) = 7 AND id > 2^53) FROM categories
UNION ALL SELECT 'orders', count(*), count(*) FILTER (WHERE id <= 2), count(*) FILTER (WHERE snowflake_machine_id(id) = 7 AND id > 2^53) FROM orders
UNION ALL SELECT 'items', count(*), count(*) FILTER (WHERE id <= 2), count(*) FILTER (WHERE snowflake_machine_id(id) = 7 AND id > 2^53) FROM items;
SELECT (SELECT name FROM customers c WHERE c.id = o.customer_id) AS customer, (SELECT name FROM categories k WHERE k.id = o.category_id) AS category,
       (SELECT p.name FROM categories k JOIN categories p ON p.id = k.parent_id WHERE k.id = o.category_id) AS parent
FROM orders o ORDER BY o.id;
SELECT (SELECT name FROM customers ORDER BY id DESC LIMIT 1) AS newest_customer;
SQL
}
echo "== new rows"
new_rows postgres
echo "== pg_dump, restored into a new database"
q -c "CREATE DATABASE restored"
"$PG_BIN/pg_dump" -h "$SCRATCH" -p "$(port_of main)" -U postgres -d postgres >"$SCRATCH/dump.sql"
"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SCRATCH" -p "$(port_of main)" -U postgres -d restored -f "$SCRATCH/dump.sql" >/dev/null
q -d restored -c "SELECT (SELECT count(*) FROM customers) AS customers, (SELECT count(*) FROM orders) AS orders, pg_get_expr(adbin, adrelid) AS customers_default FROM pg_attrdef WHERE adrelid = 'customers'::regclass"
q -d restored -c "SELECT count(*) FILTER (WHERE atttypid = 'int8'::regtype) AS bigint_keys, count(*) AS keys FROM pg_attribute
                  WHERE (attrelid, attname) IN (('customers'::regclass, 'id'), ('categories'::regclass, 'id'), ('categories'::regclass, 'parent_id'),
                        ('orders'::regclass, 'id'), ('orders'::regclass, 'customer_id'), ('orders'::regclass, 'category_id'), ('items'::regclass, 'id'))"
echo "== new rows in the restored database"
new_rows restored
