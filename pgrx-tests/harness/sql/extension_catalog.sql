-- What the catalog says about the installed pg_snowflake, one line per fact, sorted: the extension
-- (version, schema, relocatable, configuration tables), every member object, and for each
-- function its signature, result, kind, volatility, strictness, parallel safety, security,
-- leakproofness, cost, rows, language, settings (proconfig), privileges (ACL), comment, symbol
-- (C) or body (md5, other languages), library and argument defaults; for each type its kind,
-- attributes, privileges and comment. Two databases whose outputs are equal have the same
-- extension. Used by the upgrade, dump/restore and pg_upgrade scenarios (psql -At -f). Names are
-- printed qualified whatever the database's search_path (a database made from a template has none).
SET search_path = pg_catalog;
WITH ext AS (
    SELECT * FROM pg_extension WHERE extname = 'pg_snowflake'
), members AS (
    SELECT d.classid, d.objid
    FROM pg_depend d JOIN ext ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
    WHERE d.deptype = 'e'
)
SELECT format('extension %s | version %s | schema %s | relocatable %s | config %s %s',
              extname, extversion, extnamespace::regnamespace, extrelocatable, extconfig, extcondition)
FROM ext
UNION ALL
SELECT 'member ' || pg_describe_object(classid, objid, 0) FROM members
UNION ALL
SELECT format('function %s(%s) returns %s | kind %s | volatility %s | strict %s | parallel %s | security definer %s | leakproof %s | cost %s | rows %s | language %s | config %s | acl %s | comment %s | %s %s | library %s | defaults %s',
              p.pronamespace::regnamespace || '.' || p.proname, pg_get_function_identity_arguments(p.oid),
              pg_get_function_result(p.oid), p.prokind, p.provolatile, p.proisstrict, p.proparallel,
              p.prosecdef, p.proleakproof, p.procost, p.prorows, l.lanname, p.proconfig, p.proacl,
              obj_description(p.oid, 'pg_proc'),
              CASE WHEN l.lanname = 'c' THEN 'symbol' ELSE 'body md5' END,
              CASE WHEN l.lanname = 'c' THEN p.prosrc ELSE md5(p.prosrc) END,
              p.probin, pg_get_expr(p.proargdefaults, 0))
FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
JOIN pg_language l ON l.oid = p.prolang
UNION ALL
SELECT format('type %s | kind %s | attributes (%s) | acl %s | comment %s',
              t.oid::regtype, t.typtype,
              (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
               FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped),
              t.typacl, obj_description(t.oid, 'pg_type'))
FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
ORDER BY 1;
