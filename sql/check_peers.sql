-- snowflake_check_peers(peers, max_skew_ms, timeout_s): connects to other servers that share this
-- id space (through contrib's dblink) and reports, for this server and each peer, its machine id,
-- layout and clock offset from this server (and how far off that offset may be: half the round
-- trip it was measured in), with the problems found: a machine id shared by two servers, a machine
-- id not set, a layout that differs from this server's, a clock certainly further off than
-- max_skew_ms (the offset beyond max_skew_ms by more than its uncertainty: a busy server's slow
-- answer is no skew), or a peer that cannot be asked.
--
-- Safe to point at anything:
-- - no secret is shown: a peer is shown by its connection string with every password and
--   sslpassword masked, in each form libpq reads (key/value, quoted or not; URI userinfo and query;
--   percent-encoded), and those values are masked in error messages too; a string that does not
--   parse is not shown at all (snowflake_internal.peer_conninfo(), in Rust: src/core/src/conninfo.rs);
-- - no hang: connect_timeout = timeout_s is added to a connection string that sets none; each
--   remote query is sent asynchronously and waited for in a loop that statement_timeout and
--   pg_cancel_backend() can end (the link is then closed), and that gives up after timeout_s,
--   flagging the peer; the remote session gets statement_timeout = timeout_s too, so a query
--   left behind ends there by itself. (No cancel request is sent: libpq's PQcancel waits for the
--   peer without a timeout.) dblink's connect honours connect_timeout but cannot be interrupted
--   on PostgreSQL 14 and 15 (and a peer that never pauses defeats connect_timeout there); from 16
--   on it can be interrupted but ignores connect_timeout: so a timer of ours
--   (snowflake_internal.peer_deadline(), in Rust) ends it after timeout_s (from 16 on by a cancel, before
--   by shutting down the socket it connects on), and is disarmed at the end of the transaction
--   whatever happens;
-- - no unbounded memory: an answer that takes more than 64 kB before it ends, or announces a
--   message of more than 16 MB, is refused (the answers asked for are one small row; libpq holds
--   a whole answer until it ends, and sizes its buffer to the length a message declares);
-- - every read is bounded, the end of each answer too (snowflake_internal.dblink_end()): anything but one
--   row in one result, then the end, is refused, the link closed and the peer flagged, and the
--   call goes on to the next peer;
-- - remote calls name the remote extension's schema (looked up in its pg_extension) under
--   search_path = pg_catalog, pg_temp;
-- - this server, listed as a peer, or one server listed twice, is recognised by its system
--   identifier and postmaster start time, and counted once.
-- Without peers (NULL), on a Citus coordinator: every active primary node of pg_dist_node
-- (snowflake_internal.citus_nodes()); elsewhere refused.
CREATE FUNCTION snowflake_check_peers(peers text[] DEFAULT NULL, max_skew_ms double precision DEFAULT 100, timeout_s integer DEFAULT 5)
RETURNS TABLE (peer text, machine_id integer, layout text, clock_offset_ms double precision,
               clock_uncertainty_ms double precision, problems text[])
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
    first record;
    answer record;
    rows_ jsonb := '[]';
    seen jsonb := '{}';
    r jsonb;
    found text[];
    message text;
    detail text;
    secret text;
    fired boolean;
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
    IF peers IS NULL THEN
        peers := snowflake_internal.citus_nodes();
    END IF;
    SELECT s.machine_id, s.layout INTO me FROM @extschema@.snowflake_stats() s;
    -- A server is its cluster (system identifier) running since a given moment: this server reached
    -- through a connection string, or one server listed twice, is counted once.
    SELECT cs.system_identifier::text || '@' || pg_postmaster_start_time()::text INTO my_server FROM pg_control_system() cs;
    rows_ := rows_ || jsonb_build_object('peer', 'this server', 'machine_id', me.machine_id, 'layout', me.layout,
                                         'offset', 0, 'uncertainty', 0, 'counted', true);
    FOR i IN 1 .. coalesce(array_length(peers, 1), 0) LOOP
        SELECT * INTO c FROM snowflake_internal.peer_conninfo(coalesce(peers[i], ''), i, timeout_s);
        BEGIN
            IF c.connect IS NULL THEN
                RAISE EXCEPTION 'its connection string does not parse' USING ERRCODE = '22023';
            END IF;
            -- A call ended by a cancel may have left the link open in this session.
            PERFORM snowflake_internal.dblink_close(dblink_schema, link);
            -- dblink's connect ignores connect_timeout from PostgreSQL 16 on, and a peer that never
            -- pauses defeats it before: a timer of ours ends it.
            PERFORM snowflake_internal.peer_deadline(timeout_s * 1000);
            EXECUTE format('SELECT %I.dblink_connect($1, $2)', dblink_schema) USING link, c.connect;
            PERFORM snowflake_internal.peer_deadline(0);
            -- pg_snowflake's schema there, under a search_path that no object of theirs can shadow.
            PERFORM snowflake_internal.dblink_wait(dblink_schema, link, format(
                $q$SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false),
                          pg_catalog.set_config('statement_timeout', %L, false),
                          (SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                           WHERE e.extname = 'pg_snowflake')$q$, timeout_s || 's'), timeout_s);
            EXECUTE format('SELECT count(*) OVER () AS n, t.s FROM %I.dblink_get_result($1) AS t(p text, st text, s name) LIMIT 1', dblink_schema)
                INTO first USING link;
            IF first.n IS DISTINCT FROM 1 THEN
                RAISE EXCEPTION 'it answered with % rows (one was asked for)', coalesce(first.n, 0) USING ERRCODE = '08P01';
            END IF;
            remote_schema := first.s;
            PERFORM snowflake_internal.dblink_end(dblink_schema, link, timeout_s);
            IF remote_schema IS NULL THEN
                RAISE EXCEPTION 'pg_snowflake is not installed in that database' USING ERRCODE = '55000';
            END IF;
            -- The clock on the open connection: the offset is off by at most half a round trip.
            t0 := extract(epoch FROM @extschema@.snowflake_clock()) * 1000;
            PERFORM snowflake_internal.dblink_wait(dblink_schema, link, format(
                $q$SELECT s.machine_id, s.layout,
                          c.system_identifier::text OPERATOR(pg_catalog.||) '@' OPERATOR(pg_catalog.||) pg_catalog.pg_postmaster_start_time()::text,
                          pg_catalog.date_part('epoch', %1$I.snowflake_clock()) OPERATOR(pg_catalog.*) 1000
                   FROM %1$I.snowflake_stats() s, pg_catalog.pg_control_system() c$q$, remote_schema), timeout_s);
            t1 := extract(epoch FROM @extschema@.snowflake_clock()) * 1000;
            EXECUTE format('SELECT count(*) OVER () AS n, t.* FROM %I.dblink_get_result($1) AS t(machine_id integer, layout text, server text, clock_ms double precision) LIMIT 1', dblink_schema)
                INTO answer USING link;
            IF answer.n IS DISTINCT FROM 1 THEN
                RAISE EXCEPTION 'it answered with % rows (one was asked for)', coalesce(answer.n, 0) USING ERRCODE = '08P01';
            END IF;
            PERFORM snowflake_internal.dblink_end(dblink_schema, link, timeout_s);
            PERFORM snowflake_internal.dblink_close(dblink_schema, link);
            rows_ := rows_ || jsonb_build_object('peer', c.shown,
                'machine_id', answer.machine_id, 'layout', answer.layout,
                'offset', round((answer.clock_ms - (t0 + t1) / 2)::numeric, 1),
                'uncertainty', round(((t1 - t0) / 2)::numeric, 1),
                'same_as', CASE WHEN answer.server = my_server THEN 'this server' ELSE seen ->> answer.server END,
                'counted', answer.server <> my_server AND NOT seen ? answer.server);
            IF NOT seen ? answer.server THEN
                seen := seen || jsonb_build_object(answer.server, c.shown);
            END IF;
        EXCEPTION
            WHEN query_canceled THEN
                IF NOT snowflake_internal.peer_deadline(0) THEN
                    -- statement_timeout or a cancel: close the link and end the call.
                    PERFORM snowflake_internal.dblink_close(dblink_schema, link);
                    RAISE;
                END IF;
                -- Our connect deadline.
                PERFORM snowflake_internal.dblink_close(dblink_schema, link);
                rows_ := rows_ || jsonb_build_object('peer', c.shown, 'counted', false,
                    'error', format('could not establish connection: it did not answer within %s s (timeout_s)', timeout_s));
            WHEN others THEN
                -- (Before PostgreSQL 16 our connect deadline shuts the peer's socket: dblink's error.)
                fired := snowflake_internal.peer_deadline(0);
                GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
                PERFORM snowflake_internal.dblink_close(dblink_schema, link);
                message := CASE WHEN fired THEN format('could not establish connection: it did not answer within %s s (timeout_s)', timeout_s)
                                ELSE message || coalesce(': ' || nullif(detail, ''), '') END;
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
            -- The peer read its clock somewhere within the round trip: its offset is the midpoint's,
            -- give or take half the round trip. Flagged only when it is off by more than max_skew_ms
            -- whatever the uncertainty.
            IF abs((r->>'offset')::double precision) - (r->>'uncertainty')::double precision > max_skew_ms THEN
                found := found || ('clock is ' || (r->>'offset') || ' ms off this server''s (give or take '
                                   || (r->>'uncertainty') || ' ms, half the round trip)');
            END IF;
        END IF;
        peer := r->>'peer';
        machine_id := (r->>'machine_id')::integer;
        layout := r->>'layout';
        clock_offset_ms := (r->>'offset')::double precision;
        clock_uncertainty_ms := (r->>'uncertainty')::double precision;
        problems := found;
        RETURN NEXT;
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION snowflake_check_peers(text[], double precision, integer) IS
    'Asks other servers (through dblink) for their machine id, layout and clock, and flags duplicate machine ids, layout mismatches and clock skew; shows no password, gives up on a peer after timeout_s';

