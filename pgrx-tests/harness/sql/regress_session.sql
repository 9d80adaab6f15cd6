\set saved_echo :ECHO \set ECHO none
-- The session of a pg_regress test (pgrx-tests/regress/sql), after create_extension.sql's \c: times
-- in UTC and ISO, as the scenarios and the manual print them (pg_regress sets PGTZ, PGDATESTYLE and
-- intervalstyle for PostgreSQL's own tests, and those outweigh any database or role setting).
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, MDY';
SET IntervalStyle = 'postgres';
\set ECHO :saved_echo
