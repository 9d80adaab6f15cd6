# majors: all (the catalogs it reads differ by major: publications' row filters and column lists from 15)
# Issue 60: a conversion keeps its promises in the settings users have, each with its negative
# control (the mechanism switched off in a transaction rolled back, or PostgreSQL's own statement
# without it), against the real run and the dry run:
# 1. No new id below an old one at any isolation level: REPEATABLE READ and SERIALIZABLE are refused
#    (25000: their snapshot hides what was committed since they began), a writer committing an id an
#    hour ahead after the transaction began, or while the conversion waits for its lock, is seen in
#    READ COMMITTED (22003); control: under REPEATABLE READ with the refusal off, the next id is below
#    the writer's.
# 2. Every column that will hold new ids is widened: a chain through a 1:1 table, a foreign key to an
#    inheritance child, a foreign key to a partition of a bigint-keyed table, and one added by another
#    session while the conversion waited for its lock (the plan read before it lacks it), one to a
#    bigint 1:1 table the conversion does not alter but holds against new foreign keys; a foreign
#    key to a partition of a table whose key is widened, and on PostgreSQL 18 an inheritance child
#    with a NOT NULL of its own under another name than its parent's (convert_promises.pg18.out),
#    are refused with the statements that work, which then convert;
#    control: the direct foreign keys only (the rule before) leave the chain's end integer, and the
#    first reference to a new id fails.
# 3. Domains kept: a referencing column of a domain over integer is refused with the DDL that keeps
#    it, which then converts; one of a domain over bigint is not rewritten; control: ALTER COLUMN ...
#    TYPE bigint, what the conversion ran before, drops the domain (NULL goes in).
# 4. A CHECK on the key (or its domain's) that the first new id fails is refused (23514); control:
#    without the check, every insert fails.
# 5. Every role that inserted still inserts: the plan grants EXECUTE on snowflake_nextval() to the
#    table's owner and the roles with INSERT on it, a column of it or a view on it; PUBLIC, and a
#    caller who may not grant, are refused (42501); control: without the grant, they are refused.
# 6. The dry run refuses what the real run would fail on (each with PostgreSQL's own refusal of the
#    statement as its control): a rule on the table, a BEGIN ATOMIC function, a typed table, a row
#    type stored by another table, an identity sequence or a serial's sequence used elsewhere, a
#    publication's row filter and column list (15+), a published table with a logical slot (55000,
#    the subscribers' statements in the hint; subscribers_widened => true plans them as notes).
# 7. Sessions that prepared statements before the commit: the notice says it; a prepared statement
#    fails ("cached plan must not change result type") until prepared again, a PL/pgSQL %TYPE
#    variable overflows until the session ends.
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7" "wal_level = logical"
start_cluster main
q() { psql_on main -X -A -F '|' --pset footer=off "$@"; }
create_extension main
q -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" >/dev/null
# waited_on(t): waits (at most 60 s) until a session waits for a lock on t; whether one did.
q -q <<'SQL'
CREATE FUNCTION waited_on(t regclass) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 1200 LOOP
        IF EXISTS (SELECT 1 FROM pg_locks WHERE relation = t AND NOT granted) THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN false;
END $$;
SQL
# Another session, for psql's \! (which runs a shell command, not a function of this script).
other="$PG_BIN/psql -X -q -v ON_ERROR_STOP=1 -A -t -h $SCRATCH -p $(port_of main) -U postgres -d postgres"
# Ids and times that move with the clock, shown as placeholders.
stable() { sed -E -e 's/[0-9]{15,}/ID/g' -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3})?\+00/TIME/g' \
  -e 's/, [0-9]{2}:[0-9]{2}:[0-9]{2} ahead/, HH:MM:SS ahead/'; }
# An id of this server's layout an hour ahead of its clock (a writer whose clock is ahead, or by hand).
ahead="snowflake_from_timestamp(now() + interval '1 hour') | (7 << 12)"

