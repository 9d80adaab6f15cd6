# Switching from pgEdge snowflake keeping every id (docs/switching.md), and the guard that keeps new
# ids above the old in every conversion. pgEdge's extension is in no package registry, so a
# stand-in takes its place: a schema `snowflake` (pgEdge's extension owns one of that name) with
# nextval(regclass DEFAULT 'snowflake.id_seq'), composing ids as pgEdge's snowflake.c does:
#   SNOWFLAKE_EPOCH_OFFSET 1672531200 (seconds: 2023-01-01 00:00:00 UTC),
#   SNOWFLAKE_MSEC_SHIFT 22, SNOWFLAKE_MSEC_MASK 0x1FFFFFFFFFF (41 bits of milliseconds),
#   SNOWFLAKE_NODE_SHIFT 12, SNOWFLAKE_NODE_MASK 0x3FF (10 bits: snowflake.node),
#   SNOWFLAKE_COUNT_SHIFT 0, SNOWFLAKE_COUNT_MASK 0xFFF (12 bits of count);
# used as column defaults as pgEdge writes them: DEFAULT snowflake.nextval('public.t_id_seq'::regclass)
# (what its convert_sequence_to_snowflake() sets, the sequence still owned by the column) and
# DEFAULT snowflake.nextval() (its own snowflake.id_seq). pg_snowflake is installed beside it in a
# schema of its own, with the default layout (epoch 2025-01-01) and machine id 5 (= the node);
# pgEdge's snowflake.node = 5 is set too, and stays set (the prefix is not reserved then).
# 1. pgEdge's ids decode under the pgedge layout to pgEdge's own node, count and time.
# 2. Under the default epoch, pgEdge's ids are above every id this server would issue: every
#    conversion refuses (22003) with pgEdge's epoch in its hint, the dry run of
#    snowflake_convert_all() is a plan giving each column its verdict, and its real run refuses
#    every column together; nothing changes.
# 3. With snowflake.epoch = pgEdge's: snowflake_convert_all() converts every key column (pgEdge's
#    two forms, a bigserial), referenced tables first, in one transaction; every new id is above
#    every old one and has pgEdge's format (node 5); the column's own sequence is dropped,
#    pgEdge's shared one kept.
# 4. Bad input, each refused before anything runs, nothing changed: values no epoch can get
#    above, values an earlier epoch would (the epoch in the hint checked to serve), the same with
#    drop_sequence => false, a column without a sequence default (its hint suggests
#    snowflake_nextval() only when new ids would start above), a text key, a sequence to drop
#    that another column's default uses. Last, a negative control: with the guard switched off
#    (in a transaction rolled back), a refused conversion goes through and the next id is below
#    the old ones.
# 5. One table at a time (issue 60): two tables on pgEdge's default, each with its own sequence;
#    converting one, the plan names the other, whose pgEdge ids and the converted table's new ids
#    may be equal (pgEdge's ids are unique per sequence): pairs of rows in one millisecond find
#    equal ids while it keeps pgEdge's default, none once snowflake_convert_all() has converted it.
# 6. Under load: a pgEdge column whose largest value is 800 ms ahead of this clock, of count 4095,
#    converted while a loop inserts into it: the dry run passes, the real run waits for the clock
#    to pass it (no refusal, every row kept, the next id above them all); negative control (rolled
#    back): with no wait (convert_wait_limit() = 0, the check before), refused (22003).
export PGOPTIONS="-c client_min_messages=warning"
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 5" "snowflake.node = 5"
start_cluster main
q() { psql_on main -X -A -F '|' --pset footer=off "$@"; }
# The messages carry ids and dates that move with the clock (pgEdge's ids of now, the first new
# id): shown as placeholders.
stable() { sed -E -e 's/(about|below|above) [0-9]{15,}/\1 ID/g' -e 's/up to [45][0-9]{17}\b/up to MAX/g' \
  -e "s/epoch = '[0-9]{4}-[0-9]{2}-[0-9]{2} 00:00:00\+00' or earlier/epoch = 'DATE' or earlier/" \
  -e 's/ends in [0-9]{4}/ends in YEAR/'; }
