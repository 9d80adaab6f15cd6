/* <begin connected objects> */
CREATE TYPE snowflake_parts AS (
    ts         timestamptz,
    machine_id integer,
    sequence   integer
);
CREATE TYPE snowflake_layout AS (
    epoch                timestamptz,
    time_unit_ms         integer,
    timestamp_bits       integer,
    machine_bits         integer,
    sequence_bits        integer,
    max_machine_id       integer,
    ids_per_tick         bigint,
    ids_per_second       bigint,
    timestamp_field_ends timestamptz
);
CREATE TYPE snowflake_stats AS (
    ids_issued          bigint,
    sequence_waits      bigint,
    clock_rollbacks     bigint,
    largest_rollback_ms bigint,
    wait_time_ms        double precision,
    last_issued         timestamptz,
    high_water_mark     timestamptz,
    mark_writes         bigint,
    mark_waits          bigint,
    machine_id          integer,
    layout              text,
    stats_reset         timestamptz,
    mark_ahead_ms       bigint
);
/* </end connected objects> */

/* <begin connected objects> */
CREATE FUNCTION snowflake_check_peers(peers text[], max_skew_ms double precision DEFAULT 100, timeout_s integer DEFAULT 5)
RETURNS TABLE (peer text, machine_id integer, layout text, clock_offset_ms double precision, problems text[])
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    link constant text := 'snowflake_check_peers';
    dblink_schema name;
    me record;
    my_server text;
    i integer;
    c record;
    remote_schema text;
    t0 double precision;
    t1 double precision;
    answer record;
    rows_ jsonb := '[]';
    seen jsonb := '{}';
    r jsonb;
    found text[];
    message text;
    detail text;
    secret text;
