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
    ids_per_second       double precision,
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
    mark_ahead_ms       bigint,
    writer_waits        bigint,
    mark_wait_timeouts bigint,
    writer_takeovers    bigint,
    standby_waits       bigint,
    standby_wait_timeouts bigint,
    clock_waits         bigint,
    clock_wait_timeouts bigint
);
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
CREATE  FUNCTION "snowflake_decode"(
	"id" bigint,
	"epoch" timestamp with time zone,
	"machine_bits" INT,
	"sequence_bits" INT,
	"time_unit_ms" INT DEFAULT 1
) RETURNS snowflake_parts
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_decode_fixed_wrapper';
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
CREATE  FUNCTION "snowflake_from_timestamp"(
	"ts" timestamp with time zone,
	"epoch" timestamp with time zone,
	"machine_bits" INT,
	"sequence_bits" INT,
	"time_unit_ms" INT DEFAULT 1
) RETURNS bigint
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_from_timestamp_fixed_wrapper';
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
CREATE  FUNCTION "snowflake_machine_id"(
	"id" bigint,
	"epoch" timestamp with time zone,
	"machine_bits" INT,
	"sequence_bits" INT,
	"time_unit_ms" INT DEFAULT 1
) RETURNS INT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_machine_id_fixed_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_machine_id"(
	"id" bigint,
	"preset" TEXT
) RETURNS INT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_machine_id_preset_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_machine_id_status"() RETURNS TABLE (
	"source" TEXT,
	"machine_id" INT,
	"leased_from" TEXT,
	"held" bool,
	"lease_id" TEXT,
	"deadline" timestamp with time zone,
	"time_left_ms" bigint,
	"last_renewal" timestamp with time zone,
	"recorded_mark" timestamp with time zone,
	"claims" bigint,
	"renewals" bigint,
	"renewal_failures" bigint,
	"leases_lost" bigint,
	"refused_calls" bigint,
	"last_error" TEXT,
	"last_error_at" timestamp with time zone,
	"holders_at_claim" bigint,
	"reserved_in" TEXT,
	"reservations" bigint
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_machine_id_status_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE FUNCTION "snowflake_nextval"() RETURNS bigint
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_nextval_fast';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_partition_bounds"(
	"from" timestamp with time zone,
	"to" timestamp with time zone,
	"step" interval
) RETURNS TABLE (
	"from_id" bigint,
	"to_id" bigint,
	"suffix" TEXT,
	"from_ts" timestamp with time zone,
	"to_ts" timestamp with time zone
)
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_partition_bounds_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_presets"() RETURNS TABLE (
	"name" TEXT,
	"epoch" timestamp with time zone,
	"time_unit_ms" INT,
	"timestamp_bits" INT,
	"machine_bits" INT,
	"sequence_bits" INT,
	"fields" TEXT,
	"example" bigint,
	"source" TEXT
)
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_presets_wrapper';
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
CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint,
	"epoch" timestamp with time zone,
	"machine_bits" INT,
	"sequence_bits" INT,
	"time_unit_ms" INT DEFAULT 1
) RETURNS INT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_sequence_fixed_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint,
	"preset" TEXT
) RETURNS INT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_sequence_preset_wrapper';
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
CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint,
	"epoch" timestamp with time zone,
	"machine_bits" INT,
	"sequence_bits" INT,
	"time_unit_ms" INT DEFAULT 1
) RETURNS timestamp with time zone
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_timestamp_fixed_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint,
	"preset" TEXT
) RETURNS timestamp with time zone
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_timestamp_preset_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION "snowflake_to_jsonb"(
	"id" bigint
) RETURNS jsonb
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_to_jsonb_wrapper';
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
CREATE SCHEMA IF NOT EXISTS snowflake_internal;
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION snowflake_internal."missing_grant"(
	"role" oid
) RETURNS TEXT
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'missing_grant_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION snowflake_internal."owner_statement"(
	"action" TEXT,
	"rel" oid,
	"col" TEXT DEFAULT NULL
) RETURNS TEXT
STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'owner_statement_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION snowflake_internal."as_owner"(
	"action" TEXT,
	"rel" oid,
	"col" TEXT DEFAULT NULL
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'as_owner_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE FUNCTION snowflake_internal.convert_kind(tbl regclass, keynum int2) RETURNS text
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT CASE WHEN a.attidentity <> '' THEN 'identity'
            WHEN d.expr LIKE 'nextval(%' THEN
                CASE WHEN pg_get_serial_sequence(tbl::text, a.attname) IS NULL THEN 'nextval' ELSE 'serial' END
            WHEN d.expr ~ '^snowflake\.nextval\((''([^'']|'''')*''::regclass)?\)$' THEN 'pgedge' END
FROM pg_attribute a
LEFT JOIN LATERAL (SELECT pg_get_expr(ad.adbin, ad.adrelid) AS expr FROM pg_attrdef ad
                   WHERE ad.adrelid = a.attrelid AND ad.adnum = a.attnum) d ON true
WHERE a.attrelid = tbl AND a.attnum = keynum AND NOT a.attisdropped
$fn$;
CREATE FUNCTION snowflake_internal.convert_floor(tbl regclass, col name, kind text, issue boolean,
                                        OUT max_id bigint, OUT first_id bigint, OUT hint text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    lay record;
    machine bigint;
    clock timestamptz;
    top bigint;
    latest_epoch timestamptz;
    pgedge_first bigint;
    min_id bigint;
    issued boolean;
BEGIN
    max_id := snowflake_internal.as_owner('max', tbl, col);
    BEGIN
        SELECT * INTO lay FROM @extschema@.snowflake_layout();
        machine := greatest(current_setting('snowflake.machine_id')::bigint, 0);
        clock := @extschema@.snowflake_clock();
        -- Before this call issues one: whether the server has issued ids (its mark is on record).
        issued := (SELECT s.high_water_mark IS NOT NULL FROM @extschema@.snowflake_stats() s);
        IF issue AND has_function_privilege('@extschema@.snowflake_nextval()', 'EXECUTE') THEN
            first_id := @extschema@.snowflake_nextval();
        ELSE
            first_id := @extschema@.snowflake_from_timestamp(clock) | (machine << lay.sequence_bits);
        END IF;
    EXCEPTION WHEN others THEN
        IF issue THEN
            RAISE;
        END IF;
        RETURN;
    END;
    IF max_id IS NULL OR max_id < first_id THEN
        RETURN;
    END IF;
    -- pgEdge's epoch, with this server's widths (pgEdge's are the defaults: 10 and 12).
    pgedge_first := @extschema@.snowflake_from_timestamp(clock, '2023-01-01 00:00:00+00', lay.machine_bits,
                                                         lay.sequence_bits, lay.time_unit_ms)
                    | (machine << lay.sequence_bits);
    IF pgedge_first > max_id AND max_id >> 22 > 0
       AND @extschema@.snowflake_timestamp(max_id, 'pgedge') <= clock + interval '1 minute' THEN
        IF kind IS DISTINCT FROM 'pgedge' THEN
            min_id := snowflake_internal.as_owner('min', tbl, col);
        END IF;
        IF kind = 'pgedge' OR (min_id >> 22 > 0
                               AND @extschema@.snowflake_timestamp(min_id, 'pgedge') <= clock + interval '1 minute') THEN
            hint := 'These are pgEdge snowflake ids (ms since 2023-01-01 << 22 | node << 12 | count): ' || CASE
                WHEN issued IS FALSE THEN format('set snowflake.epoch = ''2023-01-01 00:00:00+00'' (pgEdge''s epoch) '
                     'and snowflake.machine_id to pgEdge''s snowflake.node in postgresql.conf, restart, and convert: the '
                     'first new id is then about %s (this server has issued no ids yet, so no other id changes). See '
                     '"Switching from pgEdge snowflake" in the manual.', pgedge_first)
                ELSE 'pgEdge''s epoch (2023-01-01) would put new ids above them, but this server has already issued ids '
                     'under its own: changing snowflake.epoch stops every snowflake_nextval() (55000, the layout changed) '
                     'until snowflake.accept_layout_change, and then every id it has issued, in every table, decodes at a '
                     'wrong time. Keep the column''s own default, or convert it on a server that has issued no '
                     'ids yet, set to pgEdge''s epoch; change the epoch here only if no table keeps this server''s ids. '
                     'See "Switching from pgEdge snowflake" in the manual.' END;
            RETURN;
        END IF;
    END IF;
    -- The tick of max_id under this layout's widths: an epoch at least top + 1 ticks before now
    -- puts the first new id above it. The latest such UTC midnight, if the field can hold it.
    top := max_id >> (lay.machine_bits + lay.sequence_bits);
    latest_epoch := date_trunc('day', (clock - (top + 1) * lay.time_unit_ms * interval '1 ms') AT TIME ZONE 'UTC')
                    AT TIME ZONE 'UTC';
    IF top + 1 >= (1::bigint << lay.timestamp_bits) OR latest_epoch < '1970-01-01 00:00:00+00' THEN
        hint := format('No epoch of this layout starts new ids above %s (its timestamp field would have to count '
                       'from before 1970): keep the column''s own default, or give the table a new key column.', max_id);
    ELSIF issued IS FALSE THEN
        hint := format('Set snowflake.epoch = ''%s'' or earlier in postgresql.conf (new ids then start above %s; the '
                       'timestamp field then ends in %s), restart, and convert (this server has issued no ids yet, so '
                       'no other id changes); or keep the column''s own default.',
                       to_char(latest_epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'), max_id,
                       to_char((latest_epoch + (1::bigint << lay.timestamp_bits) * lay.time_unit_ms * interval '1 ms')
                               AT TIME ZONE 'UTC', 'YYYY'));
    ELSE
        hint := format('Keep the column''s own default, or give the table a new key column (ADD COLUMN ... bigint DEFAULT '
                       'snowflake_nextval() gives every row a new id). A new epoch (snowflake.epoch = ''%s'' or earlier '
                       'would start new ids above %s) is no fix here: this server has already issued ids, so it stops '
                       'every snowflake_nextval() (55000, the layout changed) until snowflake.accept_layout_change, and '
                       'then every id it has issued, in every table, decodes at a wrong time; change it only if no table '
                       'keeps this server''s ids.',
                       to_char(latest_epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'), max_id);
    END IF;
END
$fn$;
CREATE FUNCTION snowflake_internal.convert_key(tbl regclass, col name, OUT attnum int2, OUT atttypid regtype,
                                      OUT attidentity "char", OUT kind text)
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    rel record;
    default_expr text;
    max_id bigint;
    first_id bigint;
    fix text;
    target text := tbl::text || '.' || quote_ident(col);
BEGIN
    SELECT c.relkind, c.relpersistence, c.relispartition INTO rel FROM pg_class c WHERE c.oid = tbl;
    IF rel.relispartition THEN
        RAISE EXCEPTION 'table % is a partition of %', tbl, pg_partition_root(tbl)
            USING ERRCODE = '0A000', HINT = format('Convert the partitioned table from its root: '
                  'snowflake_convert_column(%L, %L) converts every partition.', pg_partition_root(tbl)::text, col);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = tbl) THEN
        RAISE EXCEPTION 'table % inherits from %', tbl,
                (SELECT string_agg(inhparent::regclass::text, ', ' ORDER BY inhseqno) FROM pg_inherits WHERE inhrelid = tbl)
            USING ERRCODE = '0A000', HINT = 'A column inherited from a parent table cannot change type on its own: '
                  'convert it by hand from the parent (ALTER TABLE parent ALTER COLUMN ... TYPE bigint recurses).';
    END IF;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', tbl
            USING ERRCODE = '42809', HINT = 'Name an ordinary or partitioned table whose key column has a sequence default.';
    END IF;
    IF rel.relpersistence = 't' THEN
        RAISE EXCEPTION 'table % is temporary', tbl
            USING ERRCODE = '0A000', HINT = 'A temporary table lives for one session: '
                  'give it DEFAULT snowflake_nextval() when you create it.';
    END IF;
    SELECT a.attnum, a.atttypid, a.attidentity INTO attnum, atttypid, attidentity
    FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % does not exist', target
            USING ERRCODE = '42703', HINT = 'Name the key column of the table, as \d shows it.';
    END IF;
    IF atttypid NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'column % is of type %, not an integer', target, atttypid
            USING ERRCODE = '42804', HINT = 'Only smallint, integer and bigint key columns '
                  '(serial, bigserial, identity, DEFAULT nextval) can become snowflake ids.';
    END IF;
    kind := snowflake_internal.convert_kind(tbl, attnum);
    IF kind IS NULL THEN
        default_expr := pg_get_expr((SELECT d.adbin FROM pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = attnum), tbl);
        -- A default of snowflake_nextval() is suggested only if new ids would start above the old.
        BEGIN
            SELECT f.max_id, f.first_id, f.hint INTO max_id, first_id, fix
            FROM snowflake_internal.convert_floor(tbl, col, NULL, false) f;
        EXCEPTION WHEN insufficient_privilege THEN
            first_id := NULL;
        END;
        RAISE EXCEPTION 'column % is not a serial, identity, DEFAULT nextval() or pgEdge DEFAULT snowflake.nextval() column (its default: %)',
                target, coalesce(default_expr, 'none')
            USING ERRCODE = '42804', HINT = CASE
                WHEN max_id >= first_id THEN format('Its values reach %s, not below %s, the first id this server would '
                     'give it: a snowflake_nextval() default would put new ids below old ones. ', max_id, first_id) || fix
                WHEN first_id IS NOT NULL THEN 'To give it snowflake ids anyway: ALTER TABLE ... ALTER COLUMN ... '
                     'SET DEFAULT snowflake_nextval() (' || CASE WHEN max_id IS NULL THEN 'it holds no value yet'
                     ELSE format('its largest value, %s, is below the first id this server would give it now', max_id)
                     END || ').'
                ELSE 'To give it snowflake ids anyway: ALTER TABLE ... ALTER COLUMN ... SET DEFAULT snowflake_nextval(), '
                     'once SELECT max(...) of the column is below snowflake_from_timestamp(now()).' END;
    END IF;
END
$fn$;
CREATE FUNCTION snowflake_internal.convert_targets(tbl regclass, keynum int2)
RETURNS TABLE (n int, relid oid, attnum int2, attname name, widen boolean)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT (row_number() OVER (ORDER BY t.k, t.conid))::int, t.relid, t.attnum, a.attname, a.atttypid <> 'bigint'::regtype
FROM (SELECT DISTINCT ON (c.relid, c.attnum) c.* FROM (
          SELECT 0 AS k, 0::oid AS conid, tbl::oid AS relid, keynum AS attnum
          UNION ALL
          SELECT 1, con.oid, con.conrelid, con.conkey[array_position(con.confkey, keynum)] FROM pg_constraint con
          WHERE con.contype = 'f' AND con.confrelid = tbl AND con.conparentid = 0 AND keynum = ANY (con.confkey)) c
      ORDER BY c.relid, c.attnum, c.k, c.conid) t
JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum = t.attnum
WHERE t.k = 0 OR a.atttypid <> 'bigint'::regtype
ORDER BY 1
$fn$;
CREATE FUNCTION snowflake_internal.convert_reach(tbl regclass, keynum int2)
RETURNS TABLE (n int, relid oid, attnum int2, attname name, widen boolean, level int)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE tree(n, relid, attname, widen, level) AS (
    SELECT t.n, t.relid, t.attname, t.widen, 0 FROM snowflake_internal.convert_targets(tbl, keynum) t
    UNION
    SELECT t.n, i.inhrelid, t.attname, t.widen, t.level + 1 FROM tree t JOIN pg_inherits i ON i.inhparent = t.relid
)
SELECT DISTINCT ON (t.n, t.relid) t.n, t.relid, a.attnum, a.attname, t.widen, t.level
FROM tree t JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = t.attname AND NOT a.attisdropped
ORDER BY t.n, t.relid, t.level
$fn$;
CREATE FUNCTION snowflake_internal.convert_views(tbl regclass, keynum int2)
RETURNS TABLE (n int, view oid)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE uses(view, depth) AS (
    SELECT r.ev_class, 0 FROM snowflake_internal.convert_reach(tbl, keynum) w
    JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid AND d.refobjsubid = w.attnum
                    AND d.classid = 'pg_rewrite'::regclass
    JOIN pg_rewrite r ON r.oid = d.objid
    WHERE w.widen AND r.ev_class <> w.relid
    UNION ALL
    SELECT r.ev_class, u.depth + 1 FROM uses u
    JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = u.view AND d.classid = 'pg_rewrite'::regclass
    JOIN pg_rewrite r ON r.oid = d.objid
    WHERE r.ev_class <> u.view
)
SELECT (row_number() OVER (ORDER BY max(depth), view::regclass::text))::int, view
FROM uses GROUP BY view ORDER BY 1
$fn$;
CREATE FUNCTION snowflake_internal.convert_view_blockers(tbl regclass, col name, keynum int2, recreate_views boolean)
RETURNS TABLE (n int, k int, state text, message text, hint text)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH views AS (SELECT * FROM snowflake_internal.convert_views(tbl, keynum))
SELECT 0, 1, '0A000', format('materialized views or rules use the columns that converting %s.%I widens: %s', tbl, col,
                             string_agg(c.oid::regclass::text, ', ' ORDER BY c.oid::regclass::text)),
       'A materialized view would have to be filled again: save its definition (pg_get_viewdef) and indexes, drop it, '
       'convert, create it again and REFRESH it. A rule: save it (pg_get_ruledef), drop it, convert, create it again.'
FROM views v JOIN pg_class c ON c.oid = v.view WHERE c.relkind <> 'v' HAVING count(*) > 0
UNION ALL
SELECT 0, 2, '2BP01', format('views use the columns that converting %s.%I widens: %s', tbl, col,
                             string_agg(v.view::regclass::text, ', ' ORDER BY v.n)),
       'Their types cannot change under a view: recreate_views => true drops the views and creates them again '
       '(definition, options, owner, privileges, comments) in the same transaction.'
FROM views v WHERE NOT recreate_views HAVING count(*) > 0
UNION ALL
-- What stops a view from being dropped and created again, view by view.
SELECT v.n, 3, '42501', format('permission denied: view %s cannot be created again by %I, who has no CREATE privilege '
                               'on the schema %I', v.view::regclass, current_user, c.relnamespace::regnamespace::text),
       'The views are created again by the caller of the conversion and given back to their owners: convert as a role '
       'that may create them (GRANT CREATE ON SCHEMA ... TO ...), or save, drop and create the view yourself.'
FROM views v JOIN pg_class c ON c.oid = v.view
WHERE NOT has_schema_privilege(c.relnamespace, 'CREATE')
UNION ALL
-- ALTER VIEW ... OWNER TO, run by a role that is not a superuser, gives a view to a role only if the
-- caller itself may SET ROLE to it (PostgreSQL 16 and later; membership on 14 and 15: the current
-- user's, as ALTER ... OWNER TO asks, not the session's) and that role may create in the view's
-- schema.
SELECT v.n, 7, '42501', format('permission denied: view %s cannot be given back to its owner %I by %I, who may not '
                               'SET ROLE %I', v.view::regclass, pg_get_userbyid(c.relowner), current_user,
                               pg_get_userbyid(c.relowner)),
       format('The views are created again by the caller, as itself, and given back to their owners with ALTER VIEW '
              '... OWNER TO, which needs the caller to be able to become the owner: convert as %I or as a superuser, or '
              'GRANT %I TO %I%s.', pg_get_userbyid(c.relowner), pg_get_userbyid(c.relowner), current_user,
              CASE WHEN current_setting('server_version_num')::int >= 160000 THEN ' WITH SET TRUE' ELSE '' END)
FROM views v JOIN pg_class c ON c.oid = v.view
WHERE recreate_views AND c.relkind = 'v' AND pg_get_userbyid(c.relowner) <> current_user
  AND NOT CASE WHEN current_setting('server_version_num')::int >= 160000
               THEN pg_has_role(current_user, c.relowner, 'SET') ELSE pg_has_role(current_user, c.relowner, 'MEMBER') END
UNION ALL
-- ALTER VIEW ... OWNER TO, run by a role that is not a superuser, gives a view to a role only if that
-- role may create in the view's schema.
SELECT v.n, 6, '42501', format('permission denied: view %s cannot be given back to its owner %I, who has no CREATE '
                               'privilege on the schema %I', v.view::regclass, pg_get_userbyid(c.relowner),
                               c.relnamespace::regnamespace::text),
       format('The views are created again by the caller and given back to their owners with ALTER VIEW ... OWNER TO, '
              'which needs the owner to have CREATE on the schema unless a superuser runs it: GRANT CREATE ON SCHEMA %I '
              'TO %I, convert as a superuser, or save, drop and create the view yourself.',
              c.relnamespace::regnamespace::text, pg_get_userbyid(c.relowner))
FROM views v JOIN pg_class c ON c.oid = v.view
WHERE recreate_views AND c.relkind = 'v' AND pg_get_userbyid(c.relowner) <> current_user
  AND NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user)
  AND NOT has_schema_privilege(c.relowner, c.relnamespace, 'CREATE')
UNION ALL
SELECT v.n, 4, '0A000', format('view %s has what recreating it would lose: %s', v.view::regclass, b.what),
       'Save them, drop the view, convert with recreate_views => true, and add them again, in one transaction.'
FROM views v CROSS JOIN LATERAL (SELECT string_agg(what, ', ') AS what FROM (
        SELECT format('trigger %I', t.tgname) AS what FROM pg_trigger t WHERE t.tgrelid = v.view
        UNION ALL SELECT format('rule %I', r.rulename) FROM pg_rewrite r WHERE r.ev_class = v.view AND r.rulename <> '_RETURN'
        UNION ALL SELECT format('default of column %I', a.attname) FROM pg_attrdef d
                  JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = v.view) x) b
WHERE b.what IS NOT NULL
UNION ALL
-- What else DROP VIEW would refuse to drop under it (a function's BEGIN ATOMIC body, a policy).
SELECT v.n, 5, '2BP01', format('view %s cannot be dropped and created again: it is used by %s', v.view::regclass, b.what),
       'Save their definitions, drop them, convert with recreate_views => true, and create them again, in one transaction.'
FROM views v CROSS JOIN LATERAL (
    SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', '
                      ORDER BY pg_describe_object(d.classid, d.objid, d.objsubid)) AS what
    FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.view AND d.deptype = 'n'
                       AND d.classid <> 'pg_rewrite'::regclass) b
WHERE b.what IS NOT NULL
$fn$;
CREATE FUNCTION snowflake_internal.convert_blockers(tbl regclass, col name, keynum int2, recreate_views boolean)
RETURNS TABLE (state text, message text, hint text)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH reach AS (SELECT * FROM snowflake_internal.convert_reach(tbl, keynum)),
wide AS (SELECT * FROM reach WHERE widen),
-- Partitions and children of another owner than the table whose ALTER TABLE recurses into them.
strange AS (SELECT r.*, c.relowner AS owner, p.relid AS parent, pc.relowner AS parent_owner
            FROM reach r JOIN pg_class c ON c.oid = r.relid
            JOIN reach p ON p.n = r.n AND p.level = 0 JOIN pg_class pc ON pc.oid = p.relid
            WHERE r.level > 0 AND c.relowner <> pc.relowner),
blockers(k, state, objects, message, hint) AS (VALUES
    (1, '0A000', (SELECT format('foreign key %s on %s references %s.%I, but its column %s.%I is inherited from %s',
                                con.conname, con.conrelid::regclass, tbl, col, con.conrelid::regclass, a.attname,
                                (SELECT string_agg(inhparent::regclass::text, ', ' ORDER BY inhseqno)
                                 FROM pg_inherits WHERE inhrelid = con.conrelid))
                  FROM pg_constraint con JOIN pg_attribute a ON a.attrelid = con.conrelid
                                                            AND a.attnum = con.conkey[array_position(con.confkey, keynum)]
                  WHERE con.contype = 'f' AND con.confrelid = tbl AND con.conparentid = 0 AND keynum = ANY (con.confkey)
                    AND a.attinhcount > 0 AND a.atttypid <> 'bigint'::regtype
                  ORDER BY con.conrelid::regclass::text, con.conname LIMIT 1), '%2$s',
     'An inherited column changes type only with its parent: widen it there first (ALTER TABLE parent ALTER COLUMN ... '
     'TYPE bigint reaches every partition or child), in the same transaction, then convert.'),
    (4, '42501', (SELECT string_agg(format('%s (owned by %I, under %s owned by %I)', s.relid::regclass,
                                           pg_get_userbyid(s.owner), s.parent::regclass, pg_get_userbyid(s.parent_owner)),
                                    ', ' ORDER BY s.n, s.level, s.relid::regclass::text)
                  FROM strange s),
     'permission denied: converting %s alters partitions or children of another owner than their parent: %2$s',
     'ALTER TABLE ... ALTER COLUMN ... TYPE recurses from a table into its partitions and children as the table''s '
     'owner, and PostgreSQL lets only their own owner alter them (their constraints and indexes would run with another '
     'role''s rights). Give them to the owner of their parent (ALTER TABLE ... OWNER TO ...), then convert.'),
    (5, '0A000', (SELECT string_agg(format('%s (partition key of %s)', quote_ident(w.attname), w.relid::regclass), ', '
                                    ORDER BY w.relid::regclass::text, w.attnum)
                  FROM wide w JOIN pg_partitioned_table pt ON pt.partrelid = w.relid
                  WHERE w.attnum = ANY (pt.partattrs::int2[])),
     'column %s cannot be widened to bigint: %s',
     'PostgreSQL cannot change the type of a partition key column: create a table partitioned on a bigint column, copy '
     'the rows into it (INSERT ... SELECT), and convert that one.'),
    -- A generated column depends on the columns it uses through its pg_attrdef entry (15+) or
    -- directly, as a column of the same table (14).
    (6, '0A000', (SELECT string_agg(format('%s.%I (used by the generated column %I)',
                                           w.relid::regclass, w.attname, g.attname), ', '
                                    ORDER BY w.relid::regclass::text, w.attnum, g.attnum)
                  FROM wide w JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid
                                              AND d.refobjsubid = w.attnum
                  LEFT JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
                  JOIN pg_attribute g ON g.attrelid = w.relid AND g.attnum <> w.attnum AND g.attgenerated <> ''
                       AND g.attinhcount = 0
                       AND ((d.classid = 'pg_attrdef'::regclass AND ad.adrelid = w.relid AND g.attnum = ad.adnum)
                            OR (d.classid = 'pg_class'::regclass AND d.objid = w.relid AND g.attnum = d.objsubid))),
     'generated columns use the columns that converting %s widens: %s',
     'Drop the generated column, convert, and add it again (ALTER TABLE ... ADD COLUMN ... GENERATED ALWAYS AS (...) '
     'STORED computes it anew), in one transaction.'),
    (7, '0A000', (SELECT string_agg(DISTINCT format('%s.%I (used by the policy %I on %s)', w.relid::regclass, w.attname,
                                                    p.polname, p.polrelid::regclass), ', ')
                  FROM wide w JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid
                                              AND d.refobjsubid = w.attnum AND d.classid = 'pg_policy'::regclass
                  JOIN pg_policy p ON p.oid = d.objid),
     'row-level security policies use the columns that converting %s widens: %s',
     'Save the policy''s definition (pg_policies), DROP POLICY, convert, and CREATE POLICY again, in one transaction.'),
    (8, '0A000', (SELECT string_agg(DISTINCT format('%s.%I (used by the trigger %I on %s)', w.relid::regclass, w.attname,
                                                    t.tgname, t.tgrelid::regclass), ', ')
                  FROM wide w JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid
                                              AND d.refobjsubid = w.attnum AND d.classid = 'pg_trigger'::regclass
                  JOIN pg_trigger t ON t.oid = d.objid),
     'triggers use the columns that converting %s widens in their WHEN condition: %s',
     'Save the trigger''s definition (pg_get_triggerdef), DROP TRIGGER, convert, and create it again, in one transaction.'),
    -- The new default is set by the table's owner: it names snowflake_nextval() in its schema.
    (9, '42501', (SELECT format('%I has no USAGE on the schema %I', pg_get_userbyid(c.relowner), e.extnamespace::regnamespace::text)
                  FROM pg_class c, pg_extension e
                  WHERE c.oid = tbl AND e.extname = 'pg_snowflake' AND NOT has_schema_privilege(c.relowner, e.extnamespace, 'USAGE')),
     'permission denied: the owner of %s cannot name snowflake_nextval(): %s',
     'The new default is set by the table''s owner, and every role that inserts runs it: GRANT USAGE ON SCHEMA (the '
     'extension''s) to the owner and to those roles, and GRANT EXECUTE ON FUNCTION snowflake_nextval() to the roles that '
     'insert, then convert.')
)
SELECT state, message, hint FROM (
    SELECT 0 AS n, b.k, b.state, format(b.message, tbl::text || '.' || quote_ident(col), b.objects, current_user) AS message,
           b.hint
    FROM blockers b WHERE b.objects IS NOT NULL
    UNION ALL
    SELECT 1 + v.n, v.k, v.state, v.message, v.hint
    FROM snowflake_internal.convert_view_blockers(tbl, col, keynum, recreate_views) v) b
ORDER BY n, k
$fn$;
CREATE FUNCTION snowflake_internal.convert_view_ddl(v regclass)
RETURNS SETOF text
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT ddl FROM (
    SELECT 1 AS k, 0 AS attnum, '' AS grantee, false AS grantable,
           format('CREATE VIEW %s%s AS %s', v, (SELECT ' WITH (' || string_agg(format('%s=%L', split_part(o, '=', 1),
                                                       substr(o, strpos(o, '=') + 1)), ', ') || ')' FROM unnest(c.reloptions) o),
                  rtrim(pg_get_viewdef(v), ';')) AS ddl
    FROM pg_class c WHERE c.oid = v
    UNION ALL
    -- The owner's own privileges that it had revoked (a NULL ACL is the default: it has them all).
    SELECT 2, 0, '', false, format('REVOKE %s ON %s FROM CURRENT_USER', string_agg(p.privilege, ', ' ORDER BY p.privilege), v)
    FROM pg_class c, unnest(ARRAY['DELETE', 'INSERT', 'REFERENCES', 'SELECT', 'TRIGGER', 'TRUNCATE', 'UPDATE']
                            || CASE WHEN current_setting('server_version_num')::int >= 170000
                                    THEN ARRAY['MAINTAIN'] ELSE ARRAY[]::text[] END) AS p(privilege)
    WHERE c.oid = v AND c.relacl IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM aclexplode(c.relacl) a
                      WHERE a.grantee = c.relowner AND a.grantor = c.relowner AND a.privilege_type = p.privilege)
    GROUP BY c.oid HAVING count(*) > 0
    UNION ALL
    SELECT 3, g.attnum, pg_get_userbyid(g.grantee), g.is_grantable,
           format('GRANT %s%s ON %s TO %s%s', string_agg(DISTINCT g.privilege_type, ', ' ORDER BY g.privilege_type),
                  CASE WHEN g.attname IS NULL THEN '' ELSE format(' (%I)', g.attname) END, v,
                  CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
    FROM (SELECT NULL::name AS attname, 0 AS attnum, a.* FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = v
          UNION ALL
          SELECT at.attname, at.attnum, a.* FROM pg_attribute at, aclexplode(at.attacl) a
          WHERE at.attrelid = v AND at.attnum > 0) g
    WHERE g.grantee <> (SELECT relowner FROM pg_class WHERE oid = v)
    GROUP BY g.attnum, g.attname, g.grantee, g.is_grantable
    UNION ALL
    SELECT 4, 0, '', false, format('COMMENT ON VIEW %s IS %L', v, obj_description(v, 'pg_class'))
    WHERE obj_description(v, 'pg_class') IS NOT NULL
    UNION ALL
    SELECT 5, a.attnum, '', false, format('COMMENT ON COLUMN %s.%I IS %L', v, a.attname, col_description(v, a.attnum))
    FROM pg_attribute a WHERE a.attrelid = v AND a.attnum > 0 AND col_description(v, a.attnum) IS NOT NULL
    UNION ALL
    SELECT 6, 0, '', false, format('ALTER VIEW %s OWNER TO %I', v, pg_get_userbyid(c.relowner))
    FROM pg_class c WHERE c.oid = v) d
ORDER BY k, attnum, grantee, grantable
$fn$;
CREATE FUNCTION snowflake_internal.convert_above(tbl regclass, col name, kind text, issue boolean) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    f record;
BEGIN
    SELECT * INTO f FROM snowflake_internal.convert_floor(tbl, col, kind, issue);
    IF f.max_id >= f.first_id THEN
        RAISE EXCEPTION 'column %.% holds ids up to %, not below %, the first id this server would give it',
                tbl, quote_ident(col), f.max_id, f.first_id
            USING ERRCODE = '22003', HINT = f.hint;
    END IF;
END
$fn$;
CREATE FUNCTION snowflake_internal.convert_statements(tbl regclass, col name, keynum int2, identity boolean,
                                                      seq regclass, drop_sequence boolean)
RETURNS TABLE (n int, relid oid, owner oid, action text, attname name, statement text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT (row_number() OVER (ORDER BY s.k, s.i))::int, s.relid,
       CASE WHEN s.action IS NULL THEN (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user) ELSE c.relowner END,
       s.action, s.attname,
       coalesce(s.ddl, snowflake_internal.owner_statement(s.action, s.relid, s.attname)) FROM (
    SELECT 1 AS k, 0::bigint AS i, tbl::oid AS relid, CASE WHEN identity THEN 'drop_identity' ELSE 'drop_default' END AS action,
           col AS attname, NULL::text AS ddl
    UNION ALL
    -- (An identity's own sequence goes with it. Others go, or are let go, before any type changes:
    -- Citus refuses ALTER COLUMN TYPE on a column that owns a sequence.)
    SELECT 2, 0, seq, CASE WHEN drop_sequence THEN 'drop_sequence' ELSE 'disown_sequence' END, NULL, NULL
    WHERE NOT identity AND seq IS NOT NULL
    UNION ALL
    SELECT 3, -v.n, v.view, 'drop_view', NULL, NULL
    FROM snowflake_internal.convert_views(tbl, keynum) v
    UNION ALL
    SELECT 4, t.n, t.relid, 'widen', t.attname, NULL
    FROM snowflake_internal.convert_targets(tbl, keynum) t WHERE t.widen
    UNION ALL
    SELECT 5, 0, tbl, 'set_default', col, NULL
    UNION ALL
    -- (Created again by the caller and given back to their owner, as before the conversion: parsing
    -- a view's definition runs no code of its functions, and its owner may have no CREATE
    -- privilege on its schema.)
    SELECT 6, v.n * 1000000 + x.k, v.view, NULL, NULL, x.d
    FROM snowflake_internal.convert_views(tbl, keynum) v,
         LATERAL snowflake_internal.convert_view_ddl(v.view::regclass) WITH ORDINALITY AS x(d, k)) s
JOIN pg_class c ON c.oid = s.relid
ORDER BY 1
$fn$;
CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, dry_run boolean DEFAULT true,
                                         drop_sequence boolean DEFAULT true, recreate_views boolean DEFAULT false)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    key record;
    b record;
    seq text;
    users text;
    foreign_owners text;
    grants text;
    rels oid[];
    actions text[];
    cols name[];
    statements text[];
BEGIN
    SELECT * INTO key FROM snowflake_internal.convert_key(tbl, col);
    FOR b IN SELECT * FROM snowflake_internal.convert_blockers(tbl, col, key.attnum, recreate_views) LOOP
        RAISE EXCEPTION USING ERRCODE = b.state, MESSAGE = b.message, HINT = b.hint;
    END LOOP;
    -- A sequence it would drop that other defaults still use: refused, rather than half-way.
    seq := pg_get_serial_sequence(tbl::text, col);
    IF drop_sequence AND key.attidentity = '' AND seq IS NOT NULL THEN
        SELECT string_agg(format('%s.%I', ad.adrelid::regclass, a.attname), ', '
                          ORDER BY ad.adrelid::regclass::text, a.attname) INTO users
        FROM pg_depend d JOIN pg_attrdef ad ON ad.oid = d.objid
        JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
        WHERE d.classid = 'pg_attrdef'::regclass AND d.refclassid = 'pg_class'::regclass
          AND d.refobjid = seq::regclass
          -- (the column's own default, and its copies on the partitions and children, go with it)
          AND NOT EXISTS (SELECT 1 FROM snowflake_internal.convert_reach(tbl, key.attnum) r
                          WHERE r.n = 1 AND r.relid = ad.adrelid AND r.attnum = ad.adnum);
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'sequence % of %.% is the default of other columns too: %', seq, tbl, quote_ident(col), users
                USING ERRCODE = '2BP01', HINT = 'Keep it with drop_sequence => false (no column owns it then), or '
                      'convert those columns first.';
        END IF;
    END IF;
    -- Every statement, planned in full before the first runs (the views are read before they are
    -- dropped); each runs as the owner of what it touches: the caller must be able to become each
    -- owner (SET ROLE), the one rule of snowflake_internal.as_owner(), asked here first
    -- (snowflake_internal.missing_grant()) so that a refusal comes before anything runs.
    SELECT array_agg(s.relid ORDER BY s.n), array_agg(s.action ORDER BY s.n), array_agg(s.attname ORDER BY s.n),
           array_agg(s.statement ORDER BY s.n),
           string_agg(DISTINCT format('%s (owned by %I)', s.relid::regclass, pg_get_userbyid(s.owner)), ', ')
               FILTER (WHERE snowflake_internal.missing_grant(s.owner) IS NOT NULL),
           string_agg(DISTINCT snowflake_internal.missing_grant(s.owner), '; ')
    INTO rels, actions, cols, statements, foreign_owners, grants
    FROM snowflake_internal.convert_statements(tbl, col, key.attnum, key.attidentity <> '', seq::regclass,
                                               drop_sequence) s;
    IF foreign_owners IS NOT NULL THEN
        RAISE EXCEPTION 'permission denied: converting %.% runs statements as owners that % may not become (SET ROLE): %',
                tbl, quote_ident(col), session_user, foreign_owners
            USING ERRCODE = '42501', HINT = 'Each statement runs as the owner of what it alters (restricted, as VACUUM '
                  'and ANALYZE run table code), only for a caller that could become that owner itself (SET ROLE; its '
                  'privileges alone, INHERIT, are not enough): convert as a role that may become them all (a superuser '
                  'may), or ' || grants || ', or have the owners of the other referencing tables widen their columns '
                  'first (ALTER TABLE ... ALTER COLUMN ... TYPE bigint), then convert.';
    END IF;
    -- New ids above the old: checked against the clock first (no refusal below suggests a default
    -- that would go below), then, to run, against an id issued with the table locked.
    PERFORM snowflake_internal.convert_above(tbl, col, key.kind, false);
    -- With Citus: what its DDL propagation would refuse half-way, refused before anything runs.
    PERFORM snowflake_internal.convert_citus_check(tbl, col,
        ARRAY(SELECT t.relid FROM snowflake_internal.convert_targets(tbl, key.attnum) t WHERE t.widen ORDER BY t.n),
        ARRAY(SELECT t.attname FROM snowflake_internal.convert_targets(tbl, key.attnum) t WHERE t.widen ORDER BY t.n));
    IF NOT dry_run THEN
        -- Refuse before changing anything if this server cannot make ids, or would make them below
        -- the column's: no row comes in meanwhile.
        PERFORM snowflake_internal.as_owner('lock', tbl);
        PERFORM snowflake_internal.convert_above(tbl, col, key.kind, true);
    END IF;
    FOR i IN 1 .. cardinality(statements) LOOP
        IF dry_run THEN
            NULL;
        ELSIF actions[i] IS NULL THEN
            EXECUTE statements[i];
        ELSE
            PERFORM snowflake_internal.as_owner(actions[i], rels[i], cols[i]);
        END IF;
        RETURN NEXT statements[i];
    END LOOP;
END
$fn$;
CREATE FUNCTION snowflake_internal.convert_citus_check(tbl regclass, col name, rels oid[], cols name[]) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    d record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    FOR d IN EXECUTE $q$
        SELECT DISTINCT w.relid::regclass::text AS relid, w.attname, w.relid = $3 AS is_tbl
        FROM unnest($1, $2) AS w(relid, attname) JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid = w.relid
        WHERE p.partkey IS NOT NULL AND pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) = w.attname
        ORDER BY 3 DESC, 1$q$
        USING ARRAY[tbl::oid] || rels, ARRAY[col] || cols, tbl::oid
    LOOP
        RAISE EXCEPTION '%', CASE WHEN d.is_tbl
                THEN format('column %s.%I is the distribution column of the Citus table %s', tbl, col, d.relid)
                ELSE format('converting %s.%I would widen %s.%I, the distribution column of the Citus table %s',
                            tbl, col, d.relid, d.attname, d.relid) END
            USING ERRCODE = '0A000', HINT = format('Citus cannot change a distribution column''s type or default '
                '(cannot execute ALTER TABLE command involving partition column), and alter_distributed_table() cannot '
                'either. Undistribute the table, convert, and distribute it again, in one transaction: '
                'SELECT undistribute_table(%1$L); %2$s SELECT create_distributed_table(%1$L, %3$L); (undistribute_table '
                'moves its rows to the coordinator, and needs cascade_via_foreign_keys => true when foreign keys link it '
                'to other Citus tables: distribute those again too).',
                d.relid, format('SELECT snowflake_convert_column(%L, %L, dry_run => false);', tbl::text, col), d.attname);
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND a.attidentity <> '')
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = tbl) THEN
        RAISE EXCEPTION 'column %.% is an identity column of the Citus table %', tbl, quote_ident(col), tbl
            USING ERRCODE = '0A000', HINT = format('Citus cannot drop an identity (alter table command is currently '
                'unsupported), and undistribute_table() refuses a table with one. Create a new table with %1$I bigint '
                'DEFAULT snowflake_nextval() (CREATE TABLE new (LIKE %2$s INCLUDING ALL EXCLUDING IDENTITY), then ALTER '
                'COLUMN %1$I SET DEFAULT), distribute it as %2$s is, copy the rows (INSERT ... SELECT), drop %2$s and '
                'rename the new table, in one transaction; foreign keys and views on %2$s are yours to move.', col, tbl);
    END IF;
END
$fn$;
CREATE FUNCTION snowflake_internal.convert_candidates()
RETURNS TABLE (n int, relid oid, attname name, kind text)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE tables AS (
    SELECT c.oid FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relpersistence <> 't'
      AND s.nspname NOT IN ('pg_catalog', 'information_schema') AND s.nspname NOT LIKE 'pg\_%'
      AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                                                  AND d.deptype = 'e')),
cols AS (
    SELECT DISTINCT t.oid AS relid, a.attnum, a.attname, snowflake_internal.convert_kind(t.oid::regclass, a.attnum) AS kind
    FROM tables t JOIN pg_constraint con ON con.conrelid = t.oid AND con.contype IN ('p', 'u')
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY (con.conkey) AND NOT a.attisdropped),
-- depth: how many foreign keys up a table reaches (at most 64: a cycle stops there).
refs AS (SELECT DISTINCT con.conrelid AS child, con.confrelid AS parent FROM pg_constraint con
         WHERE con.contype = 'f' AND con.conparentid = 0 AND con.conrelid <> con.confrelid),
depth(relid, d) AS (
    SELECT oid, 0 FROM tables
    UNION
    SELECT r.child, depth.d + 1 FROM depth JOIN refs r ON r.parent = depth.relid WHERE depth.d < 64)
SELECT (row_number() OVER (ORDER BY (SELECT max(d) FROM depth WHERE depth.relid = c.relid),
                                    c.relid::regclass::text, c.attnum))::int, c.relid, c.attname, c.kind
FROM cols c WHERE c.kind IS NOT NULL
ORDER BY 1
$fn$;
CREATE FUNCTION snowflake_convert_all(dry_run boolean DEFAULT true, drop_sequence boolean DEFAULT true,
                                      recreate_views boolean DEFAULT false)
RETURNS TABLE (table_name regclass, column_name name, kind text, max_id bigint, converts boolean,
               error_code text, message text, hint text, statements text[])
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c record;
    planned jsonb := '[]';
    refused text[] := '{}';
    first_state text;
BEGIN
    FOR c IN SELECT * FROM snowflake_internal.convert_candidates() ORDER BY n LOOP
        table_name := c.relid::regclass;
        column_name := c.attname;
        kind := c.kind;
        max_id := NULL;
        error_code := NULL;
        message := NULL;
        hint := NULL;
        BEGIN
            max_id := (SELECT f.max_id FROM snowflake_internal.convert_floor(table_name, column_name, kind, false) f);
            statements := ARRAY(SELECT @extschema@.snowflake_convert_column(table_name, column_name, true,
                                                                            drop_sequence, recreate_views));
            converts := true;
        EXCEPTION WHEN others THEN
            GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, error_code = RETURNED_SQLSTATE, hint = PG_EXCEPTION_HINT;
            hint := nullif(hint, '');
            converts := false;
            statements := NULL;
            first_state := coalesce(first_state, error_code);
            refused := refused || format('%s.%I (%s): %s%s', table_name, column_name, error_code, message,
                                         coalesce(' HINT: ' || hint, ''));
        END;
        IF dry_run THEN
            RETURN NEXT;
        ELSE
            planned := planned || jsonb_build_object('relid', c.relid, 'attname', c.attname, 'kind', c.kind,
                                                     'max', max_id);
        END IF;
    END LOOP;
    IF dry_run THEN
        RETURN;
    END IF;
    IF cardinality(refused) > 0 THEN
        -- (With the first refusal's SQLSTATE: the Errors page has a row for this message.)
        RAISE EXCEPTION USING ERRCODE = first_state,
            MESSAGE = format('snowflake_convert_all(): %s of %s key columns cannot be converted, so none is',
                             cardinality(refused), jsonb_array_length(planned)),
            DETAIL = array_to_string(refused, E'\n'),
                  HINT = 'Fix each as its hint says (or convert the others one at a time with snowflake_convert_column()), '
                         'then run snowflake_convert_all() again; its dry run shows every verdict.';
    END IF;
    FOR c IN SELECT * FROM jsonb_array_elements(planned) p(v) LOOP
        table_name := (c.v ->> 'relid')::oid::regclass;
        column_name := c.v ->> 'attname';
        kind := c.v ->> 'kind';
        max_id := (c.v ->> 'max')::bigint;
        converts := true;
        error_code := NULL;
        message := NULL;
        hint := NULL;
        statements := ARRAY(SELECT @extschema@.snowflake_convert_column(table_name, column_name, false,
                                                                        drop_sequence, recreate_views));
        RETURN NEXT;
    END LOOP;
END
$fn$;
/* </end connected objects> */

/* <begin connected objects> */
CREATE SCHEMA IF NOT EXISTS snowflake_internal;
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION snowflake_internal."peer_deadline"(
	"ms" INT
) RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'peer_deadline_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION snowflake_internal."peer_conninfo"(
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
AS 'MODULE_PATHNAME', 'peer_conninfo_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
CREATE  FUNCTION snowflake_internal."dblink_poll"(
	"link" TEXT,
	"timeout_ms" INT
) RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'dblink_poll_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
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
GRANT USAGE ON SCHEMA snowflake_internal TO PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_to_public(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_from_public(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_try_from_public(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_check_peers(text[], double precision, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_internal.peer_deadline(integer) FROM PUBLIC;
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
/* </end connected objects> */