q -c "CREATE SCHEMA ids" -c "CREATE EXTENSION pg_snowflake SCHEMA ids" \
  -c "ALTER DATABASE postgres SET search_path = \"\$user\", public, ids" >/dev/null
q -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" >/dev/null
q <<'SQL' >/dev/null
CREATE SCHEMA snowflake;
CREATE SEQUENCE snowflake.id_seq;
-- pgEdge's layout: ms since 2023-01-01 << 22 | node << 12 | count (the count from the sequence).
CREATE FUNCTION snowflake.compose(at timestamptz, node int, count bigint) RETURNS bigint
LANGUAGE sql AS $$
  SELECT (((((extract(epoch FROM at) * 1000)::bigint - 1672531200 * 1000::bigint) & x'1FFFFFFFFFF'::bigint) << 22)
          | ((node & x'3FF'::int)::bigint << 12)) | (count & x'FFF'::int)
$$;
CREATE FUNCTION snowflake.nextval(seq regclass = 'snowflake.id_seq'::regclass) RETURNS bigint
LANGUAGE sql AS $$ SELECT snowflake.compose(clock_timestamp(), 5, pg_catalog.nextval(seq)) $$;
-- pgEdge's snowflake.get_epoch(), get_node() and get_count(), for the comparison.
CREATE FUNCTION snowflake.parts(id bigint, OUT ts timestamptz, OUT node int, OUT count int) LANGUAGE sql AS $$
  SELECT to_timestamp(((id >> 22) + 1672531200 * 1000::bigint) / 1000.0), ((id >> 12) & 1023)::int, (id & 4095)::int
$$;
-- orders: a bigserial pgEdge converted (its sequence still owned by the column); events: pgEdge's
-- default without a sequence; order_lines references orders; tags: a plain serial.
CREATE TABLE orders (id bigserial PRIMARY KEY, note text);
ALTER TABLE orders ALTER COLUMN id SET DEFAULT snowflake.nextval('public.orders_id_seq'::regclass);
CREATE TABLE order_lines (id bigserial PRIMARY KEY, order_id bigint NOT NULL REFERENCES orders, sku text);
ALTER TABLE order_lines ALTER COLUMN id SET DEFAULT snowflake.nextval('public.order_lines_id_seq'::regclass);
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake.nextval(), kind text);
CREATE TABLE tags (id serial PRIMARY KEY, name text);
-- Old ids from 2024 (below the default epoch: they would be equal to ids of 2025-26 there) and now.
INSERT INTO orders VALUES (snowflake.compose('2024-06-01 12:00:00+00', 5, 1), 'of 2024');
INSERT INTO orders (note) SELECT 'now' FROM generate_series(1, 50);
INSERT INTO order_lines (order_id, sku) SELECT id, 'x' FROM orders;
INSERT INTO events (kind) SELECT 'click' FROM generate_series(1, 20);
INSERT INTO tags (name) VALUES ('a'), ('b');
CREATE TABLE old_ids AS SELECT id FROM orders UNION ALL SELECT id FROM order_lines UNION ALL SELECT id FROM events;
SQL

# pgEdge's setting shares the prefix: kept for pgEdge's library, which may load after this one
# (reserving the prefix would remove it: pgEdge's nextval() then refuses, node not set).
echo "pgEdge's snowflake.node kept beside pg_snowflake: $(q -At -c "SELECT current_setting('snowflake.node', true)")"
echo "-- 1. pgEdge's ids under the pgedge layout: pgEdge's own node, count and time"
q <<'SQL'
SELECT count(*) AS ids, bool_and((snowflake_decode(id, 'pgedge')).machine_id = (snowflake.parts(id)).node
                AND (snowflake_decode(id, 'pgedge')).sequence = (snowflake.parts(id)).count
                AND (snowflake_decode(id, 'pgedge')).ts = (snowflake.parts(id)).ts) AS same_as_pgedge,
       bool_and(snowflake_machine_id(id, 'pgedge') = 5) AS node_5
