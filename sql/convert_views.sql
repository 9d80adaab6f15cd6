-- The views a conversion drops and creates again (a part of snowflake_convert_column(),
-- sql/convert_column.sql): the views that use a column it widens and the views on them, what stops
-- them from being dropped and created again, and the DDL that creates each again as it was.

-- snowflake_internal.convert_views(tbl, keynum): the views that use a widened column, and the views on
-- those views, in the order they are created again (n; dropped in the reverse order): by depth.
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

-- snowflake_internal.convert_view_blockers(tbl, col, keynum, recreate_views): the refusals about views, as
-- rows (n: 0 for all of them, else the view's; k: the check) for snowflake_convert_blockers.
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

-- snowflake_internal.convert_view_ddl(v): the DDL that creates the view v again as it is: its definition
-- and options, its owner, its privileges (on it and its columns; the owner's own are those of any
-- new view; GRANT cannot name another grantor: a privilege granted by a role that held it WITH
-- GRANT OPTION is granted again by the owner), its comments.
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
    SELECT 2, 0, '', false, format('ALTER VIEW %s OWNER TO %I', v, pg_get_userbyid(c.relowner))
    FROM pg_class c WHERE c.oid = v
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
    FROM pg_attribute a WHERE a.attrelid = v AND a.attnum > 0 AND col_description(v, a.attnum) IS NOT NULL) d
ORDER BY k, attnum, grantee, grantable
$fn$;
