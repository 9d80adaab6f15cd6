-- snowflake_convert_column(tbl, col, dry_run, drop_sequence, recreate_views, subscribers_widened): turns a
-- serial, bigserial, identity (BY DEFAULT or ALWAYS), DEFAULT nextval(...) or pgEdge snowflake's
-- DEFAULT snowflake.nextval(...) key column into bigint DEFAULT snowflake_nextval(), widening
-- integer/smallint to bigint together with every column that will hold its values: every
-- foreign-key column that references it, or references such a column, at any depth, on the table
-- or on a partition or child of it (convert_closure). A partitioned table is converted from its
-- root: each ALTER TABLE on it recurses into every partition (and into the children of a table
-- inherited from). Returns the plan, in order (its statements, and notes as lines of "-- ");
-- runs it unless dry_run (the default). It runs inside the caller's transaction: an error anywhere
-- leaves nothing changed. STRICT: NULL in, no rows out.
-- Each ALTER TABLE takes an ACCESS EXCLUSIVE lock, and widening a column rewrites its table (every
-- partition; time in proportion to their size). Views that use a widened column are refused
-- (2BP01) or, with recreate_views, dropped and created again from pg_get_viewdef with their
-- options, owner, privileges and comments.
-- The real run locks the table first, then reads everything as it is then (READ COMMITTED only:
-- convert_isolation refuses the others): the largest value, and what references the column; it
-- locks what holds the key's values and plans again until nothing new came in (a foreign key added
-- while it waited for its lock is widened too).
-- How it runs: the caller's own rights read only the catalogs. Every statement that touches a
-- relation (the largest value's read, the locks, the CHECKs evaluated at a new id, each ALTER TABLE,
-- the sequence, the views dropped) is one action of snowflake_internal.as_owner()
-- (src/postgres/sql_api/as_owner.rs), named with the relation and column: it builds the statement
-- itself and runs it as the owner of that relation in a security-restricted operation, with a safe
-- search_path and its settings undone after it, as VACUUM, ANALYZE, CREATE INDEX and REFRESH
-- MATERIALIZED VIEW run table code (the views are created again by the caller, as itself, and given
-- back to their owners; the caller grants EXECUTE on snowflake_nextval() to the roles that insert).
-- Code reached from a table (casts, operators, index expressions, constraints, domains, defaults,
-- triggers, policies) so runs with its owner's rights, never the caller's, and cannot SET ROLE or
-- RESET ROLE; the caller must be able to become every owner it runs as (SET ROLE: the owner itself,
-- a member whose grant allows SET, or a superuser; the owner's privileges alone, INHERIT, are not
-- enough), so a superuser converts the tables of many owners in one call, and nobody gains a right
-- by converting.
-- What it cannot do safely it refuses, naming the object, before changing anything
-- (sql/convert_refusals.sql, sql/convert_views.sql): the dry run refuses what the real run would
-- fail on. A key column may be part of a composite key ((tenant_id, id), (id, region)): only it
-- changes, and of a foreign key that references the composite key only its column that matches it.
-- New ids always above the old (sql/convert_floor.sql): it refuses (22003) a column whose largest
-- value is not below the first id this server would give it, with the fix in the hint; and (23514)
-- one whose new ids a CHECK constraint would refuse.
-- snowflake_convert_all(dry_run, drop_sequence, recreate_views, subscribers_widened) converts every
-- such key column of the database in one transaction, referenced tables first, or refuses them all
-- together; its dry run is a plan: a row per column, with its verdict and statements.
--
-- Its helpers live in the schema snowflake_internal (not in the user's schema), by concern: what the
-- column is (convert_kind, convert_key, here), what the conversion reaches (sql/convert_reach.sql),
-- the views it recreates (sql/convert_views.sql), what it refuses (sql/convert_refusals.sql), new ids
-- above the old (sql/convert_floor.sql), and its plan (sql/convert_plan.sql); convert_candidates,
-- here, lists the columns snowflake_convert_all converts, in order.

-- snowflake_internal.convert_kind(tbl, keynum): what gives the column its values: 'identity', 'serial' (a
-- nextval() default on a sequence the column owns), 'nextval' (on another sequence), 'pgedge'
-- (pgEdge snowflake's DEFAULT snowflake.nextval(...), as its extension writes it, with or without
-- a sequence), or NULL (none of these).
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

-- snowflake_internal.convert_key(tbl, col): the key column's number, type, identity and kind
-- (snowflake_convert_kind), or the error that says why this table or column cannot be converted.
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
    -- (A domain over one of them too: over bigint it is kept, over a smaller one refused with the
    -- other columns of domains, convert_blockers.)
    IF snowflake_internal.convert_base_type(atttypid) NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'column % is of type %, not an integer', target, atttypid
            USING ERRCODE = '42804', HINT = 'Only smallint, integer and bigint key columns (or of a domain over them: '
                  'serial, bigserial, identity, DEFAULT nextval) can become snowflake ids.';
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

-- snowflake_convert_column: see the top of this file.
CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, dry_run boolean DEFAULT true,
                                         drop_sequence boolean DEFAULT true, recreate_views boolean DEFAULT false,
                                         subscribers_widened boolean DEFAULT false)
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
    locked oid[];
    wanted record;
    more boolean;
    first_id bigint;
    widened text;