echo "== 1. isolation: REPEATABLE READ and SERIALIZABLE refused, the largest value read after the lock"
q -q -c "CREATE TABLE hours (id bigserial PRIMARY KEY, note text)" -c "INSERT INTO hours (note) VALUES ('a'), ('b')"
for level in "REPEATABLE READ" "SERIALIZABLE"; do
  echo "-- $level: a writer commits an id an hour ahead after the transaction began"
  q <<SQL | stable
BEGIN ISOLATION LEVEL $level;
SELECT count(*) AS rows_seen FROM hours;
\\set ahead_id \`$other -c "INSERT INTO hours VALUES ($ahead, 'ahead') RETURNING id"\`
SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('hours', 'id')\$\$);
SELECT state, message FROM error_of(\$\$SELECT snowflake_convert_column('hours', 'id', dry_run => false)\$\$);
SELECT state, message FROM error_of(\$\$SELECT * FROM snowflake_convert_all(dry_run => false)\$\$);
ROLLBACK;
DELETE FROM hours WHERE note = 'ahead';
SQL
done
echo "-- negative control: REPEATABLE READ with the refusal switched off (rolled back): the writer's row is not seen"
q <<SQL | stable
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS rows_seen FROM hours;
\\set ahead_id \`$other -c "INSERT INTO hours VALUES ($ahead, 'ahead') RETURNING id"\`
CREATE OR REPLACE FUNCTION snowflake_internal.convert_isolation() RETURNS void LANGUAGE sql AS \$\$ SELECT \$\$;
SELECT count(*) > 0 AS converted FROM snowflake_convert_column('hours', 'id', dry_run => false);
INSERT INTO hours (note) VALUES ('new') RETURNING id < :ahead_id AS new_id_below_the_writers;
ROLLBACK;
DELETE FROM hours WHERE note = 'ahead';
SQL
echo "-- READ COMMITTED: a writer commits after the transaction began"
q <<SQL | stable
BEGIN;
SELECT count(*) AS rows_seen FROM hours;
\\set ahead_id \`$other -c "INSERT INTO hours VALUES ($ahead, 'ahead') RETURNING id"\`
SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('hours', 'id', dry_run => false)\$\$);
ROLLBACK;
DELETE FROM hours WHERE note = 'ahead';
SQL
# writer_holding TABLE SQL: runs SQL in a transaction of its own in the background, which then
# waits for a session waiting on TABLE (waited_on) and commits; returns once SQL has run (its lock
# is held).
writer_holding() {
  { echo "BEGIN;"; echo "$2"; echo "SELECT 'holding' AS writer;"
    echo "SELECT 'the writer saw the conversion wait for its lock: ' || waited_on('$1');"; echo "COMMIT;"; } \
    | q -t >"$SCRATCH/writer.out" 2>&1 &
  writer=$!
  for _ in $(seq 1 600); do grep -q holding "$SCRATCH/writer.out" && return 0; sleep 0.05; done
  cat "$SCRATCH/writer.out"
  exit 1
}
echo "-- READ COMMITTED: a writer commits an id an hour ahead while the conversion waits for its lock"
writer_holding hours "INSERT INTO hours VALUES ($ahead, 'ahead');"
q -c "SELECT state, message FROM error_of(\$\$SELECT snowflake_convert_column('hours', 'id', dry_run => false)\$\$)" | stable
wait "$writer"
grep -v holding "$SCRATCH/writer.out"
q -q -c "DELETE FROM hours WHERE note = 'ahead'"

echo "== 2. every column that will hold new ids widened"
q -q <<'SQL'
-- A chain through a 1:1 table; a foreign key to an inheritance child; one to a partition of a
-- bigint-keyed table (only its default changes); one to a partition of an integer-keyed table.
CREATE TABLE users (id serial PRIMARY KEY, name text);
CREATE TABLE profiles (user_id int PRIMARY KEY REFERENCES users, bio text);
CREATE TABLE profile_photos (id serial PRIMARY KEY, profile_id int NOT NULL REFERENCES profiles (user_id));
INSERT INTO users (name) VALUES ('ann'); INSERT INTO profiles VALUES (1, 'hi'); INSERT INTO profile_photos (profile_id) VALUES (1);
CREATE TABLE things (id serial PRIMARY KEY);
CREATE TABLE gadgets () INHERITS (things);
ALTER TABLE gadgets ADD PRIMARY KEY (id);
CREATE TABLE gadget_parts (gadget_id int NOT NULL REFERENCES gadgets);
CREATE TABLE ledger (id bigserial, region text NOT NULL, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE ledger_eu PARTITION OF ledger FOR VALUES IN ('eu');
CREATE TABLE eu_audits (entry_id int NOT NULL, region text NOT NULL, FOREIGN KEY (entry_id, region) REFERENCES ledger_eu);
CREATE TABLE shops (id serial, region text NOT NULL, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE shops_eu PARTITION OF shops FOR VALUES IN ('eu');
CREATE TABLE eu_visits (shop_id int NOT NULL, region text NOT NULL, FOREIGN KEY (shop_id, region) REFERENCES shops_eu);
SQL
q -c "SELECT * FROM snowflake_convert_column('users', 'id')"
q -c "SELECT * FROM snowflake_convert_column('things', 'id')"
q -c "SELECT * FROM snowflake_convert_column('ledger', 'id')"
q -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('shops', 'id')\$\$)"
echo "-- negative control: the direct foreign keys only (the rule before; rolled back): the first reference to a new id fails"
q <<'SQL'
BEGIN;
CREATE OR REPLACE FUNCTION snowflake_internal.convert_closure(tbl regclass, keynum int2)
RETURNS TABLE (relid oid, attnum int2, depth int, conid oid) LANGUAGE sql AS $$
SELECT tbl::oid, keynum, 0, 0::oid
UNION ALL
SELECT con.conrelid, con.conkey[array_position(con.confkey, keynum)], 1, con.oid FROM pg_constraint con
WHERE con.contype = 'f' AND con.confrelid = tbl AND con.conparentid = 0 AND keynum = ANY (con.confkey) $$;
SELECT * FROM snowflake_convert_column('users', 'id', dry_run => false);
INSERT INTO users (name) VALUES ('new');
INSERT INTO profiles SELECT max(id), 'new' FROM users;
SELECT state, message FROM error_of($$INSERT INTO profile_photos (profile_id) SELECT max(user_id) FROM profiles$$);
ROLLBACK;
SQL
echo "-- the conversions, and a reference to a new id in each"
q <<'SQL'
BEGIN;
SELECT count(*) AS statements FROM snowflake_convert_column('users', 'id', dry_run => false);
SELECT count(*) AS statements FROM snowflake_convert_column('things', 'id', dry_run => false);
SELECT count(*) AS statements FROM snowflake_convert_column('ledger', 'id', dry_run => false);
-- The refusal's hint, followed.
ALTER TABLE eu_visits DROP CONSTRAINT eu_visits_shop_id_region_fkey;
SELECT count(*) AS statements FROM snowflake_convert_column('shops', 'id', dry_run => false);
ALTER TABLE eu_visits ALTER COLUMN shop_id TYPE bigint;
ALTER TABLE eu_visits ADD CONSTRAINT eu_visits_shop_id_region_fkey FOREIGN KEY (shop_id, region) REFERENCES shops_eu (id, region);
COMMIT;
INSERT INTO users (name) VALUES ('new');
INSERT INTO profiles SELECT max(id), 'new' FROM users;
INSERT INTO profile_photos (profile_id) SELECT max(user_id) FROM profiles;
INSERT INTO gadgets DEFAULT VALUES;
INSERT INTO gadget_parts SELECT max(id) FROM gadgets;
INSERT INTO ledger (region) VALUES ('eu');
INSERT INTO eu_audits SELECT max(id), 'eu' FROM ledger;
INSERT INTO shops (region) VALUES ('eu');
INSERT INTO eu_visits SELECT max(id), 'eu' FROM shops;
SELECT a.attrelid::regclass AS tbl, a.attname, a.atttypid::regtype,
       (SELECT count(*) FROM pg_constraint c WHERE c.conrelid = a.attrelid AND c.contype = 'f') AS foreign_keys
FROM pg_attribute a
WHERE (a.attrelid, a.attname) IN (('profiles'::regclass, 'user_id'), ('profile_photos'::regclass, 'profile_id'),
                                  ('gadget_parts'::regclass, 'gadget_id'), ('eu_audits'::regclass, 'entry_id'),
                                  ('eu_visits'::regclass, 'shop_id'))
ORDER BY 1;
SELECT (SELECT max(profile_id) FROM profile_photos) > 2^53 AS photo_of_a_new_user, (SELECT max(gadget_id) FROM gadget_parts) > 2^53 AS part_of_a_new_gadget,
       (SELECT max(entry_id) FROM eu_audits) > 2^53 AS audit_of_a_new_entry, (SELECT max(shop_id) FROM eu_visits) > 2^53 AS visit_of_a_new_shop;
SQL
echo "-- a child with a NOT NULL of its own under another name than its parent's (PostgreSQL 18 refuses its ALTER TYPE)"
q -q -c "CREATE TABLE tools (id serial PRIMARY KEY)" -c "CREATE TABLE drills (id int NOT NULL) INHERITS (tools)" 2>/dev/null
q -t -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('tools', 'id')\$\$)"
q -At -c "SELECT substring(hint FROM 'transaction: (.*) then convert') FROM error_of(\$\$SELECT snowflake_convert_column('tools', 'id')\$\$)" >"$SCRATCH/rename.sql"
q -q >/dev/null 2>&1 <<SQL
BEGIN;
$(cat "$SCRATCH/rename.sql")
SELECT count(*) FROM snowflake_convert_column('tools', 'id', dry_run => false);
COMMIT;
SQL
q -t -c "SELECT 'drills.id: ' || atttypid::regtype FROM pg_attribute WHERE attrelid = 'drills'::regclass AND attname = 'id'"
echo "-- a foreign key added by another session while the conversion waits for its lock"
q -q -c "CREATE TABLE members (id serial PRIMARY KEY)" -c "INSERT INTO members DEFAULT VALUES" \
  -c "CREATE TABLE member_notes (member_id int NOT NULL)" -c "INSERT INTO member_notes VALUES (1)"
writer_holding members "ALTER TABLE member_notes ADD FOREIGN KEY (member_id) REFERENCES members;"
echo "the plan read before the lock (the foreign key not committed yet):"
q -t -c "SELECT * FROM snowflake_convert_column('members', 'id')"
echo "the conversion, which waited for its lock:"
q -t -c "SELECT * FROM snowflake_convert_column('members', 'id', dry_run => false)"
wait "$writer"
grep -v holding "$SCRATCH/writer.out"
q -c "SELECT attname, atttypid::regtype FROM pg_attribute WHERE attrelid = 'member_notes'::regclass AND attname = 'member_id'"
echo "-- one added to a table that holds new ids unaltered (a bigint 1:1 table, held against new foreign keys)"
q -q -c "CREATE TABLE clubs (id serial PRIMARY KEY)" -c "CREATE TABLE club_pages (club_id bigint PRIMARY KEY REFERENCES clubs)" \
  -c "CREATE TABLE page_likes (page_id int NOT NULL)" -c "INSERT INTO clubs DEFAULT VALUES" -c "INSERT INTO club_pages VALUES (1)"
writer_holding club_pages "ALTER TABLE page_likes ADD FOREIGN KEY (page_id) REFERENCES club_pages;"
q -t -c "SELECT * FROM snowflake_convert_column('clubs', 'id', dry_run => false)"
wait "$writer"
grep -v holding "$SCRATCH/writer.out"
q -c "SELECT attrelid::regclass AS tbl, attname, atttypid::regtype FROM pg_attribute WHERE (attrelid, attname) IN (('club_pages'::regclass, 'club_id'), ('page_likes'::regclass, 'page_id')) ORDER BY 1"

echo "== 3. domains kept"
q -q <<'SQL'
CREATE DOMAIN pos_int AS int NOT NULL CHECK (VALUE > 0);
CREATE DOMAIN pos_big AS bigint CHECK (VALUE > 0);
CREATE TABLE teams (id serial PRIMARY KEY);
CREATE TABLE players (team_id pos_int REFERENCES teams, name text);
CREATE TABLE coaches (team_id pos_big REFERENCES teams, name text);
INSERT INTO teams DEFAULT VALUES; INSERT INTO players VALUES (1, 'p'); INSERT INTO coaches VALUES (1, 'c');
SQL
q -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('teams', 'id')\$\$)"
echo "-- negative control: ALTER COLUMN ... TYPE bigint, as the conversion ran it before (rolled back): the domain is gone"
q <<'SQL'
BEGIN;
ALTER TABLE players ALTER COLUMN team_id TYPE bigint;
SELECT format_type(atttypid, atttypmod) AS team_id_type FROM pg_attribute WHERE attrelid = 'players'::regclass AND attname = 'team_id';
INSERT INTO players VALUES (NULL, 'q');
SELECT count(*) AS players_without_a_team FROM players WHERE team_id IS NULL;
ROLLBACK;
SQL
echo "-- the hint's DDL run, then the conversion: both domains kept, the bigint one's column not rewritten"
q -q -c "CREATE TABLE coaches_before AS SELECT pg_relation_filenode('coaches') AS filenode"
q -At -c "SELECT substring(hint FROM 'here: (.*)\), then convert') FROM error_of(\$\$SELECT snowflake_convert_column('teams', 'id')\$\$)" \
  | tee "$SCRATCH/domain.sql"
q -q <<SQL
BEGIN;
$(cat "$SCRATCH/domain.sql")
SELECT count(*) FROM snowflake_convert_column('teams', 'id', dry_run => false);
COMMIT;
SQL
q <<'SQL'
SELECT attrelid::regclass AS tbl, attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
WHERE attrelid IN ('players'::regclass, 'coaches'::regclass) AND attname = 'team_id' ORDER BY 1;
SELECT pg_relation_filenode('coaches') = filenode AS coaches_not_rewritten FROM coaches_before;
SELECT state, message FROM error_of($$INSERT INTO players VALUES (-5, 'q')$$);
SELECT state, message FROM error_of($$INSERT INTO players VALUES (NULL, 'q')$$);
SELECT state, message FROM error_of($$INSERT INTO coaches VALUES (-5, 'd')$$);
INSERT INTO teams DEFAULT VALUES;
INSERT INTO players SELECT max(id), 'new' FROM teams;
INSERT INTO coaches SELECT max(id), 'new' FROM teams;
SELECT (SELECT count(*) FROM players) AS players, (SELECT count(*) FROM coaches) AS coaches;
SQL

echo "== 4. a CHECK that new ids fail"
q -q <<'SQL'
CREATE TABLE capped (id serial PRIMARY KEY CHECK (id BETWEEN 1 AND 1000000000), note text);
CREATE TABLE positive (id serial PRIMARY KEY CHECK (id > 0));
CREATE DOMAIN small_id AS bigint CHECK (VALUE < 1000000000);
CREATE TABLE by_domain (id small_id PRIMARY KEY);
CREATE SEQUENCE by_domain_seq OWNED BY by_domain.id;
ALTER TABLE by_domain ALTER COLUMN id SET DEFAULT nextval('by_domain_seq');
INSERT INTO capped (note) VALUES ('a'); INSERT INTO positive DEFAULT VALUES; INSERT INTO by_domain DEFAULT VALUES;
SQL
for call in "'capped', 'id'" "'capped', 'id', dry_run => false" "'by_domain', 'id'"; do
  q -t -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column($call)\$\$)" | stable
done
q -t -c "SELECT 'positive: ' || state FROM error_of(\$\$SELECT snowflake_convert_column('positive', 'id', dry_run => false)\$\$)"
echo "-- negative control: without the check (rolled back), every insert fails"
q <<'SQL'
BEGIN;
CREATE OR REPLACE FUNCTION snowflake_internal.convert_checks(tbl regclass, keynum int2, first_id bigint) RETURNS void
LANGUAGE sql AS $$ SELECT $$;
SELECT count(*) > 0 AS converted FROM snowflake_convert_column('capped', 'id', dry_run => false);
SELECT state, message FROM error_of($$INSERT INTO capped (note) VALUES ('b')$$);
ROLLBACK;
SQL

echo "== 5. every role that inserted still inserts"
q -q <<'SQL'
CREATE ROLE shop_owner; CREATE ROLE shop_writer; CREATE ROLE shop_notes; CREATE ROLE shop_viewer; CREATE ROLE shop_reader;
GRANT USAGE ON SCHEMA snowflake TO shop_owner;
CREATE TABLE orders (id serial PRIMARY KEY, note text);
ALTER TABLE orders OWNER TO shop_owner;
GRANT INSERT ON orders TO shop_writer;
GRANT INSERT (note) ON orders TO shop_notes;
GRANT SELECT ON orders TO shop_reader;
CREATE VIEW order_entry AS SELECT id, note FROM orders;
GRANT INSERT ON order_entry TO shop_viewer;
CREATE TABLE open_orders (id serial PRIMARY KEY);
GRANT INSERT ON open_orders TO PUBLIC;
SQL
q -c "SELECT * FROM snowflake_convert_column('orders', 'id', recreate_views => true) s WHERE s !~ '^(CREATE VIEW|    |   )'"
q -t -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('open_orders', 'id')\$\$)"
q -t -c "SET ROLE shop_owner" -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('orders', 'id', recreate_views => true)\$\$)"
echo "-- negative control: without the grant (rolled back), the roles that inserted are refused"
{ echo "BEGIN;"
  echo "CREATE OR REPLACE FUNCTION snowflake_internal.convert_inserters(tbl regclass, keynum int2) RETURNS TABLE (role oid, rolname text) LANGUAGE sql AS \$\$ SELECT NULL::oid, NULL::text WHERE false \$\$;"
  echo "SELECT count(*) > 0 AS converted FROM snowflake_convert_column('orders', 'id', dry_run => false, recreate_views => true);"
  cat <<'SQL'
SELECT 'shop_writer: ' || state || ' ' || message FROM error_of($$SET ROLE shop_writer; INSERT INTO orders (note) VALUES ('w')$$);
RESET ROLE;
SELECT 'shop_owner: ' || state || ' ' || message FROM error_of($$SET ROLE shop_owner; INSERT INTO orders (note) VALUES ('o')$$);
RESET ROLE;
ROLLBACK;
SQL
} | q -t
echo "-- the conversion, then each role inserts"
q -t -c "SELECT count(*) AS statements FROM snowflake_convert_column('orders', 'id', dry_run => false, recreate_views => true)"
q -t <<'SQL'
SELECT 'shop_owner: ' || state FROM error_of($$SET ROLE shop_owner; INSERT INTO orders (note) VALUES ('o')$$);
RESET ROLE;
SELECT 'shop_writer: ' || state FROM error_of($$SET ROLE shop_writer; INSERT INTO orders (note) VALUES ('w')$$);
RESET ROLE;
SELECT 'shop_notes: ' || state FROM error_of($$SET ROLE shop_notes; INSERT INTO orders (note) VALUES ('n')$$);
RESET ROLE;
SELECT 'shop_viewer: ' || state FROM error_of($$SET ROLE shop_viewer; INSERT INTO order_entry (note) VALUES ('v')$$);
RESET ROLE;
SELECT 'shop_reader may execute snowflake_nextval(): ' || has_function_privilege('shop_reader', 'snowflake_nextval()', 'EXECUTE');
SELECT count(*) FILTER (WHERE id > 2^53) || ' new rows with snowflake ids' FROM orders;
SQL

echo "== 6. the dry run refuses what the real run would fail on; control: PostgreSQL's own refusal of the statement"
q -q <<'SQL'
CREATE TABLE with_rule (id serial PRIMARY KEY);
CREATE TABLE rule_log (id int);
CREATE RULE log_updates AS ON UPDATE TO with_rule WHERE new.id > 0 DO ALSO INSERT INTO rule_log VALUES (new.id);
CREATE TABLE with_function (id serial PRIMARY KEY);
CREATE FUNCTION newest() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT max(id) FROM with_function; END;
CREATE TYPE ticket AS (id int, note text);
CREATE TABLE typed OF ticket (PRIMARY KEY (id));
CREATE SEQUENCE typed_seq OWNED BY typed.id;
ALTER TABLE typed ALTER COLUMN id SET DEFAULT nextval('typed_seq');
CREATE TABLE stored_rows (id serial PRIMARY KEY);
CREATE TABLE row_keeper (saved stored_rows);
CREATE TABLE identities (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
CREATE TABLE borrower (n int DEFAULT nextval('identities_id_seq'));
CREATE TABLE watched (id serial PRIMARY KEY);
CREATE VIEW watched_sequence AS SELECT last_value FROM watched_id_seq;
SQL
refused() {
  q -t -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column($1)\$\$)"
  q -t -c "SELECT 'control: ' || state || ' ' || message FROM error_of(\$\$$2\$\$)"
}
refused "'with_rule', 'id'" "ALTER TABLE with_rule ALTER COLUMN id TYPE bigint"
refused "'with_function', 'id'" "ALTER TABLE with_function ALTER COLUMN id TYPE bigint"
refused "'typed', 'id'" "ALTER TABLE typed ALTER COLUMN id TYPE bigint"
refused "'stored_rows', 'id'" "ALTER TABLE stored_rows ALTER COLUMN id TYPE bigint"
refused "'identities', 'id'" "ALTER TABLE identities ALTER COLUMN id DROP IDENTITY"
refused "'watched', 'id'" "DROP SEQUENCE watched_id_seq"
if [ "$(q -At -c "SHOW server_version_num")" -ge 150000 ]; then
  q -q -c "CREATE TABLE filtered (id serial PRIMARY KEY, x int)" -c "CREATE PUBLICATION only_positive FOR TABLE filtered WHERE (id > 0)" \
    -c "CREATE TABLE listed (id serial PRIMARY KEY, x int)" -c "CREATE PUBLICATION some_columns FOR TABLE listed (id)"
  refused "'filtered', 'id'" "ALTER TABLE filtered ALTER COLUMN id TYPE bigint"
  refused "'listed', 'id'" "ALTER TABLE listed ALTER COLUMN id TYPE bigint"
else
  echo "(PostgreSQL 14: publications have no row filter nor column list)"
fi
echo "-- a published table: said in the plan; refused once this database has a logical slot (a subscriber)"
q -q -c "CREATE TABLE shipped (id serial PRIMARY KEY)" -c "CREATE TABLE shipped_items (shipped_id int REFERENCES shipped)" \
  -c "CREATE PUBLICATION shipping FOR TABLE shipped, shipped_items"
q -t -c "SELECT * FROM snowflake_convert_column('shipped', 'id')"
q -q -c "SELECT pg_create_logical_replication_slot('a_subscriber', 'pgoutput')" >/dev/null
q -t -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('shipped', 'id')\$\$)"
q -t -c "SELECT table_name, error_code FROM snowflake_convert_all() WHERE table_name = 'shipped'::regclass"
q -t -c "SELECT count(*) AS statements FROM snowflake_convert_column('shipped', 'id', subscribers_widened => true)"
q -q -c "SELECT pg_drop_replication_slot('a_subscriber')" >/dev/null

echo "== 7. sessions that prepared statements before the commit"
q -q -c "CREATE TABLE tickets (id serial PRIMARY KEY, note text)" -c "INSERT INTO tickets (note) VALUES ('a')"
q <<SQL 2>&1 | stable
\\set ON_ERROR_STOP off
CREATE FUNCTION latest_ticket() RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE t tickets.id%TYPE;
BEGIN
    SELECT max(id) INTO t FROM tickets;
    RETURN 'ok';
END \$\$;
PREPARE newest AS SELECT * FROM tickets ORDER BY id DESC LIMIT 1;
EXECUTE newest;
SELECT latest_ticket();
\\! $other -c "SELECT count(*) FROM snowflake_convert_column('tickets', 'id', dry_run => false)" -c "INSERT INTO tickets (note) VALUES ('new')" 2>&1 | sed 's/^/(another session) /'
EXECUTE newest;
SELECT latest_ticket();
DEALLOCATE newest;
PREPARE newest AS SELECT * FROM tickets ORDER BY id DESC LIMIT 1;
EXECUTE newest;
SQL
echo "in a new session: $(q -At -c "SELECT latest_ticket()")"
