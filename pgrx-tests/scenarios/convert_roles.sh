# majors: all (PostgreSQL 16 grants a role's privileges and its identity apart: INHERIT and SET; 17 adds pg_maintain; 14 and 15 know membership only)
# Who may convert another role's table (issue 50): only a caller that could become the table's
# owner itself with SET ROLE (sql_api/as_owner.rs: the owner itself, a member whose grant allows
# SET, a superuser), each case in a database of its own, against every entry point: the dry run
# and the real run of snowflake_convert_column() and of snowflake_convert_all(), and
# snowflake_internal.as_owner() called directly (its 'max' action), each in a transaction rolled
# back. A line says the SQLSTATE (or ok; for the dry run of snowflake_convert_all(), its verdict),
# whom the table's own CHECK ran as during the conversion (a recorder: a sequence per role), and
# whether the caller became a superuser.
# The attack (16 and later): alice, granted boss WITH INHERIT TRUE, SET FALSE (boss's privileges,
# not boss's identity), adds to boss's table a CHECK of hers that makes her a superuser when a
# superuser runs it, then converts the table. With the rule she is refused before anything runs;
# with it switched back to "the owner's privileges" (the test builds'
# snowflake.fault_privileges_rule, the rule before issue 50: the negative control) the conversion
# runs as boss, a superuser, and she becomes one. The other cases: INHERIT FALSE with SET (may
# convert), ADMIN OPTION alone (may not), a NOLOGIN owner, pg_maintain (17 and later: MAINTAIN is
# not SET ROLE), a role that is no member, the owner itself and a superuser. On 14 and 15 SET ROLE
# needs membership only: a NOINHERIT member may convert (its negative control refused it, having
# no privileges of the owner), a non-member may not.
# Issue 55, exactly where SET ROLE would be allowed: SET ROLE to the owner and as_owner() tried side
# by side in each context (a member's session, a stranger's, a SECURITY DEFINER function of the
# member's and of a superuser's called by the stranger, a superuser's session after SET ROLE to a
# role of no membership): they agree, but where no switch is needed (the current user owns the
# table), which as_owner() allows anywhere. The review's case (x's SECURITY DEFINER helper calling
# as_owner('drop_default') on boss's table, called by mallory) is refused with boss's default
# kept; with the rule before issue 55 (snowflake.fault_current_user_rule: the current user's
# memberships, SECURITY DEFINER not looked at), the negative control, it runs and the default is
# dropped, and the superuser's session after SET ROLE is refused though PostgreSQL allows SET
# ROLE there. Last, a view recreated by a member with SET but not INHERIT: its grants, comment and
# the privileges its owner had revoked from itself come back, given by the owner.
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
q() { psql_on main -X -A -F '|' --pset footer=off -v ON_ERROR_STOP=1 "$@"; }
major=$(q -t -c "SELECT current_setting('server_version_num')::int / 10000")
q -q <<'SQL'
CREATE DATABASE roles_template;
SQL
q -q -d roles_template -f "$PROJECT_DIR/pgrx-tests/harness/sql/error_of.sql"
q -q -d roles_template <<'SQL'
CREATE SCHEMA snowflake;
CREATE EXTENSION pg_snowflake SCHEMA snowflake;
GRANT USAGE ON SCHEMA snowflake TO PUBLIC;
ALTER DATABASE roles_template SET search_path = public, snowflake;
-- The recorder of who runs the table's code: a sequence per role (nextval() survives a rollback),
-- created by case_of for the roles of each case.
CREATE FUNCTION public.recorded(bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM nextval(format('public.%I', 'ran_as_' || current_user));
    RETURN true;
EXCEPTION WHEN others THEN RETURN true;
END $$;
-- try(entry, query): the query as the caller, rolled back: its SQLSTATE ('ok'; for the dry run of
-- snowflake_convert_all() its verdicts), whom the table's code ran as, and whether the caller
-- (the session's user) became a superuser.
CREATE FUNCTION public.try(entry text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text;
    su boolean;
    ran text;
BEGIN
    PERFORM setval(c.oid, 1, false) FROM pg_class c WHERE c.relname LIKE 'ran\_as\_%' AND c.relkind = 'S';
    BEGIN
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
        su := (SELECT rolsuper FROM pg_roles WHERE rolname = session_user);
        SELECT coalesce(string_agg(substr(c.relname, 8), ',' ORDER BY c.relname), 'nobody') INTO ran
        FROM pg_class c WHERE c.relname LIKE 'ran\_as\_%' AND c.relkind = 'S'
          AND (SELECT s.last_value FROM pg_sequences s WHERE s.schemaname = 'public' AND s.sequencename = c.relname) IS NOT NULL;
        RAISE EXCEPTION 'roll back' USING ERRCODE = 'P0002';
    EXCEPTION WHEN no_data_found THEN
        NULL;
    END;
    RETURN format('%s|%s|the table''s code ran as %s|caller superuser=%s', entry, state, ran, su);
END $$;
SQL
# case NAME SETUP [ALICE_SQL]: a database of its own; SETUP run by the superuser there (it creates the
# roles boss_NAME and alice_NAME and the grant), the table t owned by boss_NAME with the recorder's
# CHECK; ALICE_SQL run as alice_NAME (her own preparation); then every entry point as alice_NAME.
# CONTROL=1: again with the rule switched back to the owner's privileges.
entry_points() {
  local db=$1 who=$2 label=$3
  q -t -d "$db" -U "$who" <<SQL | sed "s/^/$label|/"
SELECT try('column_dry', \$q\$SELECT snowflake_convert_column('t', 'id')\$q\$);
SELECT try('column', \$q\$SELECT snowflake_convert_column('t', 'id', dry_run => false)\$q\$);
SELECT try('all_dry', \$q\$SELECT * FROM snowflake_convert_all()\$q\$);
SELECT try('all', \$q\$SELECT * FROM snowflake_convert_all(dry_run => false)\$q\$);
SELECT try('as_owner', \$q\$SELECT snowflake_internal.as_owner('max', 't'::regclass, 'id')\$q\$);
SQL
}
case_of() {
  local name=$1 setup=$2 alice_sql=${3:-} db="c_$1" alice="alice_$1" boss="boss_$1"
  q -q -c "CREATE DATABASE $db TEMPLATE roles_template" -c "ALTER DATABASE $db SET search_path = public, snowflake"
  q -q -d "$db" <<SQL
$setup
CREATE TABLE t (id serial PRIMARY KEY, CHECK (public.recorded(id)));
ALTER TABLE t OWNER TO ${TABLE_OWNER:-$boss};
INSERT INTO t DEFAULT VALUES;
CREATE SEQUENCE public.ran_as_$boss;
CREATE SEQUENCE public.ran_as_$alice;
CREATE SEQUENCE public.ran_as_postgres;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO PUBLIC;
CREATE SCHEMA $alice AUTHORIZATION $alice;
SQL
  [ -z "$alice_sql" ] || q -q -d "$db" -U "$alice" -c "$alice_sql"
  entry_points "$db" "$alice" "$name|rule"
  if [ -n "${CONTROL:-}" ]; then
    q -q -c "ALTER ROLE $alice SET snowflake.fault_privileges_rule = on"
    entry_points "$db" "$alice" "$name|control"
    q -q -c "ALTER ROLE $alice RESET snowflake.fault_privileges_rule"
  fi
}
roles() { echo "CREATE ROLE boss_$1 LOGIN $2; CREATE ROLE alice_$1 LOGIN $3;"; }

echo "== the owner, a superuser"
TABLE_OWNER=alice_owner case_of owner "$(roles owner "" "")"
entry_points c_owner postgres "superuser|rule"
echo "== members of the owner"
if [ "$major" -ge 16 ]; then
  # The attack: boss's privileges let alice add a CHECK of hers to boss's table; a conversion run
  # as boss, a superuser, would run it as a superuser.
  CONTROL=1 case_of set_false "$(roles set_false SUPERUSER "") GRANT boss_set_false TO alice_set_false WITH INHERIT TRUE, SET FALSE;" "
CREATE FUNCTION alice_set_false.escalate_now() RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE alice_set_false SUPERUSER';
    END IF;
END \$\$;
CREATE FUNCTION alice_set_false.escalate(bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN PERFORM alice_set_false.escalate_now(); RETURN true; END \$\$;
GRANT USAGE ON SCHEMA alice_set_false TO PUBLIC;
ALTER TABLE t ADD CHECK (alice_set_false.escalate(id));"
  q -t -c "SELECT 'alice_set_false superuser at the end: ' || rolsuper FROM pg_roles WHERE rolname = 'alice_set_false'"
  q -t -d c_set_false -U alice_set_false -c "SELECT 'SET ROLE boss_set_false as alice_set_false: ' || state FROM error_of('SET ROLE boss_set_false')"
  case_of set_true "$(roles set_true "" "") GRANT boss_set_true TO alice_set_true WITH INHERIT TRUE, SET TRUE;"
  CONTROL=1 case_of inherit_false "$(roles inherit_false "" "") GRANT boss_inherit_false TO alice_inherit_false WITH INHERIT FALSE, SET TRUE;"
  case_of admin_only "$(roles admin_only "" "") GRANT boss_admin_only TO alice_admin_only WITH ADMIN TRUE, INHERIT FALSE, SET FALSE;"
  case_of nologin_owner "CREATE ROLE boss_nologin_owner NOLOGIN; CREATE ROLE alice_nologin_owner LOGIN; GRANT boss_nologin_owner TO alice_nologin_owner WITH INHERIT FALSE, SET TRUE;"
  if [ "$major" -ge 17 ]; then
    case_of pg_maintain "$(roles pg_maintain "" "") GRANT pg_maintain TO alice_pg_maintain;"
    q -t -d c_pg_maintain -U alice_pg_maintain -c "VACUUM (ANALYZE) t" -c "SELECT 'pg_maintain: VACUUM and ANALYZE of t as alice_pg_maintain: ok'"
  fi
else
  case_of member "$(roles member "" "") GRANT boss_member TO alice_member;"
  CONTROL=1 case_of noinherit "$(roles noinherit "" NOINHERIT) GRANT boss_noinherit TO alice_noinherit;"
  case_of admin_option "$(roles admin_option "" NOINHERIT) GRANT boss_admin_option TO alice_admin_option WITH ADMIN OPTION;"
  case_of nologin_owner "CREATE ROLE boss_nologin_owner NOLOGIN; CREATE ROLE alice_nologin_owner LOGIN NOINHERIT; GRANT boss_nologin_owner TO alice_nologin_owner;"
fi
case_of non_member "$(roles non_member "" "")"
echo "== the refusal, with its hint (the grant that is missing)"
q -t -d c_non_member -U alice_non_member -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_convert_column('t', 'id', dry_run => false)\$\$)"
q -t -d c_non_member -U alice_non_member -c "SELECT state, message, hint FROM error_of(\$\$SELECT snowflake_internal.as_owner('widen', 't'::regclass, 'id')\$\$)"
echo "== no free text crosses: an action outside the closed set, a wrong kind of relation"
q -t -d c_non_member -c "SELECT state, message FROM error_of(\$\$SELECT snowflake_internal.as_owner('ALTER ROLE alice_non_member SUPERUSER', 't'::regclass)\$\$)"
q -t -d c_non_member -c "SELECT state, message FROM error_of(\$\$SELECT snowflake_internal.as_owner('drop_sequence', 't'::regclass)\$\$)"
echo "== inside a security-restricted operation nobody switches roles (an index expression that converts, run by ANALYZE)"
q -q -d c_non_member <<'SQL'
CREATE TABLE u (id int);
CREATE FUNCTION public.converts(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM snowflake_internal.as_owner('max', 'public.t'::regclass, 'id');
    RETURN $1;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'refused: %', SQLERRM;
    RETURN $1;
END $$;
INSERT INTO u VALUES (1);
SQL
# CREATE INDEX runs the expression as the table's owner (the superuser here), restricted; ANALYZE
# of alice's table runs it as alice, restricted: neither becomes the owner of t.
q -t -d c_non_member -c "CREATE INDEX ON u (public.converts(id))" -c "ALTER TABLE u OWNER TO alice_non_member" -c "ANALYZE u" 2>&1 \
  | sed -n 's/.*NOTICE:  */NOTICE: /p' | sort -u
echo "== exactly where SET ROLE to the owner would be allowed (issue 55): SET ROLE and as_owner side by side"
# probe(rel), called in a context: whether SET ROLE to rel's owner and as_owner('drop_default') on
# rel are allowed there, each undone. The contexts: a member's and a stranger's sessions; a
# SECURITY DEFINER function of the member's (x_probe) and of a superuser's (su_probe), called by
# the stranger; a superuser's session after SET ROLE to a role of no membership (the session's
# user is what SET ROLE asks). CONTROL: the rule before issue 55 (the current user's memberships, a
# SECURITY DEFINER function not looked at), snowflake.fault_current_user_rule.
if [ "$major" -ge 16 ]; then grant_w="GRANT boss_w TO x_w WITH INHERIT FALSE, SET TRUE;"; else grant_w="ALTER ROLE x_w NOINHERIT; GRANT boss_w TO x_w;"; fi
q -q -c "CREATE DATABASE c_where TEMPLATE roles_template" -c "ALTER DATABASE c_where SET search_path = public, snowflake"
q -q -d c_where <<SQL
CREATE ROLE boss_w NOLOGIN; CREATE ROLE x_w LOGIN; CREATE ROLE mallory_w LOGIN; CREATE ROLE plain_w LOGIN;
$grant_w
CREATE TABLE boss_t (id serial PRIMARY KEY); ALTER TABLE boss_t OWNER TO boss_w;
CREATE TABLE x_t (id serial PRIMARY KEY); ALTER TABLE x_t OWNER TO x_w;
CREATE TABLE su_t (id serial PRIMARY KEY);
CREATE FUNCTION public.probe(rel regclass) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
    owner name := (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = rel);
    s text;
    a text;
BEGIN
    BEGIN
        EXECUTE format('SET ROLE %I', owner);
        s := 'ok';
        RAISE EXCEPTION 'undo' USING ERRCODE = 'P0002';
    EXCEPTION WHEN no_data_found THEN NULL; WHEN others THEN s := SQLSTATE;
    END;
    BEGIN
        PERFORM snowflake_internal.as_owner('drop_default', rel, 'id');
        a := 'ok';
        RAISE EXCEPTION 'undo' USING ERRCODE = 'P0002';
    EXCEPTION WHEN no_data_found THEN NULL; WHEN others THEN a := SQLSTATE;
    END;
    RETURN format('%s (owned by %s): SET ROLE %s|as_owner %s', rel, owner, s, a);
END \$\$;
CREATE FUNCTION public.x_probe(rel regclass) RETURNS text LANGUAGE sql SECURITY DEFINER AS \$\$ SELECT public.probe(rel) \$\$;
ALTER FUNCTION public.x_probe(regclass) OWNER TO x_w;
CREATE FUNCTION public.su_probe(rel regclass) RETURNS text LANGUAGE sql SECURITY DEFINER AS \$\$ SELECT public.probe(rel) \$\$;
-- The review's case: x's SECURITY DEFINER helper, which mallory may call.
CREATE FUNCTION public.x_helper(t regclass) RETURNS bigint SECURITY DEFINER SET search_path = pg_catalog
    LANGUAGE sql AS \$\$ SELECT snowflake_internal.as_owner('drop_default', t, 'id') \$\$;
ALTER FUNCTION public.x_helper(regclass) OWNER TO x_w;
CREATE FUNCTION public.x_set_role() RETURNS void SECURITY DEFINER LANGUAGE plpgsql AS \$\$ BEGIN SET ROLE boss_w; END \$\$;
ALTER FUNCTION public.x_set_role() OWNER TO x_w;
CREATE FUNCTION public.x_alter(t regclass) RETURNS void SECURITY DEFINER LANGUAGE plpgsql AS \$\$
BEGIN EXECUTE format('ALTER TABLE %s ALTER COLUMN id DROP DEFAULT', t); END \$\$;
ALTER FUNCTION public.x_alter(regclass) OWNER TO x_w;
CREATE FUNCTION public.x_convert(t regclass) RETURNS SETOF text SECURITY DEFINER LANGUAGE sql
    AS \$\$ SELECT snowflake.snowflake_convert_column(t, 'id', dry_run => false) \$\$;
ALTER FUNCTION public.x_convert(regclass) OWNER TO x_w;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO PUBLIC;
SQL
where_cases() {
  local label=$1
  q -t -d c_where -U x_w -c "SELECT '$label|x_w''s session|' || probe('boss_t')"
  q -t -d c_where -U mallory_w -c "SELECT '$label|mallory_w''s session|' || probe('boss_t')"
  q -t -d c_where -U mallory_w -c "SELECT '$label|x_w''s SECURITY DEFINER function, called by mallory_w|' || x_probe('boss_t')" \
    -c "SELECT '$label|x_w''s SECURITY DEFINER function, called by mallory_w, on x_w''s own table (no switch)|' || x_probe('x_t')"
  q -t -d c_where -U mallory_w -c "SELECT '$label|a superuser''s SECURITY DEFINER function, called by mallory_w|' || su_probe('boss_t')" \
    -c "SELECT '$label|a superuser''s SECURITY DEFINER function, called by mallory_w, on its own table (no switch)|' || su_probe('su_t')"
  q -t -d c_where -c "SET ROLE plain_w" -c "SELECT '$label|a superuser''s session after SET ROLE plain_w|' || probe('boss_t')"
  # The review's three calls, as mallory: SET ROLE and ALTER TABLE in x's SECURITY DEFINER
  # functions are refused by PostgreSQL; the helper through the extension must be refused too.
  q -t -d c_where -U mallory_w -c "SELECT '$label|mallory_w: x_set_role() ' || state FROM error_of('SELECT x_set_role()')" \
    -c "SELECT '$label|mallory_w: x_alter(boss_t) ' || state FROM error_of(\$\$SELECT x_alter('boss_t')\$\$)" \
    -c "SELECT '$label|mallory_w: x_convert(boss_t) ' || state FROM error_of(\$\$SELECT x_convert('boss_t')\$\$)" \
    -c "SELECT '$label|mallory_w: x_helper(boss_t) ' || state FROM error_of(\$\$SELECT x_helper('boss_t')\$\$)" \
    -c "SELECT '$label|boss_t''s default: ' || CASE WHEN atthasdef THEN 'kept' ELSE 'dropped' END FROM pg_attribute WHERE attrelid = 'boss_t'::regclass AND attname = 'id'"
}
where_cases rule
q -t -d c_where -U mallory_w -c "SELECT 'the refusal inside a SECURITY DEFINER function|' || message || '|' || hint FROM error_of(\$\$SELECT x_helper('boss_t')\$\$)"
q -t -d c_where -U mallory_w -c "SELECT 'the conversion''s refusal there|' || message || '|' || hint FROM error_of(\$\$SELECT x_convert('boss_t')\$\$)"
q -q -c "ALTER ROLE ALL SET snowflake.fault_current_user_rule = on"
where_cases control
q -q -c "ALTER ROLE ALL RESET snowflake.fault_current_user_rule"
echo "== a view recreated by a member who may SET ROLE its owner but has none of its privileges (INHERIT FALSE)"
# Its grants, its comment and the privileges its owner had revoked from itself come back as they
# were, given by the owner: the grants are made while the caller owns the new view, then the view
# is given to its owner.
q -q -c "CREATE DATABASE c_views TEMPLATE roles_template" -c "ALTER DATABASE c_views SET search_path = public, snowflake"
if [ "$major" -ge 16 ]; then grant_v="GRANT boss_v TO alice_v WITH INHERIT FALSE, SET TRUE;"; else grant_v="ALTER ROLE alice_v NOINHERIT; GRANT boss_v TO alice_v;"; fi
q -q -d c_views <<SQL
CREATE ROLE boss_v NOLOGIN; CREATE ROLE alice_v LOGIN; CREATE ROLE reader_v LOGIN;
$grant_v
GRANT CREATE ON SCHEMA public TO alice_v;
CREATE TABLE t (id serial PRIMARY KEY, note text); ALTER TABLE t OWNER TO boss_v;
CREATE VIEW v AS SELECT id, note FROM t; ALTER VIEW v OWNER TO boss_v;
INSERT INTO t (note) VALUES ('a');
SET ROLE boss_v;
GRANT SELECT ON v TO PUBLIC;
GRANT SELECT (note) ON v TO reader_v WITH GRANT OPTION;
REVOKE DELETE, TRUNCATE ON v FROM boss_v;
COMMENT ON VIEW v IS 'the notes';
RESET ROLE;
SQL
acl() { q -t -d c_views -c "SELECT '$1|owner ' || pg_get_userbyid(relowner) || '|acl ' || relacl::text || '|note acl ' || (SELECT attacl::text FROM pg_attribute WHERE attrelid = 'v'::regclass AND attname = 'note') || '|comment ' || obj_description('v'::regclass, 'pg_class') FROM pg_class WHERE oid = 'v'::regclass"; }
acl before
# ALTER VIEW ... OWNER TO, run by alice_v, needs boss_v to have CREATE on the schema: the dry run
# refuses what the real run would fail on, then boss_v is given it.
q -t -d c_views -U alice_v -c "SELECT 'dry run|' || state || '|' || coalesce(message, '') FROM error_of(\$\$SELECT snowflake_convert_column('t', 'id', recreate_views => true)\$\$)"
q -q -d c_views -c "GRANT CREATE ON SCHEMA public TO boss_v"
q -t -d c_views -U alice_v -c "SELECT 'converted|' || count(*) FROM snowflake_convert_column('t', 'id', dry_run => false, recreate_views => true)"
acl after
q -t -d c_views -U reader_v -c "SELECT 'reader_v reads the view|' || count(*) FROM v"