-- Helpers of snowflake_check_peers(), on the caller's own dblink connection, in the schema
-- snowflake_internal (not the user's schema; src/postgres/sql_api/peers.rs has the Rust ones).

-- Sends a query on a dblink connection and waits until its answer is there (read it with
-- dblink_get_result), in a loop that a cancel or statement_timeout can end (dblink's synchronous
-- calls cannot be interrupted before PostgreSQL 17), and that refuses (54000) an answer that takes
-- more than 64 kB of this backend's memory before it ends (libpq holds a whole answer until then;
-- the answers asked for are one small row): snowflake_internal.dblink_poll(), in Rust. Gives up after
-- timeout_s (08006). Refuses (08P01) when the query cannot be sent: the link is still busy with an
-- earlier answer (a peer that sent a second, empty result).
CREATE FUNCTION snowflake_internal.dblink_wait(dblink_schema name, link text, query text, timeout_s integer) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    sent integer;
BEGIN
    EXECUTE format('SELECT %I.dblink_send_query($1, $2)', dblink_schema) INTO sent USING link, query;
    IF sent IS DISTINCT FROM 1 THEN
        RAISE EXCEPTION 'the query could not be sent: the link is still busy with its earlier answer' USING ERRCODE = '08P01';
    END IF;
    IF NOT snowflake_internal.dblink_poll(link, timeout_s * 1000) THEN
        RAISE EXCEPTION 'it did not answer within % s (timeout_s)', timeout_s USING ERRCODE = '08006';
    END IF;