BEGIN
    PERFORM snowflake_internal.convert_isolation();
    locked := '{}';
    -- Planned and checked as the catalogs are; to run, planned and checked again once what it
    -- reaches is locked (below), until nothing new came in meanwhile.
    LOOP
        SELECT * INTO key FROM snowflake_internal.convert_key(tbl, col);
        FOR b IN SELECT * FROM snowflake_internal.convert_blockers(tbl, col, key.attnum, recreate_views,
                                                                   subscribers_widened) LOOP
            RAISE EXCEPTION USING ERRCODE = b.state, MESSAGE = b.message, HINT = b.hint;
        END LOOP;
        -- A sequence it would drop (or that DROP IDENTITY drops) that something else still uses:
        -- refused, rather than half-way.
        seq := pg_get_serial_sequence(tbl::text, col);
        IF seq IS NOT NULL AND (drop_sequence OR key.attidentity <> '') THEN
            users := snowflake_internal.convert_sequence_users(tbl, key.attnum, seq::regclass);
            IF users IS NOT NULL THEN
                RAISE EXCEPTION 'sequence % of %.% is used by other objects too: %', seq, tbl, quote_ident(col), users
                    USING ERRCODE = '2BP01', HINT = CASE WHEN key.attidentity <> ''
                          THEN 'An identity''s sequence goes with it (DROP IDENTITY): make them use another sequence, or '
                               'drop them, or convert those columns first; then convert.'
                          ELSE 'Keep it with drop_sequence => false (no column owns it then), or make them use another '
                               'sequence, or convert those columns first.' END;
            END IF;
        END IF;
        -- Every statement, planned in full before the first runs (the views are read before they
        -- are dropped); each runs as the owner of what it touches, and so do the locks and the
        -- CHECKs evaluated at a new id: the caller must be able to become each owner (SET ROLE),
        -- the one rule of snowflake_internal.as_owner(), asked here first
        -- (snowflake_internal.missing_grant()) so that a refusal comes before anything runs.
        SELECT array_agg(s.relid ORDER BY s.n), array_agg(s.action ORDER BY s.n), array_agg(s.attname ORDER BY s.n),
               array_agg(s.statement ORDER BY s.n)
        INTO rels, actions, cols, statements
        FROM snowflake_internal.convert_statements(tbl, col, key.attnum, key.attidentity <> '', seq::regclass,
                                                   drop_sequence) s;
        SELECT string_agg(DISTINCT format('%s (owned by %I)', o.relid::regclass, pg_get_userbyid(o.owner)), ', ')
                   FILTER (WHERE snowflake_internal.missing_grant(o.owner) IS NOT NULL),
               string_agg(DISTINCT snowflake_internal.missing_grant(o.owner), '; ')
        INTO foreign_owners, grants
        FROM (SELECT s.relid, s.owner FROM snowflake_internal.convert_statements(tbl, col, key.attnum,
                                                 key.attidentity <> '', seq::regclass, drop_sequence) s
              WHERE s.action IS NOT NULL
              UNION
              SELECT h.relid, c.relowner FROM snowflake_internal.convert_holders(tbl, key.attnum) h
              JOIN pg_class c ON c.oid = h.relid WHERE h.level = 0 AND (h.widen OR h.referenceable)
              UNION
              SELECT k.relid, c.relowner FROM snowflake_internal.convert_checked(tbl, key.attnum) k
              JOIN pg_class c ON c.oid = k.relid) o;
        IF foreign_owners IS NOT NULL THEN
            RAISE EXCEPTION 'permission denied: converting %.% runs statements as owners that % may not become (SET ROLE): %',
                    tbl, quote_ident(col), session_user, foreign_owners
                USING ERRCODE = '42501', HINT = 'Each statement runs as the owner of what it alters (restricted, as VACUUM '
                      'and ANALYZE run table code), only for a caller that could become that owner itself (SET ROLE; its '
                      'privileges alone, INHERIT, are not enough): convert as a role that may become them all (a superuser '
                      'may), or ' || grants || ', or have the owners of the other referencing tables widen their columns '
                      'first (ALTER TABLE ... ALTER COLUMN ... TYPE bigint), then convert.';
        END IF;
        EXIT WHEN dry_run;
        -- Lock the table (no row comes in, no foreign key is added to it, until the transaction ends)
        -- and what will hold the key's values: the tables it widens (ACCESS EXCLUSIVE, as their
        -- ALTER TABLE will), those it does not but a foreign key could reference (SHARE UPDATE
        -- EXCLUSIVE: read and written meanwhile, but no foreign key added to them). Then plan and
        -- check again, as the catalogs are once locked (READ COMMITTED: convert_isolation): a
        -- foreign key added while it waited brings new columns to lock; until nothing new comes.
        more := false;
        FOR wanted IN SELECT h.relid, bool_or(h.widen) OR h.relid = tbl AS exclusive
                      FROM snowflake_internal.convert_holders(tbl, key.attnum) h
                      WHERE h.level = 0 AND (h.widen OR h.referenceable OR h.relid = tbl) AND h.relid <> ALL (locked)
                      GROUP BY h.relid ORDER BY h.relid <> tbl, min(h.depth), h.relid::regclass::text LOOP
            PERFORM snowflake_internal.as_owner(CASE WHEN wanted.exclusive THEN 'lock' ELSE 'hold' END, wanted.relid);
            locked := locked || wanted.relid;
            more := true;
        END LOOP;
        EXIT WHEN NOT more;
    END LOOP;
    -- New ids above the old: checked against the clock first (no refusal below suggests a default
    -- that would go below), then, to run, against an id issued with the table locked; and each
    -- CHECK of a column that will hold them evaluated at that first id.
    first_id := snowflake_internal.convert_above(tbl, col, key.kind, false);
    -- With Citus: what its DDL propagation would refuse half-way, refused before anything runs.
    PERFORM snowflake_internal.convert_citus_check(tbl, col,
        ARRAY(SELECT t.relid FROM snowflake_internal.convert_targets(tbl, key.attnum) t WHERE t.widen ORDER BY t.n),
        ARRAY(SELECT t.attname FROM snowflake_internal.convert_targets(tbl, key.attnum) t WHERE t.widen ORDER BY t.n));
    IF NOT dry_run THEN
        -- Refuse before changing anything if this server cannot make ids, or would make them below
        -- the column's: no row comes in meanwhile.
        first_id := snowflake_internal.convert_above(tbl, col, key.kind, true);
    END IF;
    PERFORM snowflake_internal.convert_checks(tbl, key.attnum, first_id);
    widened := (SELECT string_agg(format('%s.%I', t.relid::regclass, t.attname), ', ' ORDER BY t.n)
                FROM snowflake_internal.convert_targets(tbl, key.attnum) t WHERE t.widen);
    FOR i IN 1 .. cardinality(statements) LOOP
        IF dry_run OR left(statements[i], 3) = '-- ' THEN
            NULL;
        ELSIF actions[i] IS NULL THEN
            EXECUTE statements[i];
        ELSE
            PERFORM snowflake_internal.as_owner(actions[i], rels[i], cols[i]);
        END IF;
        RETURN NEXT statements[i];
    END LOOP;
    -- Sessions that prepared statements or compiled PL/pgSQL before the commit keep the old types.
    IF NOT dry_run AND widened IS NOT NULL THEN
        RAISE NOTICE 'converted %.%; these columns are bigint now: %', tbl, quote_ident(col), widened
            USING HINT = 'Sessions that prepared statements using them before this transaction commits fail ("cached '
                  'plan must not change result type") until they prepare them again, and PL/pgSQL functions they '
                  'compiled keep the old types (%TYPE, row variables) until they end: reconnect them (restart the '
                  'application''s pool), or DEALLOCATE the prepared statements.';
    END IF;
