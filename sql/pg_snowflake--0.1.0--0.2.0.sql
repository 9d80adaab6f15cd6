-- pg_snowflake 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_snowflake UPDATE TO '0.2.0').
--
-- 0.2.0 changes the packaging (Debian packages, PGXN metadata, versioned upgrades) and, in SQL,
-- what follows. The upgrade test (pgrx-tests/scenarios/extension_upgrade.sh) checks that a
-- database updated from 0.1.0 has the catalog of a fresh 0.2.0 install.
--
-- The library file keeps its name (pg_snowflake.so): a server that preloads it picks up the new
-- build at its next restart.
\echo Use "ALTER EXTENSION pg_snowflake UPDATE TO '0.2.0'" to load this file. \quit

-- snowflake_stats() shows how far the high-water mark is ahead of the clock (the library fills the
-- new last field; the type must have it).
ALTER TYPE snowflake_stats ADD ATTRIBUTE mark_ahead_ms bigint;

-- snowflake_check_peers(): the password mask is computed once per peer.
CREATE OR REPLACE FUNCTION snowflake_check_peers(peers text[], max_skew_ms double precision DEFAULT 100)
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

