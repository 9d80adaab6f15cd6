-- Descriptions shown by \df+ and \dT+.
COMMENT ON FUNCTION snowflake_nextval() IS
    'The next snowflake id of this server: 0 | timestamp | machine id | sequence, strictly increasing across all backends';
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'The timestamp, machine id and sequence of a snowflake id, under this server''s layout';
COMMENT ON TYPE snowflake_parts IS
    'The fields of a snowflake id, as returned by snowflake_decode()';
COMMENT ON TYPE snowflake_layout IS
    'The running layout of snowflake ids, as returned by snowflake_layout()';
COMMENT ON FUNCTION snowflake_decode(bigint, text) IS
    'The fields of an id minted by another system, under a preset of snowflake_presets() or server (this server''s layout)';
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS 'When a snowflake id was minted (the start of its tick)';
COMMENT ON FUNCTION snowflake_machine_id(bigint) IS 'The machine id field of a snowflake id';
COMMENT ON FUNCTION snowflake_sequence(bigint) IS 'The sequence field of a snowflake id';
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz) IS
    'The smallest id that can carry this time: WHERE id >= snowflake_from_timestamp(t) is a primary-key range scan';
COMMENT ON FUNCTION snowflake_compose(timestamptz, integer, integer) IS
    'The id with these fields, for backfills and tests';
COMMENT ON FUNCTION snowflake_decode(bigint, timestamptz, integer, integer, integer) IS
    'The fields of a snowflake id under the layout given as arguments (epoch, machine_bits, sequence_bits, time_unit_ms); IMMUTABLE';
COMMENT ON FUNCTION snowflake_timestamp(bigint, timestamptz, integer, integer, integer) IS
    'When a snowflake id was minted, under the layout given as arguments; IMMUTABLE, for indexes, generated columns and partition keys';
COMMENT ON FUNCTION snowflake_machine_id(bigint, timestamptz, integer, integer, integer) IS
    'The machine id field of a snowflake id, under the layout given as arguments; IMMUTABLE';
COMMENT ON FUNCTION snowflake_sequence(bigint, timestamptz, integer, integer, integer) IS
    'The sequence field of a snowflake id, under the layout given as arguments; IMMUTABLE';
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz, timestamptz, integer, integer, integer) IS
    'The smallest id carrying this time, under the layout given as arguments; IMMUTABLE';
COMMENT ON FUNCTION snowflake_timestamp(bigint, text) IS
    'When an id was minted, under a preset of snowflake_presets() (not server); IMMUTABLE';
COMMENT ON FUNCTION snowflake_machine_id(bigint, text) IS
    'The machine field of an id, under a preset (not server); IMMUTABLE';
COMMENT ON FUNCTION snowflake_sequence(bigint, text) IS
    'The sequence field of an id, under a preset (not server); IMMUTABLE';
COMMENT ON FUNCTION snowflake_presets() IS
    'The layouts of other systems that snowflake_decode(id, layout) and the IMMUTABLE readers know: epoch, tick, fields, an example id, where each is published';
COMMENT ON FUNCTION snowflake_layout() IS 'The running layout: epoch, time unit, field widths, capacity and end date';
COMMENT ON TYPE snowflake_stats IS 'The generator''s health, as returned by snowflake_stats()';
COMMENT ON FUNCTION snowflake_stats() IS
    'The generator''s counters, last issued time, durable high-water mark, machine id and layout';
COMMENT ON FUNCTION snowflake_stats_reset() IS 'Zeroes the counters of snowflake_stats() (superuser)';
COMMENT ON FUNCTION snowflake_machine_id_status() IS
    'Where the machine id comes from (manual, etcd, pod_index), the id in effect and, leased from etcd, the lease: deadline, time left, last renewal, recorded mark, counters, last error';
COMMENT ON FUNCTION snowflake_to_public(bigint) IS
    'The opaque public form of an id (AES with snowflake.public_key): 26 characters, reversible only with the key';
COMMENT ON FUNCTION snowflake_from_public(text) IS 'The id of a public token; an error for a token that is not one of ours';
COMMENT ON FUNCTION snowflake_try_from_public(text) IS 'The id of a public token, or NULL for a token that is not one of ours';
COMMENT ON FUNCTION snowflake_clock() IS 'The time as the generator reads it now';
COMMENT ON FUNCTION snowflake_internal.peer_conninfo(text, integer, integer) IS
    'For snowflake_check_peers(): a connection string without its passwords, with a connect_timeout, and its secrets to mask';
COMMENT ON FUNCTION snowflake_internal.peer_deadline(integer) IS
    'For snowflake_check_peers(): disarms this backend''s connect deadline (returns whether it fired), then arms it for ms, until the end of the transaction at most';
COMMENT ON FUNCTION snowflake_internal.dblink_poll(text, integer) IS
    'For snowflake_check_peers(): waits at most timeout_ms for the answer on the caller''s dblink link; refuses an answer that takes more than 64 kB or announces a message of more than 16 MB';

