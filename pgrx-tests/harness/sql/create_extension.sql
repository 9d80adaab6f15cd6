\set saved_echo :ECHO \set ECHO none
-- The README's install (Install), for the .sql scenarios: the extension in a schema `snowflake`
-- of its own, on the database's search_path after public, and a new session that has it.
SELECT current_database() AS install_db \gset
CREATE SCHEMA snowflake;
CREATE EXTENSION pg_snowflake SCHEMA snowflake;
GRANT USAGE ON SCHEMA snowflake TO PUBLIC;
ALTER DATABASE :"install_db" SET search_path = "$user", public, snowflake;
\c
\set ECHO :saved_echo
