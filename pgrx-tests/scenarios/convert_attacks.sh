# majors: all (the catalogs it reads differ on 14: a generated column's dependencies)
# Attacks on a superuser's (or any role's) snowflake_convert_column(), one per line: mallory, a
# role without privileges, puts a function of hers where the conversion could reach it. Her
# function, called as a superuser, makes her one: RESET SESSION AUTHORIZATION and RESET ROLE first
# (after SET ROLE or SET SESSION AUTHORIZATION that gives back the superuser), then ALTER ROLE
# mallory SUPERUSER. Each vector (a legacy inheritance child, SET ROLE and SET SESSION
# AUTHORIZATION to the owner, a referencing table's CHECK, a CHECK, an index expression, an index
# predicate, an exclusion constraint, an event trigger, a row trigger, a domain, a generated column,
# extended statistics, a view) is tried twice: the conversion (refused, 42501, naming the function
# and its owner; mallory_superuser shows she did not become one), and, as its negative control, the
# DDL that the conversion would run, without the guard, rolled back (unguarded_superuser: whether
# mallory became superuser). Where that is f, ALTER TABLE does not run the code (a row trigger, a
# domain of the widened column, a generated column that does not use it, statistics, a view): the
# rule refuses it all the same. Then: a non-superuser converting its own table whose index calls
# mallory's function (refused too), mallory converting her own table (her code runs as her: it
# converts), a child table of another owner without code (refused by the ownership check, which now
# walks pg_inherits), and a harmless function of mallory's refused, then taken over (it converts).
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
q() { psql_on main -X -A -F '|' --pset footer=off "$@"; }
create_extension main
q -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" >/dev/null
q <<'SQL'
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE SCHEMA mallory AUTHORIZATION mallory;
GRANT USAGE ON SCHEMA mallory TO PUBLIC;
SET ROLE mallory;
CREATE FUNCTION mallory.escalate() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    BEGIN RESET SESSION AUTHORIZATION; EXCEPTION WHEN others THEN NULL; END;
    BEGIN RESET ROLE; EXCEPTION WHEN others THEN NULL; END;
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
END $$;
-- IMMUTABLE (a lie), for index expressions; it calls the VOLATILE one, which may run ALTER ROLE.
CREATE FUNCTION mallory.evil(bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM mallory.escalate(); RETURN true; END $$;
CREATE FUNCTION mallory.evil_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.escalate(); RETURN NEW; END $$;
CREATE FUNCTION mallory.evil_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.escalate(); END $$;
CREATE DOMAIN mallory.checked AS int CHECK (mallory.evil(VALUE));
CREATE FUNCTION mallory.positive(bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 0';
-- Her own table, with her CHECK.
CREATE TABLE mallory.own (id serial PRIMARY KEY, CHECK (mallory.evil(id)));
RESET ROLE;
-- The superuser's tables, each with mallory's code in one place; created empty (an index built on
-- rows, or a row inserted by the superuser, would run her code as the superuser at once).
CREATE TABLE inh_parent (id serial PRIMARY KEY);
CREATE TABLE inh_child () INHERITS (inh_parent);
ALTER TABLE inh_child OWNER TO mallory;
CREATE TABLE plain_parent (id serial PRIMARY KEY);
CREATE TABLE plain_child () INHERITS (plain_parent);
ALTER TABLE plain_child OWNER TO mallory;
CREATE TABLE vault (id serial PRIMARY KEY, CHECK (mallory.evil(id)));
ALTER TABLE vault OWNER TO mallory;
CREATE TABLE ref_target (id serial PRIMARY KEY);
INSERT INTO ref_target SELECT FROM generate_series(1, 2);
GRANT REFERENCES, SELECT ON ref_target TO mallory;
CREATE TABLE t_check (id serial PRIMARY KEY, CHECK (mallory.evil(id)));
CREATE TABLE t_index_expr (id serial PRIMARY KEY);
CREATE INDEX t_index_expr_evil ON t_index_expr (mallory.evil(id));
CREATE TABLE t_index_pred (id serial PRIMARY KEY);
CREATE INDEX t_index_pred_evil ON t_index_pred (id) WHERE mallory.evil(id);
CREATE TABLE t_exclusion (id serial PRIMARY KEY, EXCLUDE USING btree (id WITH =) WHERE (mallory.evil(id)));
CREATE TABLE t_event (id serial PRIMARY KEY);
CREATE TABLE t_row_trigger (id serial PRIMARY KEY);
CREATE TRIGGER evil BEFORE INSERT OR UPDATE ON t_row_trigger FOR EACH ROW EXECUTE FUNCTION mallory.evil_row();
CREATE TABLE t_domain (id serial PRIMARY KEY);
INSERT INTO t_domain SELECT FROM generate_series(1, 2);
CREATE TABLE t_domain_refs (t_domain_id mallory.checked REFERENCES t_domain);
CREATE TABLE t_generated (id serial PRIMARY KEY, other int, flag boolean GENERATED ALWAYS AS (mallory.evil(other)) STORED);
CREATE TABLE t_stats (id serial PRIMARY KEY, other int);
CREATE STATISTICS t_stats_evil ON (mallory.evil(id)), other FROM t_stats;
CREATE TABLE t_view (id serial PRIMARY KEY);
CREATE TABLE t_benign (id serial PRIMARY KEY);
CREATE INDEX t_benign_positive ON t_benign (id) WHERE mallory.positive(id);
INSERT INTO t_benign SELECT FROM generate_series(1, 2);
CREATE VIEW t_view_evil AS SELECT id, mallory.evil(id) AS ok FROM t_view;
GRANT INSERT ON t_check, t_index_expr, t_index_pred, t_exclusion, t_event, t_row_trigger, t_domain_refs, t_generated, t_stats, t_view
TO mallory;
SQL
# Their rows, inserted by mallory (her code runs as her: harmless), and alice's table.
q -U mallory <<'SQL'
INSERT INTO inh_child VALUES (1), (2);
ALTER TABLE inh_child ADD CHECK (mallory.evil(id));
INSERT INTO plain_child VALUES (1), (2);
INSERT INTO vault VALUES (1), (2);
INSERT INTO mallory.own VALUES (1), (2);
CREATE TABLE mallory.refs (ref_id int REFERENCES ref_target, CHECK (mallory.evil(ref_id)));
INSERT INTO mallory.refs VALUES (1), (2);
INSERT INTO t_check VALUES (1), (2);
INSERT INTO t_index_expr VALUES (1), (2);
INSERT INTO t_index_pred VALUES (1), (2);
INSERT INTO t_exclusion VALUES (1), (2);
INSERT INTO t_event VALUES (1), (2);
INSERT INTO t_row_trigger VALUES (1), (2);
INSERT INTO t_domain_refs VALUES (1), (2);
INSERT INTO t_generated (id, other) VALUES (1, 1), (2, 2);
INSERT INTO t_stats VALUES (1, 1), (2, 2);
INSERT INTO t_view VALUES (1), (2);
SQL
q -c "CREATE TABLE alice_t (id serial PRIMARY KEY)" -c "CREATE INDEX alice_t_evil ON alice_t (mallory.evil(id))" \
  -c "ALTER TABLE alice_t OWNER TO alice"
q -U alice -c "INSERT INTO alice_t VALUES (1), (2)"

q -t -c "SELECT 'mallory is superuser before: ' || rolsuper FROM pg_roles WHERE rolname = 'mallory'"
# attack VECTOR BEFORE CALL CONTROL: the conversion CALL (after the statement BEFORE), refused,
# then the DDL CONTROL that it would run, unguarded and rolled back.
attack() {
  q -t <<SQL
ALTER ROLE mallory NOSUPERUSER;
${2:+$2;}
SELECT '$1', e.state, e.message, 'mallory_superuser=' || r.rolsuper FROM error_of(\$\$$3\$\$) e, pg_roles r WHERE r.rolname = 'mallory';
RESET SESSION AUTHORIZATION;
RESET ROLE;
BEGIN;
$4;
SELECT '$1', 'guard off', 'unguarded_superuser=' || rolsuper FROM pg_roles WHERE rolname = 'mallory';
ROLLBACK;
SQL
}
echo "== each vector: the conversion refused (42501), then the same DDL without the guard (rolled back)"
attack inheritance_child "" "SELECT snowflake_convert_column('inh_parent', 'id', false)" \
  "ALTER TABLE inh_parent ALTER COLUMN id TYPE bigint"
attack set_role "SET ROLE mallory" "SELECT snowflake_convert_column('vault', 'id', false)" \
  "SET ROLE mallory; ALTER TABLE vault ALTER COLUMN id TYPE bigint"
attack set_session_authorization "SET SESSION AUTHORIZATION mallory" "SELECT snowflake_convert_column('vault', 'id', false)" \
  "SET SESSION AUTHORIZATION mallory; ALTER TABLE vault ALTER COLUMN id TYPE bigint"
attack references_check "" "SELECT snowflake_convert_column('ref_target', 'id', false)" \
  "ALTER TABLE mallory.refs ALTER COLUMN ref_id TYPE bigint; ALTER TABLE ref_target ALTER COLUMN id TYPE bigint"
attack check "" "SELECT snowflake_convert_column('t_check', 'id', false)" \
  "ALTER TABLE t_check ALTER COLUMN id TYPE bigint"
attack index_expression "" "SELECT snowflake_convert_column('t_index_expr', 'id', false)" \
  "ALTER TABLE t_index_expr ALTER COLUMN id TYPE bigint"
attack index_predicate "" "SELECT snowflake_convert_column('t_index_pred', 'id', false)" \
  "ALTER TABLE t_index_pred ALTER COLUMN id TYPE bigint"
attack exclusion_constraint "" "SELECT snowflake_convert_column('t_exclusion', 'id', false)" \
  "ALTER TABLE t_exclusion ALTER COLUMN id TYPE bigint"
# (Only a superuser creates an event trigger; this one calls mallory's function on every DDL.)
q -c "CREATE EVENT TRIGGER evil ON ddl_command_end EXECUTE FUNCTION mallory.evil_ddl()"
attack event_trigger "" "SELECT snowflake_convert_column('t_event', 'id', false)" \
  "ALTER TABLE t_event ALTER COLUMN id TYPE bigint"
q -c "DROP EVENT TRIGGER evil" -c "ALTER ROLE mallory NOSUPERUSER"
attack row_trigger "" "SELECT snowflake_convert_column('t_row_trigger', 'id', false)" \
  "ALTER TABLE t_row_trigger ALTER COLUMN id TYPE bigint"
attack domain "" "SELECT snowflake_convert_column('t_domain', 'id', false)" \
  "ALTER TABLE t_domain_refs ALTER COLUMN t_domain_id TYPE bigint; ALTER TABLE t_domain ALTER COLUMN id TYPE bigint"
attack generated_column "" "SELECT snowflake_convert_column('t_generated', 'id', false)" \
  "ALTER TABLE t_generated ALTER COLUMN id TYPE bigint"
attack statistics "" "SELECT snowflake_convert_column('t_stats', 'id', false)" \
  "ALTER TABLE t_stats ALTER COLUMN id TYPE bigint"
attack view "" "SELECT snowflake_convert_column('t_view', 'id', false, recreate_views => true)" \
  "DROP VIEW t_view_evil; ALTER TABLE t_view ALTER COLUMN id TYPE bigint;
   CREATE VIEW t_view_evil AS SELECT id, mallory.evil(id) AS ok FROM t_view"
echo "== the hints"
q -t <<'SQL'
SELECT DISTINCT hint FROM error_of($$SELECT snowflake_convert_column('t_check', 'id', false)$$);
SET ROLE mallory;
SELECT DISTINCT hint FROM error_of($$SELECT snowflake_convert_column('vault', 'id', false)$$);
RESET ROLE;
SQL
echo "== the same rule for a role that is not a superuser: alice's index calls mallory's function"
q -U alice -t -c "SELECT 'alice', state, message FROM error_of(\$\$SELECT snowflake_convert_column('alice_t', 'id', false)\$\$)"
echo "== mallory converts her own table, connected as herself: her code runs as her, it converts"
q -U mallory -t -c "SELECT 'mallory', state, message FROM error_of(\$\$SELECT snowflake_convert_column('mallory.own', 'id', false)\$\$)"
q -t -c "SELECT 'mallory_superuser=' || rolsuper, (SELECT atttypid::regtype FROM pg_attribute WHERE attrelid = 'mallory.own'::regclass AND attname = 'id')
         FROM pg_roles WHERE rolname = 'mallory'"
echo "== a child table of another owner, without any code: refused by the ownership check (pg_inherits)"
q -t -c "SELECT 'plain_child', state, message FROM error_of(\$\$SELECT snowflake_convert_column('plain_parent', 'id', true)\$\$)"
echo "== a harmless function of mallory's in an index: refused; read and taken over by the superuser, it converts"
q -t <<'SQL'
SELECT 't_benign', state, message FROM error_of($$SELECT snowflake_convert_column('t_benign', 'id', false)$$);
ALTER FUNCTION mallory.positive(bigint) OWNER TO postgres;
SELECT 't_benign', state, message FROM error_of($$SELECT snowflake_convert_column('t_benign', 'id', false)$$);
SELECT (SELECT atttypid::regtype FROM pg_attribute WHERE attrelid = 't_benign'::regclass AND attname = 'id') AS id_type,
       (SELECT count(*) FROM t_benign) AS rows;
SQL