-- Privileges: least privilege by default (README "Security"). PUBLIC keeps what only reads or
-- computes: decode, the extractors, from_timestamp, compose, layout, clock, stats, and the schema
-- snowflake_internal with the helpers of snowflake_check_peers() that act only on the caller's own
-- dblink links or read their arguments or the catalog (peer_conninfo, dblink_wait, dblink_end,
-- dblink_poll, dblink_close, citus_nodes), and the helpers of snowflake_convert_column() and
-- snowflake_convert_all(): they read catalogs that every role may read and return rows or raise, and every statement they
-- run on a relation is one action of snowflake_internal.as_owner() (a closed set; the statement
-- built there), which runs it as the relation's owner, restricted, and only for a caller that could
-- become that owner itself with SET ROLE (so it gives nobody a right they do not have);
-- convert_floor issues an id only for a caller that may execute snowflake_nextval().
-- Revoked from PUBLIC, to be granted to the roles that need them:
-- - snowflake_nextval(): it spends the server's ids per tick (a role minting in a loop makes every
--   other caller wait for the next tick) and writes the durable mark; like a sequence's nextval(),
--   which needs USAGE on the sequence. A DEFAULT runs with the inserting role's privileges, so
--   grant it to the application roles that insert: GRANT EXECUTE ON FUNCTION snowflake_nextval() TO app;
-- - snowflake_to_public(), snowflake_from_public(), snowflake_try_from_public(): an oracle of the
--   server's key (mint a token for any id, read the id, hence the time, of any token); grant them
--   to the roles that serve public ids;
-- - snowflake_stats_reset(): the counters are everyone's;
-- - snowflake_check_peers(): opens network connections from the server;
-- - snowflake_internal.peer_deadline(): its helper that arms a timer cancelling this backend's statements
--   (until the end of the transaction); grant it with snowflake_check_peers().
GRANT USAGE ON SCHEMA snowflake_internal TO PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_to_public(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_from_public(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_try_from_public(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_check_peers(text[], double precision, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_internal.peer_deadline(integer) FROM PUBLIC;
-- For operators: snowflake_machine_id_status() shows the lease, the etcd endpoints and, in its last
-- error, other servers' host, port and data directory: pg_monitor's (and superusers').
REVOKE ALL ON FUNCTION snowflake_machine_id_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_machine_id_status() TO pg_monitor;
COMMENT ON FUNCTION snowflake_to_jsonb(bigint) IS
    'An id and its fields as JSON, the id as a decimal string (JSON numbers above 2^53 lose digits in JavaScript)';
COMMENT ON FUNCTION snowflake_partition_bounds(timestamptz, timestamptz, interval) IS
    'Range-partition bounds on the id, one row per step of time (in UTC) from the first time to at least the second: FOR VALUES FROM (from_id) TO (to_id)';
COMMENT ON FUNCTION snowflake_convert_column(regclass, name, boolean, boolean, boolean) IS
    'Turns a serial, identity, DEFAULT nextval() or pgEdge snowflake.nextval() key column into bigint DEFAULT snowflake_nextval(), widening the foreign keys that reference it (every partition of a partitioned table; the views on them recreated with recreate_views); refuses a column whose values are not below the first new id; returns the DDL, runs it unless dry_run';
COMMENT ON FUNCTION snowflake_convert_all(boolean, boolean, boolean) IS
    'snowflake_convert_column() on every serial, identity, nextval() or pgEdge key column of the database, referenced tables first, in one transaction; a row per column with its verdict and statements; a dry run (the default) is a plan, a real run converts all or refuses them all together';
COMMENT ON SCHEMA snowflake_internal IS 'pg_snowflake''s internals: the helpers of snowflake_convert_column(), snowflake_convert_all() and snowflake_check_peers(); not for direct use';
COMMENT ON FUNCTION snowflake_internal.as_owner(text, oid, text) IS
    'For the conversion: one action out of a closed set (max, min, lock, drop_identity, drop_default, drop_sequence, disown_sequence, drop_view, widen, set_default) on a relation, run as its owner in a security-restricted operation (as VACUUM and ANALYZE run table code), only where SET ROLE to that owner would be allowed (the session user''s memberships; never inside a SECURITY DEFINER function or a security-restricted operation); returns the value read (max, min)';
COMMENT ON FUNCTION snowflake_internal.owner_statement(text, oid, text) IS
    'For the conversion: the statement snowflake_internal.as_owner() runs for an action, as the plan shows it';
COMMENT ON FUNCTION snowflake_internal.missing_grant(oid) IS
    'For the conversion: NULL when the current user may act as the role (where SET ROLE to it would be allowed), else what would let it (the GRANT to the session user, or a call outside a SECURITY DEFINER function)';