END
$fn$;

-- snowflake_internal.convert_candidates(): the key columns snowflake_convert_all() converts: every column
-- that is in a primary key or unique constraint and is a serial, identity, DEFAULT nextval() or
-- pgEdge DEFAULT snowflake.nextval() column (snowflake_convert_kind), of an ordinary or
-- partitioned table that is not a partition, a child of another table, temporary, of an extension
-- or in a system schema; in the order they are converted (n): a table after every table its
-- foreign keys reference (in a cycle of foreign keys, by name), then by name and column number.
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

-- snowflake_convert_all(dry_run, drop_sequence, recreate_views, subscribers_widened):
-- snowflake_convert_column() on every column of snowflake_internal.convert_candidates(), in its order, in the caller's
-- transaction. Returns a row per column: what gave it its values (kind), its largest value, its
-- verdict (converts, or the SQLSTATE, message and hint of its refusal) and its statements. A dry
-- run (the default) is a plan, never an error: every column is tried as a dry run and gets its
-- row. A real run is all or nothing: if any column is refused, it raises one error listing every
-- refusal (with the SQLSTATE of the first) and nothing is converted.
CREATE FUNCTION snowflake_convert_all(dry_run boolean DEFAULT true, drop_sequence boolean DEFAULT true,
                                      recreate_views boolean DEFAULT false, subscribers_widened boolean DEFAULT false)
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
            -- (Without the note on pgEdge defaults left on other columns: this converts them all.)
            statements := ARRAY(SELECT s FROM @extschema@.snowflake_convert_column(table_name, column_name, true,
                                                                                   drop_sequence, recreate_views,
                                                                                   subscribers_widened) s
                                WHERE s NOT LIKE '-- pgEdge''s snowflake.nextval() stays %');
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
        statements := ARRAY(SELECT s FROM @extschema@.snowflake_convert_column(table_name, column_name, false,
                                                                               drop_sequence, recreate_views,
                                                                               subscribers_widened) s
                            WHERE s NOT LIKE '-- pgEdge''s snowflake.nextval() stays %');
        RETURN NEXT;
    END LOOP;
END
$fn$;
