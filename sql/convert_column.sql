-- snowflake_convert_column(tbl, col, dry_run, drop_sequence): turns a serial, bigserial, identity
-- (BY DEFAULT or ALWAYS) or DEFAULT nextval(...) key column into bigint DEFAULT snowflake_nextval(),
-- widening integer/smallint to bigint together with every single-column foreign key that
-- references it. Returns the DDL, in order; runs it unless dry_run (the default). It runs inside
-- the caller's transaction: an error anywhere leaves nothing changed. STRICT: NULL in, no rows out. Each ALTER TABLE takes an
-- ACCESS EXCLUSIVE lock, and widening a column rewrites its table (time in proportion to its size).
-- What it cannot do safely it refuses, naming the object: partitioned or temporary tables, tables
-- the user does not own, composite keys, dependent views, multi-column foreign keys.
CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, dry_run boolean DEFAULT true, drop_sequence boolean DEFAULT true)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    ext_schema name;
    rel record;
    att record;
    seq text;
    default_expr text;
    fk record;
    views text;
    ddl text[] := '{}';
    stmt text;
    target text := tbl::text || '.' || quote_ident(col);
BEGIN
    SELECT n.nspname INTO ext_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_snowflake';
    SELECT c.relkind, c.relpersistence, c.relowner INTO rel FROM pg_class c WHERE c.oid = tbl;
    IF rel.relkind = 'p' OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = tbl) THEN
        RAISE EXCEPTION 'table % is partitioned or a partition: snowflake_convert_column() does not convert partitioned tables yet', tbl
            USING ERRCODE = '0A000', HINT = 'Convert the parent by hand: ALTER TABLE ... ALTER COLUMN ... TYPE bigint on the parent (it recurses), then SET DEFAULT snowflake_nextval().';
    END IF;
    IF rel.relkind <> 'r' THEN
        RAISE EXCEPTION '% is not a table', tbl
            USING ERRCODE = '42809', HINT = 'Name an ordinary table whose key column has a sequence default.';
    END IF;
    IF rel.relpersistence = 't' THEN
        RAISE EXCEPTION 'table % is temporary', tbl
            USING ERRCODE = '0A000', HINT = 'A temporary table lives for one session: give it DEFAULT snowflake_nextval() when you create it.';
    END IF;
    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated INTO att
    FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % does not exist', target
            USING ERRCODE = '42703', HINT = 'Name the key column of the table, as \d shows it.';
    END IF;
    IF att.atttypid NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'column % is of type %, not an integer', target, att.atttypid::regtype
            USING ERRCODE = '42804', HINT = 'Only smallint, integer and bigint key columns (serial, bigserial, identity, DEFAULT nextval) can become snowflake ids.';
    END IF;
    default_expr := pg_get_expr((SELECT d.adbin FROM pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = att.attnum), tbl);
    IF att.attidentity = '' AND (default_expr IS NULL OR default_expr NOT LIKE 'nextval(%') THEN
        RAISE EXCEPTION 'column % is not a serial, identity or DEFAULT nextval() column (its default: %)', target, coalesce(default_expr, 'none')
            USING ERRCODE = '42804', HINT = 'To give it snowflake ids anyway: ALTER TABLE ... ALTER COLUMN ... SET DEFAULT snowflake_nextval().';
    END IF;
    -- The tables it would alter: this one and every table whose foreign key references the column.
    FOR fk IN
        SELECT con.conname, con.conrelid, con.conkey, con.confkey FROM pg_constraint con
        WHERE con.contype = 'f' AND con.confrelid = tbl AND att.attnum = ANY (con.confkey)
    LOOP
        IF cardinality(fk.confkey) > 1 THEN
            RAISE EXCEPTION 'foreign key % on % references % in a composite key', fk.conname, fk.conrelid::regclass, target
                USING ERRCODE = '0A000', HINT = 'Only a single-column key can be converted.';
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conrelid = tbl AND con.contype IN ('p', 'u')
               AND att.attnum = ANY (con.conkey) AND cardinality(con.conkey) > 1) THEN
        RAISE EXCEPTION 'column % is part of a composite key', target
            USING ERRCODE = '0A000', HINT = 'Only a single-column key can be converted.';
    END IF;
    FOR rel IN
        SELECT tbl AS relid, att.attnum AS attnum, att.atttypid AS typ
        UNION ALL
        SELECT con.conrelid, con.conkey[1], a.atttypid FROM pg_constraint con
        JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
        WHERE con.contype = 'f' AND con.confrelid = tbl AND con.confkey = ARRAY[att.attnum]
    LOOP
        IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = rel.relid), 'USAGE') THEN
            RAISE EXCEPTION 'permission denied: % is not owned by %', rel.relid::regclass, current_user
                USING ERRCODE = '42501', HINT = 'Run the conversion as the owner of every table it alters (the table and those whose foreign keys reference it).';
        END IF;
        IF (SELECT relkind FROM pg_class WHERE oid = rel.relid) <> 'r' THEN
            RAISE EXCEPTION 'table % (with a foreign key to %) is partitioned', rel.relid::regclass, target
                USING ERRCODE = '0A000', HINT = 'Widen its column by hand first: ALTER TABLE ... ALTER COLUMN ... TYPE bigint.';
        END IF;
        SELECT string_agg(DISTINCT v.ev_class::regclass::text, ', ') INTO views
        FROM pg_depend d JOIN pg_rewrite v ON v.oid = d.objid
        WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
          AND d.refobjid = rel.relid AND d.refobjsubid = rel.attnum AND v.ev_class <> rel.relid;
        IF views IS NOT NULL AND rel.typ <> 'bigint'::regtype THEN
            RAISE EXCEPTION 'column %.% is used by views: %', rel.relid::regclass, quote_ident((SELECT attname FROM pg_attribute WHERE attrelid = rel.relid AND attnum = rel.attnum)), views
                USING ERRCODE = '2BP01', HINT = 'Its type cannot change under a view: save the views'' definitions (pg_get_viewdef), drop them, convert, and create them again, in one transaction.';
        END IF;
        IF rel.typ <> 'bigint'::regtype THEN
            ddl := ddl || format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint',
                                 rel.relid::regclass, (SELECT attname FROM pg_attribute WHERE attrelid = rel.relid AND attnum = rel.attnum));
        END IF;
    END LOOP;
    seq := pg_get_serial_sequence(tbl::text, col);
    IF att.attidentity <> '' THEN
        -- The identity's own sequence goes with it.
        ddl := format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col) || ddl;
    ELSE
        ddl := format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col) || ddl;
        IF seq IS NOT NULL THEN
            ddl := ddl || CASE WHEN drop_sequence THEN format('DROP SEQUENCE %s', seq)
                               ELSE format('ALTER SEQUENCE %s OWNED BY NONE', seq) END;
        END IF;
    END IF;
    ddl := ddl || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval()', tbl, col, ext_schema);
    IF NOT dry_run THEN
        -- Refuse before changing anything if this server cannot make ids.
        EXECUTE format('SELECT %I.snowflake_layout()', ext_schema);
        FOREACH stmt IN ARRAY ddl LOOP
            EXECUTE stmt;
        END LOOP;
    END IF;
    RETURN QUERY SELECT unnest(ddl);
END
$fn$;