FROM old_ids;
SELECT (snowflake_decode(518514394326388845, 'pgedge')).ts::date AS ts, snowflake_machine_id(518514394326388845, 'pgedge') AS node,
       snowflake_sequence(518514394326388845, 'pgedge') AS count;
SELECT snowflake_timestamp(id, 'pgedge') AS of_2024 FROM orders WHERE note = 'of 2024';
SQL

echo "-- 2. under the default epoch: refused, every column together, nothing changed"
catalog() { q -At -c "SELECT string_agg(format('%s.%s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid)), '; ' ORDER BY c.relname)
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE c.relnamespace = 'public'::regnamespace AND a.attname = 'id'" -c "SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class WHERE relkind = 'S'"; }
before=$(catalog)
q -c "SELECT layout FROM snowflake_stats()"
q -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('orders', 'id')\$\$)" | stable
q -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('orders', 'id', dry_run => false, drop_sequence => false)\$\$)" | stable
q -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('events', 'id', dry_run => false)\$\$)" | stable
# Its dry run is a plan, not an error: a row per column with its verdict.
q -c "SELECT table_name, column_name, kind, converts, error_code, message, hint IS NOT NULL AS has_hint, cardinality(statements) AS statements FROM snowflake_convert_all()" | stable
q -c "SELECT state, message, hint FROM error_of(\$\$SELECT * FROM snowflake_convert_all(dry_run => false)\$\$)" | stable
# Its detail: each column refused, with its own SQLSTATE, message and hint.
q -At 2>&1 <<'SQL' | stable
DO $$
DECLARE d text;
BEGIN
    PERFORM * FROM snowflake_convert_all(dry_run => false);
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
    RAISE WARNING 'detail:%', E'\n' || d;
END $$;
SQL
echo "nothing changed: $([ "$(catalog)" = "$before" ] && echo yes || echo NO)"
echo "-- 3. with pgEdge's epoch: every key column converted, new ids above the old, in pgEdge's format"
stop_cluster main
echo "snowflake.epoch = '2023-01-01 00:00:00+00'" | as_pg_owner tee -a "$SCRATCH/main/postgresql.conf" >/dev/null
start_cluster main
q -c "SELECT layout FROM snowflake_stats()"
# The dry run: a row per column, referenced tables first, with its largest value (checked here
# against the table) and the DDL.
q <<'SQL'
SELECT c.table_name, c.column_name, c.kind, c.max_id = m.max AS max_id_right, c.statements
FROM snowflake_convert_all() c, LATERAL (SELECT (xpath('/row/m/text()', query_to_xml(format('SELECT max(%I) AS m FROM %s',
     c.column_name, c.table_name), false, true, '')))[1]::text::bigint AS max) m;
SQL
echo "the dry run changed nothing: $([ "$(catalog)" = "$before" ] && echo yes || echo NO)"
q -c "SELECT table_name, column_name, kind, cardinality(statements) AS statements FROM snowflake_convert_all(dry_run => false)"
q -c "SELECT relname AS sequences_left FROM pg_class WHERE relkind = 'S' ORDER BY 1"
q <<'SQL'
INSERT INTO orders (note) SELECT 'new' FROM generate_series(1, 1000);
INSERT INTO order_lines (order_id, sku) SELECT id, 'y' FROM orders WHERE note = 'new';
INSERT INTO events (kind) SELECT 'view' FROM generate_series(1, 1000);
CREATE TABLE new_ids AS SELECT id FROM orders WHERE note = 'new' UNION ALL SELECT id FROM order_lines WHERE sku = 'y'
                        UNION ALL SELECT id FROM events WHERE kind = 'view';
SELECT count(*) AS new_ids, min(id) > (SELECT max(id) FROM old_ids) AS all_above_the_old,
       bool_and(snowflake_machine_id(id, 'pgedge') = 5) AS pgedge_node_5,
       bool_and(snowflake_decode(id) = snowflake_decode(id, 'pgedge')) AS pgedge_format,
       count(DISTINCT id) = count(*) AS distinct_ids
