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

-- snowflake_internal.convert_view_ddl(v): the DDL that creates the view v again as it is, run by the
-- caller of the conversion as itself: its definition and options; the privileges its owner had
-- revoked from itself, revoked again; its privileges (on it and its columns), granted by the caller
-- while it owns the new view (GRANT cannot name another grantor: every grant's grantor becomes the
-- owner when the view is given to it, as a privilege granted by a role that held it WITH GRANT
-- OPTION is granted again by the owner); its comments; and last, the view given to its owner (ALTER
-- VIEW ... OWNER TO, which moves the caller's grants and its own privileges to the owner: a caller
-- who may SET ROLE to the owner but has none of its privileges, INHERIT FALSE, could not grant
-- once the owner has it).
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
