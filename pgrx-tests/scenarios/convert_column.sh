# snowflake_convert_column() on an existing schema: a serial key referenced by foreign keys (one
# from another table, one self-referencing, and a second level below), an identity column (ALWAYS),
# a bigserial, and a partitioned table (list partitions, one of them partitioned again) keyed by
# (id, region), referenced by a plain table and by a partitioned one, with views on it, on a
# partition, on a referencing table and on a view. The dry run changes nothing; the conversion
# widens every column (every partition) in one transaction, recreates the views as they were
# (definition, options, owner, privileges, comments), keeps the rows as they are, and new rows get
# snowflake ids, in the right partitions; refusals (views without recreate_views, a materialized
# view, a generated column, a policy, a trigger's WHEN, a rule on a view, a view the user does not
# own, a partition named instead of its root, a partition key column, a composite key, a
# non-integer column, a temporary table, a column without a sequence, a user who does not own the
# tables, NULLs) leave nothing changed. Then pg_dump of the converted database restores into a new
# one, which takes new rows too.
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
CREATE ROLE reader;
CREATE ROLE viewer;
CREATE TABLE accounts (id serial, region text NOT NULL, name text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE accounts_eu PARTITION OF accounts FOR VALUES IN ('eu');
CREATE TABLE accounts_am PARTITION OF accounts FOR VALUES IN ('us', 'ca') PARTITION BY LIST (region);
CREATE TABLE accounts_us PARTITION OF accounts_am FOR VALUES IN ('us');
CREATE TABLE accounts_ca PARTITION OF accounts_am FOR VALUES IN ('ca');
CREATE TABLE invoices (id serial PRIMARY KEY, account_id int NOT NULL, region text NOT NULL, FOREIGN KEY (account_id, region) REFERENCES accounts (id, region));
CREATE TABLE logins (account_id int NOT NULL, region text NOT NULL, FOREIGN KEY (account_id, region) REFERENCES accounts) PARTITION BY LIST (region);
CREATE TABLE logins_eu PARTITION OF logins FOR VALUES IN ('eu');
CREATE TABLE logins_rest PARTITION OF logins DEFAULT;
INSERT INTO accounts(region, name) VALUES ('eu', 'eve'), ('us', 'sam'), ('ca', 'kim');
INSERT INTO invoices(account_id, region) SELECT id, region FROM accounts;
INSERT INTO logins SELECT id, region FROM accounts;
CREATE VIEW account_names WITH (security_barrier) AS SELECT id AS account, name FROM accounts WHERE region = 'eu';
CREATE VIEW eu_names AS SELECT upper(name) AS name FROM account_names;
CREATE VIEW us_ids AS SELECT id FROM accounts_us;
CREATE VIEW open_invoices AS SELECT id, account_id, region FROM invoices WHERE account_id > 0 WITH LOCAL CHECK OPTION;
ALTER VIEW us_ids OWNER TO reader;
GRANT SELECT ON account_names TO reader;
GRANT SELECT, INSERT ON open_invoices TO reader WITH GRANT OPTION;
GRANT SELECT (name) ON eu_names TO viewer;
COMMENT ON VIEW account_names IS 'accounts in the EU';
COMMENT ON COLUMN account_names.account IS 'the account id';
-- security_invoker exists from PostgreSQL 15 on.
DO $$ BEGIN IF current_setting('server_version_num')::int >= 150000 THEN EXECUTE 'ALTER VIEW us_ids SET (security_invoker = true)'; END IF; END $$;
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
echo "== dry run of the partitioned table, its views recreated (their SELECT elided here: its text differs between majors)"
q -c "SELECT regexp_replace(s, '^(CREATE VIEW [^ ]+( WITH \\([^)]*\\))? AS) .*$', '\\1 ...') FROM snowflake_convert_column('accounts', 'id', recreate_views => true) s"
types
ptypes() {
  q -c "SELECT a.attrelid::regclass AS tbl, a.attname, a.atttypid::regtype, pg_get_expr(d.adbin, d.adrelid) AS default
        FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid IN (SELECT relid FROM pg_partition_tree('accounts') UNION ALL SELECT relid FROM pg_partition_tree('logins') UNION ALL SELECT 'invoices'::regclass)
          AND a.attname IN ('id', 'account_id') ORDER BY a.attrelid::regclass::text, a.attnum"
  q -c "SELECT string_agg(relname || ':' || relkind::text, ', ' ORDER BY relname) AS views FROM pg_class WHERE relkind IN ('v', 'm') AND relnamespace = 'public'::regnamespace"
}
ptypes
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
SELECT * FROM error_of($$SELECT snowflake_convert_column('accounts_us', 'id', false)$$);
SELECT * FROM error_of($$SELECT snowflake_convert_column('accounts', 'id', false)$$);
CREATE MATERIALIZED VIEW invoice_counts AS SELECT account_id, count(*) FROM invoices GROUP BY account_id;
SELECT * FROM error_of($$SELECT snowflake_convert_column('accounts', 'id', false, recreate_views => true)$$);
DROP MATERIALIZED VIEW invoice_counts;
CREATE RULE no_insert AS ON INSERT TO eu_names DO INSTEAD NOTHING;
SELECT * FROM error_of($$SELECT snowflake_convert_column('accounts', 'id', false, recreate_views => true)$$);
DROP RULE no_insert ON eu_names;
ALTER TABLE accounts ADD COLUMN label text GENERATED ALWAYS AS ('#' || id) STORED;
SELECT * FROM error_of($$SELECT snowflake_convert_column('accounts', 'id', false, recreate_views => true)$$);
ALTER TABLE accounts DROP COLUMN label;
CREATE POLICY own_orders ON orders USING (customer_id > 0);
SELECT * FROM error_of($$SELECT snowflake_convert_column('customers', 'id', false)$$);
DROP POLICY own_orders ON orders;
CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE TRIGGER positive_ids BEFORE UPDATE ON invoices FOR EACH ROW WHEN (NEW.account_id > 0) EXECUTE FUNCTION keep_row();
SELECT * FROM error_of($$SELECT snowflake_convert_column('accounts', 'id', false, recreate_views => true)$$);
DROP TRIGGER positive_ids ON invoices;
CREATE ROLE bob;
CREATE TABLE bobs (id serial PRIMARY KEY);
ALTER TABLE bobs OWNER TO bob;
CREATE VIEW bobs_ids AS SELECT id FROM bobs;
SET ROLE bob;
SELECT * FROM error_of($$SELECT snowflake_convert_column('bobs', 'id', false, recreate_views => true)$$);
RESET ROLE;
SQL
types
ptypes
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
-- What the views are, to compare after their recreation.
CREATE TABLE views_before AS
SELECT c.relname, pg_get_viewdef(c.oid) AS def, c.reloptions, c.relowner, c.relacl, obj_description(c.oid, 'pg_class') AS comment,
       (SELECT array_agg(ROW(a.attname, a.attacl, col_description(c.oid, a.attnum))::text ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0) AS cols
FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = 'public'::regnamespace;
BEGIN;
SELECT * FROM snowflake_convert_column('customers', 'id', false);
SELECT * FROM snowflake_convert_column('categories', 'id', false);
SELECT * FROM snowflake_convert_column('orders', 'id', false, drop_sequence => false);
SELECT * FROM snowflake_convert_column('items', 'id', false);
SELECT count(*) AS accounts_statements FROM snowflake_convert_column('accounts', 'id', false, recreate_views => true);
COMMIT;
SQL
types
ptypes
echo "== the views, recreated as they were (the column types are the new ones)"
q <<'SQL'
SELECT b.relname, pg_get_viewdef(c.oid) = b.def AS same_definition, c.reloptions IS NOT DISTINCT FROM b.reloptions AS same_options,
       c.relowner = b.relowner AS same_owner, (SELECT array_agg(x::text ORDER BY x::text) FROM unnest(c.relacl) x) IS NOT DISTINCT FROM (SELECT array_agg(x::text ORDER BY x::text) FROM unnest(b.relacl) x) AS same_privileges,
       obj_description(c.oid, 'pg_class') IS NOT DISTINCT FROM b.comment AS same_comment,
       (SELECT array_agg(ROW(a.attname, a.attacl, col_description(c.oid, a.attnum))::text ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0)
         = b.cols AS same_columns,
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0) AS columns_now
FROM views_before b LEFT JOIN pg_class c ON c.relname = b.relname AND c.relnamespace = 'public'::regnamespace AND c.relkind = 'v'
ORDER BY b.relname;
SQL
echo "== negative control: a view created again from its SELECT alone loses its options and privileges (rolled back)"
q <<'SQL'
BEGIN;
DROP VIEW open_invoices;
CREATE VIEW open_invoices AS SELECT id, account_id, region FROM invoices WHERE account_id > 0;
SELECT c.reloptions IS NOT DISTINCT FROM b.reloptions AS same_options, (SELECT array_agg(x::text ORDER BY x::text) FROM unnest(c.relacl) x) IS NOT DISTINCT FROM (SELECT array_agg(x::text ORDER BY x::text) FROM unnest(b.relacl) x) AS same_privileges
FROM views_before b JOIN pg_class c ON c.relname = b.relname AND c.relnamespace = 'public'::regnamespace AND c.relkind = 'v' WHERE b.relname = 'open_invoices';
ROLLBACK;
SQL
q -c "SELECT c.relname AS kept_sequence, d.refobjid IS NULL AS not_owned FROM pg_class c LEFT JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'a' WHERE c.relkind = 'S' ORDER BY c.relname"
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
INSERT INTO accounts(region, name) VALUES ('eu', 'new-eu'), ('us', 'new-us'), ('ca', 'new-ca');
INSERT INTO invoices(account_id, region) SELECT id, region FROM accounts WHERE name LIKE 'new-%';
INSERT INTO logins SELECT id, region FROM accounts WHERE name LIKE 'new-%';
SELECT tableoid::regclass::text AS partition, region, count(*) AS rows, count(*) FILTER (WHERE id <= 3) AS old_ids,
       count(*) FILTER (WHERE snowflake_machine_id(id) = 7 AND id > 2^53) AS snowflake_ids FROM accounts GROUP BY 1, 2 ORDER BY 1;
SELECT tableoid::regclass::text AS partition, count(*) AS logins, count(*) FILTER (WHERE account_id > 2^53) AS of_new_accounts FROM logins GROUP BY 1 ORDER BY 1;
SELECT (SELECT count(*) FROM invoices i JOIN accounts a ON (a.id, a.region) = (i.account_id, i.region)) AS invoices_joined,
       (SELECT string_agg(name, ', ' ORDER BY name) FROM eu_names) AS eu_names, (SELECT count(*) FROM us_ids) AS us_ids,
       (SELECT count(*) FROM open_invoices) AS open_invoices;
SELECT * FROM error_of($$INSERT INTO open_invoices(account_id, region) VALUES (-1, 'eu')$$);
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
q -d restored -c "SELECT relname, reloptions IS NOT NULL AS has_options, pg_get_userbyid(relowner) AS owner, obj_description(oid, 'pg_class') AS comment,
                  has_table_privilege('reader', oid, 'SELECT') AS reader_reads, has_column_privilege('viewer', oid, 1::int2, 'SELECT') AS viewer_reads_first_column
                  FROM pg_class WHERE relkind = 'v' AND relnamespace = 'public'::regnamespace ORDER BY relname"
rm -f "$SCRATCH/dump.sql"
