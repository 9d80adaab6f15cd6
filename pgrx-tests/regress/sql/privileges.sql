\pset format unaligned
\pset footer off
-- Least privilege by default: what PUBLIC may execute, and the documented way to give an
-- application role snowflake_nextval() only. Roles are taken with SET ROLE (they cannot log in).
\ir ../../harness/sql/error_of.sql
\ir ../../harness/sql/create_extension.sql
\ir ../../harness/sql/regress_session.sql
CREATE EXTENSION dblink;
CREATE ROLE app;
CREATE ROLE nobody;
-- The functions of the extension a role with no grant may not execute (every other one it may:
-- the SQL reference says which, and the readme check compares it with the catalog).
SELECT p.oid::regprocedure AS revoked_from_public
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_snowflake'
WHERE NOT has_function_privilege('nobody', p.oid, 'EXECUTE')
ORDER BY p.proname, p.oid::regprocedure::text COLLATE "C";
-- The README's recipe: the table's owner gives the application role the generator, nothing more.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
GRANT INSERT, SELECT ON orders TO app, nobody;
GRANT EXECUTE ON FUNCTION snowflake_nextval() TO app;
SET ROLE app;
INSERT INTO orders(item) VALUES ('book') RETURNING (snowflake_decode(id)).machine_id;
SELECT * FROM error_of('SELECT snowflake_stats_reset()');
SELECT * FROM error_of('SELECT snowflake_to_public(1)');
RESET ROLE;
SET ROLE nobody;
SELECT * FROM error_of($$INSERT INTO orders(item) VALUES ('pen')$$);
SELECT * FROM error_of('SELECT snowflake_nextval()');
SELECT * FROM error_of('SELECT snowflake_from_public(''aaaaaaaaaaaaaaaaaaaaaaaaaa'')');
SELECT * FROM error_of('SELECT snowflake_try_from_public(''aaaaaaaaaaaaaaaaaaaaaaaaaa'')');
SELECT * FROM error_of('SELECT snowflake_check_peers(''{}'')');
SELECT * FROM error_of('SELECT snowflake_stats_reset()');
SELECT * FROM error_of('SELECT * FROM snowflake_machine_id_status()');
-- What everyone keeps: reading ids and the generator's health.
SELECT (snowflake_decode(id)).machine_id, snowflake_machine_id(id), snowflake_timestamp(id) > '2025-01-01' AS ts_ok FROM orders;
SELECT machine_id FROM snowflake_stats();
RESET ROLE;
-- The machine id's status is for operators: pg_monitor's.
GRANT pg_monitor TO nobody;
SET ROLE nobody;
SELECT source, held FROM snowflake_machine_id_status();
RESET ROLE;
REVOKE pg_monitor FROM nobody;
-- A superuser may grant the rest.
GRANT EXECUTE ON FUNCTION snowflake_stats_reset() TO app;
SET ROLE app;
SELECT * FROM error_of('SELECT snowflake_stats_reset()');
RESET ROLE;
-- The helpers of snowflake_check_peers() and of the conversion live in snowflake_internal, not in
-- the user's schema: the extension's functions there, and how many helpers are left in its own
-- schema (none).
SELECT p.oid::regprocedure AS in_snowflake_internal FROM pg_proc p
WHERE p.pronamespace = 'snowflake_internal'::regnamespace ORDER BY p.proname;
SELECT count(*) AS helpers_in_the_users_schema FROM pg_proc p JOIN pg_extension e ON e.extname = 'pg_snowflake'
WHERE p.pronamespace = e.extnamespace AND (p.proname ~ '^snowflake_(peer|dblink|citus)_'
     OR (p.proname LIKE 'snowflake\_convert\_%' AND p.proname NOT IN ('snowflake_convert_column', 'snowflake_convert_all')));
-- snowflake_internal.peer_deadline(): an internal helper of snowflake_check_peers(), not PUBLIC's.
SET ROLE nobody;
SELECT * FROM error_of('SELECT snowflake_internal.peer_deadline(1000)');
RESET ROLE;
-- The timer it arms (PostgreSQL 16 and later) ends with the transaction that armed it: a later
-- statement on this backend (behind a pooler, another client's) is not cancelled. Control: in
-- the same transaction, the timer does cancel (on 14 and 15 it shuts down only the sockets opened
-- since it was armed: none here).
CREATE FUNCTION cancelled(q text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN false;
EXCEPTION WHEN query_canceled THEN
    RETURN true;
END $$;
SELECT snowflake_internal.peer_deadline(500) AS fired_before;
SELECT cancelled('SELECT pg_sleep(1.5)') AS next_statement_cancelled;
BEGIN;
SELECT snowflake_internal.peer_deadline(500) AS fired_before;
SELECT cancelled('SELECT pg_sleep(1.5)') = (current_setting('server_version_num')::int >= 160000) AS same_transaction_cancelled_from_16_on;
ROLLBACK;
BEGIN;
SELECT snowflake_internal.peer_deadline(500) AS fired_before;
SELECT * FROM error_of('SELECT 1/0');
ROLLBACK;
SELECT cancelled('SELECT pg_sleep(1.5)') AS cancelled_after_an_aborted_transaction;
