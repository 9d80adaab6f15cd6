# majors: all (the catalogs it reads differ on 14: a generated column's dependencies)
# Attacks on a superuser's conversion: mallory, a role without privileges, plants code of hers
# where a conversion could reach it, each vector on a table in a database of its own. Her code
# records who runs it (a sequence per role: nextval() survives a rollback) and, run as a superuser,
# makes her one: RESET SESSION AUTHORIZATION and RESET ROLE first, then ALTER ROLE mallory
# SUPERUSER. Every entry point is tried on every vector, each in a transaction rolled back:
# snowflake_convert_column() (dry run and real), snowflake_convert_all() (dry run: its plan's
# verdicts; and real). With the mechanism (every statement on a relation run as its owner in a
# security-restricted operation, sql_api/as_owner.rs) her code runs as mallory or not at all, and
# she never becomes superuser; with it switched off (the test builds' snowflake.fault_run_as_caller,
# the negative control) the same calls run her code as the superuser wherever PostgreSQL runs it.
# The conversion itself runs her CHECKs on the key and on a referencing column, and her domain's
# CHECK on a referencing bigint column, at the first new id, dry runs included (issue 60: a new id
# a CHECK refuses is refused up front). The vectors PostgreSQL never runs during a conversion
# (triggers, constraint triggers, rules, row security policies, other columns' defaults, a
# generated column that does not use the key, statistics, a view) show "none" either way; a
# referencing column of her domain over int is refused (0A000: widening it would drop the domain).
# Partitions and children of another owner are refused (42501): their control is the recursive
# ALTER TABLE run as the parent's owner, restricted.
# A custom btree operator class cannot be planted: only a superuser creates one.
export PGOPTIONS="-c client_min_messages=warning"
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
q() { psql_on main -X -A -F '|' --pset footer=off -v ON_ERROR_STOP=1 "$@"; }
q -q <<'SQL'
CREATE ROLE mallory LOGIN;
CREATE DATABASE attacks;
SQL
q -q -d attacks <<'SQL'
CREATE SCHEMA snowflake;
CREATE EXTENSION pg_snowflake SCHEMA snowflake;
ALTER DATABASE attacks SET search_path = public, snowflake;
-- (The owner of a converted table names snowflake_nextval() in its default, and runs it when she
-- inserts.)
GRANT USAGE ON SCHEMA snowflake TO mallory;
GRANT EXECUTE ON FUNCTION snowflake.snowflake_nextval() TO mallory;
CREATE SCHEMA mallory AUTHORIZATION mallory;
GRANT USAGE ON SCHEMA mallory TO PUBLIC;
SET ROLE mallory;
CREATE SEQUENCE mallory.ran_as_mallory;
CREATE SEQUENCE mallory.ran_as_postgres;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE mallory.ran_as_mallory, mallory.ran_as_postgres TO PUBLIC;
CREATE FUNCTION mallory.escalate() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    BEGIN RESET SESSION AUTHORIZATION; EXCEPTION WHEN others THEN NULL; END;
    BEGIN RESET ROLE; EXCEPTION WHEN others THEN NULL; END;
    BEGIN PERFORM nextval(format('mallory.ran_as_%s', current_user)); EXCEPTION WHEN others THEN NULL; END;
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
END $$;
-- IMMUTABLE (a lie), for index expressions; it calls the VOLATILE one, which may run ALTER ROLE.
CREATE FUNCTION mallory.evil(bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM mallory.escalate(); RETURN true; END $$;
CREATE FUNCTION mallory.evil_int() RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.escalate(); RETURN 1; END $$;
CREATE FUNCTION mallory.evil_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.escalate(); RETURN NEW; END $$;
CREATE DOMAIN mallory.checked AS int CHECK (mallory.evil(VALUE));
CREATE DOMAIN mallory.checked_big AS bigint CHECK (mallory.evil(VALUE));
-- The issue's cast: an enum key whose default a nextval() behind an assignment cast hides.
CREATE TYPE mallory.e AS ENUM ('a');
CREATE FUNCTION mallory.to_e(bigint) RETURNS mallory.e IMMUTABLE LANGUAGE sql AS $$SELECT 'a'::mallory.e$$;
CREATE CAST (bigint AS mallory.e) WITH FUNCTION mallory.to_e(bigint) AS ASSIGNMENT;
CREATE FUNCTION mallory.from_e(mallory.e) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.escalate(); RETURN 1; END $$;
CREATE CAST (mallory.e AS bigint) WITH FUNCTION mallory.from_e(mallory.e);
RESET ROLE;
-- try(entry, query): the query run as the superuser (or as PRELUDE says), then rolled back: its
-- SQLSTATE ('ok' or, for a dry run of snowflake_convert_all(), its verdicts), who ran mallory's
-- code, and whether she became superuser.
CREATE FUNCTION try(entry text, prelude text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text;
    su boolean;
    ran text;
BEGIN
    PERFORM setval('mallory.ran_as_mallory', 1, false), setval('mallory.ran_as_postgres', 1, false);
    BEGIN
        EXECUTE prelude;
        BEGIN
            IF entry = 'all_dry' THEN
                EXECUTE 'SELECT string_agg(coalesce(error_code, ''ok''), '','' ORDER BY table_name::text) FROM (' || query || ') p'
                    INTO state;
            ELSE
                EXECUTE query;
                state := 'ok';
            END IF;
        EXCEPTION WHEN others THEN
            state := SQLSTATE;
        END;
        RESET ROLE;
        su := (SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory');
        RAISE EXCEPTION 'roll back' USING ERRCODE = 'P0002';
    EXCEPTION WHEN no_data_found THEN
        NULL;
    END;
    SELECT coalesce(string_agg(r, ','), 'none') INTO ran FROM (
        SELECT 'mallory' AS r FROM mallory.ran_as_mallory WHERE is_called
        UNION ALL SELECT 'postgres' FROM mallory.ran_as_postgres WHERE is_called) x;
    RETURN format('%s|%s|ran as %s|superuser=%s', entry, state, ran, su);
END $$;
SQL
q -d attacks -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql" >/dev/null
# vector NAME TABLE SETUP MALLORY [PRELUDE]: a database of its own from the template, SETUP run in
# it by the superuser, then MALLORY in a session of mallory's own; then every entry point on TABLE
# (after PRELUDE), with the mechanism on and off.
vector() {
  local db="v_$1"
  q -q -c "CREATE DATABASE $db TEMPLATE attacks" -c "ALTER DATABASE $db SET search_path = public, snowflake"
  [ -z "$3" ] || q -q -d "$db" -c "$3"
  [ -z "$4" ] || q -q -d "$db" -U mallory -c "$4"
  local prelude=${5:-SELECT 1}
  for mode in on off; do
    local off=off
    [ "$mode" = off ] && off=on
    q -t -d "$db" <<SQL | sed "s/^/$1|mechanism $mode|/"
SET snowflake.fault_run_as_caller = $off;
SELECT try('column_dry', \$p\$$prelude\$p\$, \$q\$SELECT snowflake_convert_column('$2', 'id', recreate_views => true)\$q\$);
SELECT try('column', \$p\$$prelude\$p\$, \$q\$SELECT snowflake_convert_column('$2', 'id', dry_run => false, recreate_views => true)\$q\$);
SELECT try('all_dry', \$p\$$prelude\$p\$, \$q\$SELECT * FROM snowflake_convert_all(recreate_views => true)\$q\$);
SELECT try('all', \$p\$$prelude\$p\$, \$q\$SELECT * FROM snowflake_convert_all(dry_run => false, recreate_views => true)\$q\$);
SQL
  done
}
echo "== each vector, each entry point: the code's runner and the superuser flag; mechanism on, then off"
vector cast mallory.t "" "CREATE SEQUENCE mallory.s; CREATE TABLE mallory.t (id mallory.e PRIMARY KEY DEFAULT nextval('mallory.s')); INSERT INTO mallory.t DEFAULT VALUES"
vector check mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY, CHECK (mallory.evil(id))); INSERT INTO mallory.t DEFAULT VALUES"
vector index_expression mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); CREATE INDEX ON mallory.t (mallory.evil(id)); INSERT INTO mallory.t DEFAULT VALUES"
vector index_predicate mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); CREATE INDEX ON mallory.t (id) WHERE mallory.evil(id); INSERT INTO mallory.t DEFAULT VALUES"
vector index_predicate_constant mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); CREATE INDEX ON mallory.t (id) WHERE mallory.evil(1); INSERT INTO mallory.t DEFAULT VALUES"
vector exclusion_constraint mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY, EXCLUDE USING btree (id WITH =) WHERE (mallory.evil(id))); INSERT INTO mallory.t DEFAULT VALUES"
vector set_role mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY, CHECK (mallory.evil(id))); INSERT INTO mallory.t DEFAULT VALUES" "SET ROLE mallory"
vector references_check ref_target "CREATE TABLE ref_target (id serial PRIMARY KEY); INSERT INTO ref_target DEFAULT VALUES; GRANT REFERENCES, SELECT ON ref_target TO mallory" "CREATE TABLE mallory.refs (ref_id int REFERENCES ref_target, CHECK (mallory.evil(ref_id))); INSERT INTO mallory.refs VALUES (1)"
vector row_trigger mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); INSERT INTO mallory.t DEFAULT VALUES; CREATE TRIGGER evil BEFORE INSERT OR UPDATE OR DELETE ON mallory.t FOR EACH ROW EXECUTE FUNCTION mallory.evil_row()"
vector constraint_trigger mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); INSERT INTO mallory.t DEFAULT VALUES; CREATE CONSTRAINT TRIGGER evil AFTER INSERT OR UPDATE ON mallory.t FOR EACH ROW EXECUTE FUNCTION mallory.evil_row()"
vector rule mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); INSERT INTO mallory.t DEFAULT VALUES; CREATE RULE evil AS ON UPDATE TO mallory.t DO ALSO SELECT mallory.evil(1)"
vector policy mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); INSERT INTO mallory.t DEFAULT VALUES; ALTER TABLE mallory.t ENABLE ROW LEVEL SECURITY; CREATE POLICY evil ON mallory.t USING (mallory.evil(1))"
vector other_default mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY, other int DEFAULT mallory.evil_int()); INSERT INTO mallory.t (id, other) VALUES (1, 1)"
vector generated_column mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY, other int, flag boolean GENERATED ALWAYS AS (mallory.evil(other)) STORED); INSERT INTO mallory.t (other) VALUES (1)"
vector statistics mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY, other int); CREATE STATISTICS mallory.evil ON (mallory.evil(id)), other FROM mallory.t; INSERT INTO mallory.t (other) VALUES (1)"
vector view mallory.t "" "CREATE TABLE mallory.t (id serial PRIMARY KEY); INSERT INTO mallory.t DEFAULT VALUES; CREATE VIEW mallory.v AS SELECT id, mallory.evil(id) AS ok FROM mallory.t"
vector domain t_domain "CREATE TABLE t_domain (id serial PRIMARY KEY); INSERT INTO t_domain DEFAULT VALUES; GRANT REFERENCES, SELECT ON t_domain TO mallory" "CREATE TABLE mallory.refs (t_domain_id mallory.checked REFERENCES t_domain); INSERT INTO mallory.refs VALUES (1)"
vector domain_bigint t_domain "CREATE TABLE t_domain (id serial PRIMARY KEY); INSERT INTO t_domain DEFAULT VALUES; GRANT REFERENCES, SELECT ON t_domain TO mallory" "CREATE TABLE mallory.refs (t_domain_id mallory.checked_big REFERENCES t_domain); INSERT INTO mallory.refs VALUES (1)"
vector inheritance_child parent "CREATE TABLE parent (id serial PRIMARY KEY); CREATE TABLE child () INHERITS (parent); ALTER TABLE child OWNER TO mallory" "INSERT INTO child VALUES (1); ALTER TABLE child ADD CHECK (mallory.evil(id))"
vector partition parted "CREATE TABLE parted (id serial, region text, PRIMARY KEY (id, region)) PARTITION BY LIST (region); CREATE TABLE parted_eu (id int NOT NULL, region text NOT NULL); ALTER TABLE parted_eu OWNER TO mallory; ALTER TABLE parted ATTACH PARTITION parted_eu FOR VALUES IN ('eu')" "ALTER TABLE parted_eu ADD CHECK (mallory.evil(id)); INSERT INTO parted_eu VALUES (1, 'eu')"
echo "== partitions and children of another owner: what the refusal prevents (the recursive ALTER TABLE as the parent's owner, restricted)"
for t in inheritance_child:parent partition:parted; do
  q -t -d "v_${t%%:*}" -c "SELECT '${t%%:*}', try('control', 'SELECT 1', \$q\$SELECT snowflake_internal.as_owner('widen', 'public.${t#*:}'::regclass, 'id')\$q\$)"
done
echo "== the refusals, with their hints"
q -t -d v_inheritance_child -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('parent', 'id', false)\$\$)"
echo "== a custom type's btree operator class: only a superuser creates one"
q -t -d attacks -U mallory -c "SELECT 'operator class', state, message FROM error_of(\$\$CREATE OPERATOR CLASS mallory.e_ops FOR TYPE mallory.e USING btree AS FUNCTION 1 enum_cmp(anyenum, anyenum)\$\$)"
echo "== the mechanism refuses a caller that may not become the owner, and any statement but its own (as_owner called directly)"
q -t -d attacks -U mallory -c "SELECT 'direct', state, message FROM error_of(\$\$SELECT snowflake_internal.as_owner('lock', 'pg_catalog.pg_class'::regclass)\$\$)"
q -t -d attacks -U mallory -c "SELECT 'direct', state, message FROM error_of(\$\$SELECT snowflake_internal.as_owner('ALTER ROLE mallory SUPERUSER', 'pg_catalog.pg_class'::regclass)\$\$)"
q -t -d attacks -c "SELECT 'mallory superuser at the end: ' || rolsuper FROM pg_roles WHERE rolname = 'mallory'"
