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
CREATE FUNCTION snowflake_check_peers(peers text[], max_skew_ms double precision DEFAULT 100)
RETURNS TABLE (peer text, machine_id integer, layout text, clock_offset_ms double precision, problems text[])
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    dblink_schema name;
    me record;
    i integer;
    t0 double precision;
    t1 double precision;
    answer record;
    peer_ms double precision;
    rows_ jsonb := '[]';
    r jsonb;
    other jsonb;
    found text[];
    shown text;
BEGIN
    SELECT n.nspname INTO dblink_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
    IF dblink_schema IS NULL THEN
        RAISE EXCEPTION 'snowflake_check_peers() needs the dblink extension'
            USING ERRCODE = '55000', HINT = 'Run CREATE EXTENSION dblink; in this database (it ships with PostgreSQL''s contrib).';
    END IF;
    SELECT s.machine_id, s.layout INTO me FROM @extschema@.snowflake_stats() s;
    rows_ := rows_ || jsonb_build_object('peer', 'this server', 'machine_id', me.machine_id, 'layout', me.layout,
                                         'offset', 0, 'error', NULL);
    FOR i IN 1 .. coalesce(array_length(peers, 1), 0) LOOP
        -- The peer as reported: its connection string without the password.
        shown := regexp_replace(peers[i], 'password\s*=\s*\S+', 'password=***', 'gi');
        BEGIN
            EXECUTE format('SELECT %I.dblink_connect($1, $2)', dblink_schema) USING 'snowflake_check_peers', peers[i];
            EXECUTE format('SELECT * FROM %I.dblink($1, $2) AS t(machine_id integer, layout text)', dblink_schema)
                INTO answer USING 'snowflake_check_peers', 'SELECT s.machine_id, s.layout FROM snowflake_stats() s';
            -- The clock on the open connection: the offset is off by at most half a round trip.
            t0 := extract(epoch FROM @extschema@.snowflake_clock()) * 1000;
            EXECUTE format('SELECT * FROM %I.dblink($1, $2) AS t(clock_ms double precision)', dblink_schema)
                INTO peer_ms USING 'snowflake_check_peers', 'SELECT extract(epoch FROM snowflake_clock()) * 1000';
            t1 := extract(epoch FROM @extschema@.snowflake_clock()) * 1000;
            EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink_schema) USING 'snowflake_check_peers';
            rows_ := rows_ || jsonb_build_object('peer', shown,
                'machine_id', answer.machine_id, 'layout', answer.layout,
                'offset', round((peer_ms - (t0 + t1) / 2)::numeric, 1), 'error', NULL);
        EXCEPTION WHEN others THEN
            BEGIN
                EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink_schema) USING 'snowflake_check_peers';
            EXCEPTION WHEN others THEN NULL; -- it was not connected
            END;
            rows_ := rows_ || jsonb_build_object('peer', shown,
                'machine_id', NULL, 'layout', NULL, 'offset', NULL, 'error', SQLERRM);
        END;
    END LOOP;
    FOR r IN SELECT value FROM jsonb_array_elements(rows_) LOOP
        found := '{}';
        IF r->>'error' IS NOT NULL THEN
            found := found || ('cannot ask it: ' || (r->>'error'));
        ELSE
            IF r->>'machine_id' IS NULL THEN
                found := found || 'machine id not set'::text;
            ELSIF (SELECT count(*) FROM jsonb_array_elements(rows_) o WHERE o.value->>'machine_id' = r->>'machine_id') > 1 THEN
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
COMMENT ON FUNCTION snowflake_check_peers(text[], double precision) IS
    'Asks other servers (through dblink) for their machine id, layout and clock, and flags duplicate machine ids, layout mismatches and clock skew';
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
REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_to_public(bigint) IS
    'The opaque public form of an id (AES with snowflake.public_key): 26 characters, reversible only with the key';
COMMENT ON FUNCTION snowflake_from_public(text) IS 'The id of a public token; an error for a token that is not one of ours';
COMMENT ON FUNCTION snowflake_try_from_public(text) IS 'The id of a public token, or NULL for a token that is not one of ours';
COMMENT ON FUNCTION snowflake_clock() IS 'The time as the generator reads it now';
/* </end connected objects> */