FROM new_ids;
SELECT count(*) AS old_rows_kept FROM orders WHERE id IN (SELECT id FROM old_ids);
INSERT INTO tags (name) VALUES ('c') RETURNING id > 2 AS new_tag_above;
SQL

echo "-- 4. bad input: refused before anything runs"
q <<'SQL' >/dev/null
CREATE TABLE huge (id bigserial PRIMARY KEY);
INSERT INTO huge VALUES (9000000000000000000);
CREATE TABLE high (id bigserial PRIMARY KEY);
INSERT INTO high VALUES (9 * (1::bigint << 58));
CREATE TABLE plain_low (id bigint PRIMARY KEY DEFAULT 1 + 1);
INSERT INTO plain_low VALUES (10);
CREATE TABLE plain_high (id bigint PRIMARY KEY DEFAULT 1 + 1);
INSERT INTO plain_high VALUES (9000000000000000000);
CREATE TABLE named (id text PRIMARY KEY DEFAULT snowflake.nextval()::text);
CREATE TABLE shared_a (id bigserial PRIMARY KEY);
CREATE TABLE shared_b (id bigint PRIMARY KEY DEFAULT nextval('shared_a_id_seq'));
SQL
before=$(catalog)
for call in "'huge', 'id'" "'high', 'id'" "'high', 'id', dry_run => false, drop_sequence => false" "'plain_low', 'id'" "'plain_high', 'id'" "'named', 'id'" "'shared_a', 'id', dry_run => false"; do
  echo "snowflake_convert_column($call):"
  q -At -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column($call)\$\$)" | stable
done
echo "the epoch in the hint serves: $(q -At -c "SELECT snowflake_from_timestamp(snowflake_clock(), substring(hint FROM 'epoch = ''([^'']*)''')::timestamptz, 10, 12) > 9 * (1::bigint << 58)
  FROM error_of(\$\$SELECT snowflake_convert_column('high', 'id')\$\$)")"
echo "nothing changed: $([ "$(catalog)" = "$before" ] && echo yes || echo NO)"
echo "negative control: the guard switched off (in a transaction rolled back), the conversion runs and the next id is below old ones:"
q -At <<'SQL'
BEGIN;
CREATE OR REPLACE FUNCTION snowflake_internal.convert_above(tbl regclass, col name, kind text, issue boolean)
RETURNS bigint LANGUAGE sql AS $$ SELECT NULL::bigint $$;
SELECT count(*) > 0 AS converted FROM snowflake_convert_column('high', 'id', dry_run => false);
INSERT INTO high DEFAULT VALUES RETURNING id < 9 * (1::bigint << 58) AS new_id_below_old;
ROLLBACK;
SQL