END
$fn$;

-- Reads the end of an answer whose first result was read (dblink_get_result returns nothing at
-- the end), which frees the link for the next query: waits for it as snowflake_internal.dblink_wait() does,
-- bounded in time (timeout_s, 08006) and in memory (a peer that never ends its answer, or floods
-- it with ParameterStatus or notices, or streams a second result, is refused), then refuses
-- (08P01) a second result with rows, or of another shape (dblink's own error).
CREATE FUNCTION snowflake_internal.dblink_end(dblink_schema name, link text, timeout_s integer) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    extra bigint;
BEGIN
    IF NOT snowflake_internal.dblink_poll(link, timeout_s * 1000) THEN
        RAISE EXCEPTION 'it did not end its answer within % s (timeout_s)', timeout_s USING ERRCODE = '08006';
    END IF;
    EXECUTE format('SELECT count(*) FROM %I.dblink_get_result($1) AS t(done text)', dblink_schema) INTO extra USING link;
    IF extra > 0 THEN
        RAISE EXCEPTION 'it sent a second result after its answer (% %; one result was asked for)', extra, CASE WHEN extra = 1 THEN 'row' ELSE 'rows' END
            USING ERRCODE = '08P01';
    END IF;
END
$fn$;

-- Closes the named dblink connection if this session has it open.
CREATE FUNCTION snowflake_internal.dblink_close(dblink_schema name, link text) RETURNS void
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

-- The peers of snowflake_check_peers() without peers: on a Citus coordinator, a connection string
-- (host, port, this database, this user) for each active primary node of pg_dist_node but the
-- coordinator itself (group 0, this server). Refused without Citus, and on a worker.
CREATE FUNCTION snowflake_internal.citus_nodes() RETURNS text[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    nodes text[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'snowflake_check_peers() without peers needs a Citus coordinator, and Citus is not installed in database %', current_database()
            USING ERRCODE = '55000', HINT = 'Name the servers to check: snowflake_check_peers(ARRAY[''host=db2 dbname=app'', ''service=db3'']).';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_local_group WHERE groupid = 0) THEN
        RAISE EXCEPTION 'snowflake_check_peers() without peers runs on the Citus coordinator, and this node is a worker (group %)', (SELECT groupid FROM pg_catalog.pg_dist_local_group)
            USING ERRCODE = '55000', HINT = 'Run it on the coordinator, which checks every node of pg_dist_node, or name the servers to check: snowflake_check_peers(ARRAY[''host=... port=... dbname=...'']).';
    END IF;
    -- A value in a connection string is quoted when it has to be (libpq's rules).
    SELECT coalesce(array_agg(format('host=%s port=%s dbname=%s user=%s', v[1], n.nodeport, v[2], v[3]) ORDER BY n.groupid, n.nodeid), '{}')
    INTO nodes
    FROM pg_catalog.pg_dist_node n,
         LATERAL (SELECT array_agg(CASE WHEN x ~ '^[^\s''\\]+$' THEN x ELSE '''' || replace(replace(x, '\', '\\'), '''', '\''') || '''' END ORDER BY o) AS v
                  FROM unnest(ARRAY[n.nodename, current_database(), current_user::text]) WITH ORDINALITY AS u(x, o)) q
    WHERE n.isactive AND n.noderole = 'primary' AND n.groupid <> 0;
    RETURN nodes;
END
$fn$;
