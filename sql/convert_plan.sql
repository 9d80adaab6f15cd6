-- The plan of a conversion (a part of snowflake_convert_column(), sql/convert_column.sql): every
-- statement it runs, in order, with the relation it touches and the role it runs as, and the notes
-- it prints among them (lines of "-- ", run as nothing). The dry run returns it; the real run runs it.

-- snowflake_internal.convert_statements(tbl, col, keynum, identity, seq, drop_sequence): every
-- statement of the conversion, in order (n), with the relation it touches, the role it runs as
-- and how: an action of snowflake_internal.as_owner() on that relation (and column), run as its
-- owner, which builds the statement itself (shown here by snowflake_internal.owner_statement(),
-- the same builder); or, with no action, DDL that the caller runs as itself (the views created
-- again, given back to their owners, their privileges and comments: text made here from the
-- catalog, which parses a view's definition and runs none of its functions). In order: the key's
-- default or identity dropped, its sequence dropped (or let go), the views dropped deepest first,
-- the columns widened, the key's new default, EXECUTE on snowflake_nextval() granted to the roles
-- that insert and lack it (convert_inserters: the caller grants it), the views created shallowest
-- first; then the notes: the subscribers' side of the logical replication that publishes a widened
-- table, and pgEdge defaults left on other columns (pgEdge's ids are unique per sequence, this
-- server's across it: while both defaults are in use, equal ids can occur across tables).
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
    SELECT 6, 0, tbl, NULL, NULL, format('GRANT EXECUTE ON FUNCTION %s TO %s', '@extschema@.snowflake_nextval()'::regprocedure,
                                         string_agg(i.rolname, ', ' ORDER BY i.rolname))
    FROM snowflake_internal.convert_inserters(tbl, keynum) i WHERE i.role <> 0 HAVING count(*) > 0
    UNION ALL
    -- (Created again by the caller and given back to their owner, as before the conversion: parsing
    -- a view's definition runs no code of its functions, and its owner may have no CREATE
    -- privilege on its schema.)
    SELECT 7, v.n * 1000000 + x.k, v.view, NULL, NULL, x.d
    FROM snowflake_internal.convert_views(tbl, keynum) v,
         LATERAL snowflake_internal.convert_view_ddl(v.view::regclass) WITH ORDINALITY AS x(d, k)
    UNION ALL
    SELECT 8, p.n, tbl, NULL, NULL,
           format('-- logical replication publishes %s: on every subscriber, before it receives a new id: ALTER TABLE %s '
                  'ALTER COLUMN %I TYPE bigint', p.what, p.relid::regclass, p.attname)
    FROM (SELECT t.n, t.relid, t.attname,
                 string_agg(DISTINCT format('%s (publication %I)', w.relid::regclass, pt.pubname), ', ') AS what
          FROM snowflake_internal.convert_targets(tbl, keynum) t
          JOIN snowflake_internal.convert_reach(tbl, keynum) w ON w.n = t.n
          JOIN pg_class wc ON wc.oid = w.relid
          JOIN pg_publication_tables pt ON pt.schemaname = wc.relnamespace::regnamespace::text AND pt.tablename = wc.relname
          WHERE t.widen GROUP BY t.n, t.relid, t.attname) p
    UNION ALL
    SELECT 9, 0, tbl, NULL, NULL,
           format('-- pgEdge''s snowflake.nextval() stays the default of %s: while it does, their new ids and those of %s.%I '
                  'may be equal (pgEdge''s ids are unique per sequence, pg_snowflake''s across the server); ids stay '
                  'unique within each table. For ids unique across tables, convert them all at once: '
                  'snowflake_convert_all().', string_agg(e.what, ', ' ORDER BY e.what), tbl, col)
    FROM (SELECT format('%s.%I', ad.adrelid::regclass, a.attname) AS what
          FROM pg_attrdef ad JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
          JOIN pg_class ac ON ac.oid = ad.adrelid
          WHERE a.attinhcount = 0 AND NOT ac.relispartition AND NOT (ad.adrelid = tbl AND ad.adnum = keynum)
            AND pg_get_expr(ad.adbin, ad.adrelid) LIKE 'snowflake.nextval(%'
            AND snowflake_internal.convert_kind(ad.adrelid::regclass, ad.adnum) = 'pgedge') e
    HAVING count(*) > 0) s
JOIN pg_class c ON c.oid = s.relid
ORDER BY 1
$fn$;