echo "-- 5. one table at a time (issue 60): which uniqueness holds while pgEdge defaults remain"
# Two tables on pgEdge's default, each with a sequence of its own (pgEdge's ids are unique per
# sequence: each counts on its own). Converting one leaves the other's: the plan names it.
q <<'SQL' >/dev/null
DROP TABLE huge, high, plain_low, plain_high, named, shared_b, shared_a;
CREATE SEQUENCE snowflake.a_seq;
CREATE SEQUENCE snowflake.b_seq;
CREATE TABLE a_items (id bigint PRIMARY KEY DEFAULT snowflake.nextval('snowflake.a_seq'), note text);
CREATE TABLE b_items (id bigint PRIMARY KEY DEFAULT snowflake.nextval('snowflake.b_seq'), note text);
INSERT INTO a_items (note) SELECT 'old' FROM generate_series(1, 10);
INSERT INTO b_items (note) SELECT 'old' FROM generate_series(1, 10);
-- pairs(n): n times, in a millisecond of its own, a row into each table, b_items' count at 0 as
-- this server's sequence is at a millisecond's first id; how many pairs had equal ids.
CREATE FUNCTION pairs(n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE a bigint; b bigint; equal int := 0;
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM setval('snowflake.b_seq', 4096 * (i + 1000), false);
        PERFORM pg_sleep(0.002);
        INSERT INTO a_items (note) VALUES ('pair') RETURNING id INTO a;
        INSERT INTO b_items (note) VALUES ('pair') RETURNING id INTO b;
        IF a = b THEN equal := equal + 1; END IF;
    END LOOP;
    RETURN equal;
END $$;
SQL
q -At -c "SELECT * FROM snowflake_convert_column('a_items', 'id')" | stable
q -c "SELECT count(*) AS statements FROM snowflake_convert_column('a_items', 'id', dry_run => false)"
echo "equal ids across the two tables while b_items keeps pgEdge's default: $(q -At -c "SELECT CASE WHEN pairs(50) > 0 THEN 'found' ELSE 'none' END")"
q -c "SELECT table_name, column_name, kind, cardinality(statements) AS statements FROM snowflake_convert_all(dry_run => false)"
before=$(q -At -c "SELECT max(id) FROM (SELECT id FROM a_items UNION ALL SELECT id FROM b_items) x")
echo "equal ids across the two tables once both are converted: $(q -At -c "SELECT CASE WHEN pairs(50) > 0 THEN 'found' ELSE 'none' END")"
q -c "SELECT count(*) AS new_ids, count(DISTINCT id) AS distinct_ids FROM (SELECT id FROM a_items UNION ALL SELECT id FROM b_items) x WHERE id > $before"

echo "-- 6. under load: the largest value of a pgEdge column a little ahead of this clock is waited for, not refused"
# c_items takes pgEdge ids from a loop of single-row inserts while it is converted, and holds one
# 800 ms ahead of this server's clock, of count 4095 (a node whose clock is ahead, or this very
# millisecond's last count): the dry run passes, the real run waits for the clock to pass it.
# Negative control (rolled back): with no wait (snowflake_internal.convert_wait_limit() = 0, the
# check before), refused.
q <<'SQL' >/dev/null
CREATE SEQUENCE snowflake.c_seq;
CREATE TABLE c_items (id bigint PRIMARY KEY DEFAULT snowflake.nextval('snowflake.c_seq'), note text);
INSERT INTO c_items (note) SELECT 'old' FROM generate_series(1, 100);
SQL
ahead="INSERT INTO c_items VALUES (snowflake.compose(clock_timestamp() + interval '800 ms', 5, 4095), 'ahead')"
q -At <<SQL | stable
BEGIN;
CREATE OR REPLACE FUNCTION snowflake_internal.convert_wait_limit() RETURNS interval LANGUAGE sql AS \$\$ SELECT interval '0' \$\$;
$ahead;
SELECT 'negative control: ' || state || ' ' || message FROM error_of(\$\$SELECT snowflake_convert_column('c_items', 'id', dry_run => false)\$\$);
ROLLBACK;
SQL
q -q -c "$ahead"
q -At -c "SELECT 'dry run: ' || state FROM error_of(\$\$SELECT snowflake_convert_column('c_items', 'id')\$\$)"
for _ in $(seq 1 300); do echo "INSERT INTO c_items (note) VALUES ('load');"; done >"$SCRATCH/load.sql"
q -q -f "$SCRATCH/load.sql" 2>"$SCRATCH/load.err" &
loader=$!
sleep 0.1
q -At -c "SELECT 'under load: ' || state || coalesce(' ' || nullif(message, ''), '') FROM error_of(\$\$SELECT snowflake_convert_column('c_items', 'id', dry_run => false)\$\$)" | stable
wait "$loader" || { cat "$SCRATCH/load.err"; exit 1; }
q <<'SQL'
INSERT INTO c_items (note) VALUES ('last');
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids, max(id) = (SELECT id FROM c_items WHERE note = 'last') AS last_above_all,
       (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'c_items'::regclass) AS default
FROM c_items;
SQL