BEGIN
    SELECT n.nspname INTO dblink_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
    IF dblink_schema IS NULL THEN
        RAISE EXCEPTION 'snowflake_check_peers() needs the dblink extension'
            USING ERRCODE = '55000', HINT = 'Run CREATE EXTENSION dblink; in this database (it ships with PostgreSQL''s contrib).';
    END IF;
    IF timeout_s IS NULL OR timeout_s < 1 OR timeout_s > 3600 THEN
        RAISE EXCEPTION 'snowflake_check_peers(): timeout_s = % is out of range (1 to 3600 seconds)', coalesce(timeout_s::text, 'NULL')
            USING ERRCODE = '22023', HINT = 'It bounds the connection to each peer and each query on it; 5 by default.';
    END IF;
    SELECT s.machine_id, s.layout INTO me FROM @extschema@.snowflake_stats() s;
    -- A server is its cluster (system identifier) running since a given moment: this server reached
    -- through a connection string, or one server listed twice, is counted once.
    SELECT cs.system_identifier::text || '@' || pg_postmaster_start_time()::text INTO my_server FROM pg_control_system() cs;
    rows_ := rows_ || jsonb_build_object('peer', 'this server', 'machine_id', me.machine_id, 'layout', me.layout,
                                         'offset', 0, 'counted', true);
    FOR i IN 1 .. coalesce(array_length(peers, 1), 0) LOOP
        SELECT * INTO c FROM @extschema@.snowflake_peer_conninfo(coalesce(peers[i], ''), i, timeout_s);
        BEGIN
            IF c.connect IS NULL THEN
                RAISE EXCEPTION 'its connection string does not parse' USING ERRCODE = '22023';
            END IF;
            -- A call ended by a cancel may have left the link open in this session.
            PERFORM @extschema@.snowflake_dblink_close(dblink_schema, link);
            -- dblink's connect ignores connect_timeout from PostgreSQL 16 on: a timer of ours ends it.
            PERFORM @extschema@.snowflake_peer_deadline(timeout_s * 1000);
            EXECUTE format('SELECT %I.dblink_connect($1, $2)', dblink_schema) USING link, c.connect;
            PERFORM @extschema@.snowflake_peer_deadline(0);
            -- pg_snowflake's schema there, under a search_path that no object of theirs can shadow.
            PERFORM @extschema@.snowflake_dblink_wait(dblink_schema, link, format(
                $q$SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false),
                          pg_catalog.set_config('statement_timeout', %L, false),
                          (SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                           WHERE e.extname = 'pg_snowflake')$q$, timeout_s || 's'), timeout_s);
            EXECUTE format('SELECT t.s FROM %I.dblink_get_result($1) AS t(p text, st text, s name)', dblink_schema)
                INTO remote_schema USING link;
            -- The end of the answer, which frees the link for the next query.
            EXECUTE format('SELECT * FROM %I.dblink_get_result($1) AS t(done text)', dblink_schema) USING link;
            IF remote_schema IS NULL THEN
                RAISE EXCEPTION 'pg_snowflake is not installed in that database' USING ERRCODE = '55000';
            END IF;
            -- The clock on the open connection: the offset is off by at most half a round trip.
            t0 := extract(epoch FROM @extschema@.snowflake_clock()) * 1000;
            PERFORM @extschema@.snowflake_dblink_wait(dblink_schema, link, format(
                $q$SELECT s.machine_id, s.layout,
                          c.system_identifier::text OPERATOR(pg_catalog.||) '@' OPERATOR(pg_catalog.||) pg_catalog.pg_postmaster_start_time()::text,
                          pg_catalog.date_part('epoch', %1$I.snowflake_clock()) OPERATOR(pg_catalog.*) 1000
                   FROM %1$I.snowflake_stats() s, pg_catalog.pg_control_system() c$q$, remote_schema), timeout_s);
            t1 := extract(epoch FROM @extschema@.snowflake_clock()) * 1000;
            EXECUTE format('SELECT * FROM %I.dblink_get_result($1) AS t(machine_id integer, layout text, server text, clock_ms double precision)', dblink_schema)
                INTO answer USING link;
            -- The end of the answer, which frees the link for the next query.
            EXECUTE format('SELECT * FROM %I.dblink_get_result($1) AS t(done text)', dblink_schema) USING link;
            PERFORM @extschema@.snowflake_dblink_close(dblink_schema, link);
            rows_ := rows_ || jsonb_build_object('peer', c.shown,
                'machine_id', answer.machine_id, 'layout', answer.layout,
                'offset', round((answer.clock_ms - (t0 + t1) / 2)::numeric, 1),
                'same_as', CASE WHEN answer.server = my_server THEN 'this server' ELSE seen ->> answer.server END,
                'counted', answer.server <> my_server AND NOT seen ? answer.server);
            IF NOT seen ? answer.server THEN
                seen := seen || jsonb_build_object(answer.server, c.shown);
            END IF;
        EXCEPTION
            WHEN query_canceled THEN
                IF NOT @extschema@.snowflake_peer_deadline(0) THEN
                    -- statement_timeout or a cancel: close the link and end the call.
                    PERFORM @extschema@.snowflake_dblink_close(dblink_schema, link);
                    RAISE;
                END IF;
                -- Our connect deadline.
                PERFORM @extschema@.snowflake_dblink_close(dblink_schema, link);
                rows_ := rows_ || jsonb_build_object('peer', c.shown, 'counted', false,
                    'error', format('could not establish connection: it did not answer within %s s (timeout_s)', timeout_s));
            WHEN others THEN
                PERFORM @extschema@.snowflake_peer_deadline(0);
                GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
                PERFORM @extschema@.snowflake_dblink_close(dblink_schema, link);
                message := message || coalesce(': ' || nullif(detail, ''), '');
                -- libpq may quote a piece of the connection string in its messages.
                FOREACH secret IN ARRAY c.secrets LOOP
                    IF octet_length(secret) >= 4 THEN
                        message := replace(message, secret, '***');
                    END IF;
                END LOOP;
                rows_ := rows_ || jsonb_build_object('peer', c.shown, 'counted', false, 'error', message);
        END;
    END LOOP;
    FOR r IN SELECT value FROM jsonb_array_elements(rows_) LOOP
        found := '{}';
        IF r->>'error' IS NOT NULL THEN
            found := found || ('cannot ask it: ' || (r->>'error'));
        ELSE
            IF r->>'same_as' IS NOT NULL THEN
                found := found || ('the same server as ' || (r->>'same_as') || ', counted once');
            END IF;
            IF r->>'machine_id' IS NULL THEN
                found := found || 'machine id not set'::text;
            ELSIF (SELECT count(*) FROM jsonb_array_elements(rows_) o
                   WHERE (o.value->>'counted')::boolean AND o.value->>'machine_id' = r->>'machine_id') > 1 THEN
                found := found || ('machine id ' || (r->>'machine_id') || ' is used by more than one server');
            END IF;
            IF r->>'layout' IS DISTINCT FROM me.layout THEN
                found := found || ('layout differs from this server''s: ' || coalesce(r->>'layout', 'none'));
            END IF;
            IF abs((r->>'offset')::double precision) > max_skew_ms THEN
                found := found || ('clock is ' || (r->>'offset') || ' ms off this server''s');
            END IF;
        END IF;
        peer := r->>'peer';
        machine_id := (r->>'machine_id')::integer;
        layout := r->>'layout';
        clock_offset_ms := (r->>'offset')::double precision;
        problems := found;
        RETURN NEXT;
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION snowflake_check_peers(text[], double precision, integer) IS
    'Asks other servers (through dblink) for their machine id, layout and clock, and flags duplicate machine ids, layout mismatches and clock skew; shows no password, gives up on a peer after timeout_s';
CREATE FUNCTION snowflake_dblink_wait(dblink_schema name, link text, query text, timeout_s integer) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    started timestamptz := clock_timestamp();
    busy integer;
BEGIN
    EXECUTE format('SELECT %I.dblink_send_query($1, $2)', dblink_schema) USING link, query;
    LOOP
        EXECUTE format('SELECT %I.dblink_is_busy($1)', dblink_schema) INTO busy USING link;
        EXIT WHEN busy = 0;
        IF clock_timestamp() - started > make_interval(secs => timeout_s) THEN
            RAISE EXCEPTION 'it did not answer within % s (timeout_s)', timeout_s USING ERRCODE = '08006';
        END IF;
        -- Spin for a round trip's worth first: the clock offset is measured around this wait.
        IF clock_timestamp() - started > interval '20 ms' THEN
            PERFORM pg_sleep(0.002);
        END IF;
    END LOOP;
