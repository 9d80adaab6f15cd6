-- pg_snowflake 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_snowflake UPDATE TO '0.2.0').
--
-- 0.2.0 changes the packaging (Debian packages, PGXN metadata, versioned upgrades), not the SQL
-- surface: every function, type, comment and privilege of 0.1.0 is the same in 0.2.0, so there is
-- nothing to change here. The upgrade test (pgrx-tests/scenarios/extension_upgrade.sh) checks that
-- a database updated from 0.1.0 has the catalog of a fresh 0.2.0 install.
--
-- The library file keeps its name (pg_snowflake.so): a server that preloads it picks up the new
-- build at its next restart.
\echo Use "ALTER EXTENSION pg_snowflake UPDATE TO '0.2.0'" to load this file. \quit