END
$fn$;
CREATE FUNCTION snowflake_dblink_close(dblink_schema name, link text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    names text[];
BEGIN
    EXECUTE format('SELECT %I.dblink_get_connections()', dblink_schema) INTO names;
    IF link = ANY (coalesce(names, '{}')) THEN
        EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink_schema) USING link;
    END IF;
END
$fn$;
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_clock"() RETURNS timestamp with time zone
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_clock_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_compose"(
	"ts" timestamp with time zone,
	"machine_id" INT,
	"sequence" INT
) RETURNS bigint
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_compose_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_decode"(
	"id" bigint
) RETURNS snowflake_parts
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_decode_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_decode"(
	"id" bigint,
	"layout" TEXT
) RETURNS snowflake_parts
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_decode_as_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_from_public"(
	"token" TEXT
) RETURNS bigint
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_from_public_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_from_timestamp"(
	"ts" timestamp with time zone
) RETURNS bigint
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_from_timestamp_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_layout"(
) RETURNS snowflake_layout
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_layout_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_machine_id"(
	"id" bigint
) RETURNS INT
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_machine_id_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_nextval"() RETURNS bigint
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_nextval_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_peer_conninfo"(
	"conninfo" TEXT,
	"position" INT,
	"connect_timeout" INT
) RETURNS TABLE (
	"shown" TEXT,
	"connect" TEXT,
	"secrets" TEXT[]
)
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_peer_conninfo_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_peer_deadline"(
	"ms" INT
) RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_peer_deadline_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint
) RETURNS INT
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_sequence_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_stats"(
) RETURNS snowflake_stats
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_stats_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_stats_reset"() RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_stats_reset_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint
) RETURNS timestamp with time zone
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_timestamp_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_to_public"(
	"id" bigint
) RETURNS TEXT
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_to_public_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_try_from_public"(
	"token" TEXT
) RETURNS bigint
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_try_from_public_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
COMMENT ON FUNCTION snowflake_nextval() IS
    'The next snowflake id of this server: 0 | timestamp | machine id | sequence, strictly increasing across all backends';
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'The timestamp, machine id and sequence of a snowflake id, under this server''s layout';
COMMENT ON TYPE snowflake_parts IS
    'The fields of a snowflake id, as returned by snowflake_decode()';
COMMENT ON TYPE snowflake_layout IS
    'The running layout of snowflake ids, as returned by snowflake_layout()';
COMMENT ON FUNCTION snowflake_decode(bigint, text) IS
    'The fields of an id minted by another system: twitter, discord, instagram, sonyflake, or server';
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS 'When a snowflake id was minted (the start of its tick)';
COMMENT ON FUNCTION snowflake_machine_id(bigint) IS 'The machine id field of a snowflake id';
COMMENT ON FUNCTION snowflake_sequence(bigint) IS 'The sequence field of a snowflake id';
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz) IS
    'The smallest id that can carry this time: WHERE id >= snowflake_from_timestamp(t) is a primary-key range scan';
COMMENT ON FUNCTION snowflake_compose(timestamptz, integer, integer) IS
    'The id with these fields, for backfills and tests';
COMMENT ON FUNCTION snowflake_layout() IS 'The running layout: epoch, time unit, field widths, capacity and end date';
COMMENT ON TYPE snowflake_stats IS 'The generator''s health, as returned by snowflake_stats()';
COMMENT ON FUNCTION snowflake_stats() IS
    'The generator''s counters, last issued time, durable high-water mark, machine id and layout';
COMMENT ON FUNCTION snowflake_stats_reset() IS 'Zeroes the counters of snowflake_stats() (superuser)';
COMMENT ON FUNCTION snowflake_to_public(bigint) IS
    'The opaque public form of an id (AES with snowflake.public_key): 26 characters, reversible only with the key';
COMMENT ON FUNCTION snowflake_from_public(text) IS 'The id of a public token; an error for a token that is not one of ours';
COMMENT ON FUNCTION snowflake_try_from_public(text) IS 'The id of a public token, or NULL for a token that is not one of ours';
COMMENT ON FUNCTION snowflake_clock() IS 'The time as the generator reads it now';
COMMENT ON FUNCTION snowflake_peer_conninfo(text, integer, integer) IS
    'For snowflake_check_peers(): a connection string without its passwords, with a connect_timeout, and its secrets to mask';
COMMENT ON FUNCTION snowflake_peer_deadline(integer) IS
    'For snowflake_check_peers(): disarms this backend''s connect deadline (returns whether it fired), then arms it for ms';
REVOKE ALL ON FUNCTION snowflake_nextval() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_to_public(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_from_public(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_try_from_public(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_check_peers(text[], double precision, integer) FROM PUBLIC;
/* </end connected objects> */

