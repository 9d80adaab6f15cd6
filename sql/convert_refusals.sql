-- What a conversion refuses, before it changes anything (a part of snowflake_convert_column(),
-- sql/convert_column.sql): every reason the real run would fail half-way, or would break a promise
-- (new ids in every column that holds them, every role that inserted still inserting, subscribers
-- that keep up), found in the catalogs, each with its SQLSTATE, message and hint; the dry run
-- refuses the same. Catalog reads only.

-- snowflake_internal.convert_isolation(): refuses (25000) a conversion in a REPEATABLE READ or
-- SERIALIZABLE transaction. Its snapshot is the transaction's first: the largest value and the
-- foreign keys that reference the column, read once the table is locked, would be those of that
-- moment, not of the lock's (a row committed since then, with an id ahead, would be below the new
-- ids; a foreign key added since then would keep its integer column).
CREATE FUNCTION snowflake_internal.convert_isolation() RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
        RAISE EXCEPTION 'a conversion cannot run in a % transaction: its snapshot hides the rows and foreign keys '
                        'committed since the transaction began', upper(current_setting('transaction_isolation'))
            USING ERRCODE = '25000', HINT = 'The conversion reads the column''s largest value and what references it '
                  'once the table is locked, as they are then, which only READ COMMITTED sees: convert in a READ '
                  'COMMITTED transaction (BEGIN ISOLATION LEVEL READ COMMITTED; ... COMMIT;), or SET '
                  'default_transaction_isolation = ''read committed'' in the session first.';
    END IF;
END
$fn$;

-- snowflake_internal.convert_inserters(tbl, keynum): the roles that insert into tbl and would be refused
-- its new default (they lack EXECUTE on snowflake_nextval(), which is revoked from PUBLIC): its
-- owner, and the roles granted INSERT on it or on a column of it, on a partition or child of it, or
-- on a view on them (the default runs with the inserting role's rights), but superusers; PUBLIC
-- (role 0) when PUBLIC may insert and may not execute it.
CREATE FUNCTION snowflake_internal.convert_inserters(tbl regclass, keynum int2)
RETURNS TABLE (role oid, rolname text)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH rels AS (SELECT r.relid FROM snowflake_internal.convert_reach(tbl, keynum) r WHERE r.n = 1),
-- (A view's grantees insert through it when its owner may insert into the table; its owner itself
-- only as a grantee of the table.)
views AS (SELECT DISTINCT w.ev_class AS relid, v.relowner AS owner FROM rels
          JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = rels.relid
                          AND d.classid = 'pg_rewrite'::regclass
          JOIN pg_rewrite w ON w.oid = d.objid JOIN pg_class v ON v.oid = w.ev_class AND v.relkind = 'v'
          WHERE has_table_privilege(v.relowner, rels.relid, 'INSERT')),
targets AS (SELECT relid, NULL::oid AS owner FROM rels UNION SELECT relid, owner FROM views),
roles AS (
    SELECT c.relowner AS role FROM rels JOIN pg_class c ON c.oid = rels.relid
    UNION
    SELECT a.grantee FROM targets t JOIN pg_class c ON c.oid = t.relid, aclexplode(c.relacl) a
    WHERE a.privilege_type = 'INSERT' AND a.grantee IS DISTINCT FROM t.owner
    UNION
    SELECT a.grantee FROM targets t JOIN pg_attribute at ON at.attrelid = t.relid AND at.attnum > 0,
         aclexplode(at.attacl) a
    WHERE a.privilege_type = 'INSERT' AND a.grantee IS DISTINCT FROM t.owner)
SELECT r.role, CASE WHEN r.role = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r.role)) END
FROM roles r
WHERE CASE WHEN r.role = 0
           THEN NOT EXISTS (SELECT 1 FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                            WHERE p.oid = '@extschema@.snowflake_nextval()'::regprocedure AND a.grantee = 0
                              AND a.privilege_type = 'EXECUTE')
           ELSE NOT (SELECT o.rolsuper FROM pg_roles o WHERE o.oid = r.role)
                AND NOT has_function_privilege(r.role, '@extschema@.snowflake_nextval()'::regprocedure, 'EXECUTE') END
ORDER BY 2
$fn$;

-- snowflake_internal.convert_sequence_users(tbl, keynum, seq): what uses the sequence seq of tbl's key
-- but the key's own default (on tbl and on its partitions and children): other columns' defaults,
-- views, functions' BEGIN ATOMIC bodies; NULL when nothing does. Dropping the sequence (DROP
-- SEQUENCE, or DROP IDENTITY for an identity's) would fail on them.
CREATE FUNCTION snowflake_internal.convert_sequence_users(tbl regclass, keynum int2, seq regclass) RETURNS text
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT string_agg(u.what, ', ' ORDER BY u.what) FROM (
    SELECT DISTINCT CASE WHEN d.classid = 'pg_attrdef'::regclass
                         THEN format('the default of %s.%I', ad.adrelid::regclass, a.attname)
                         ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END AS what
    FROM pg_depend d
    LEFT JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
    LEFT JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
    WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = seq AND d.deptype = 'n'
      AND NOT (d.classid = 'pg_attrdef'::regclass
               AND EXISTS (SELECT 1 FROM snowflake_internal.convert_reach(tbl, keynum) r
                           WHERE r.n = 1 AND r.relid = ad.adrelid AND r.attnum = ad.adnum))) u
$fn$;

-- snowflake_internal.convert_blockers(tbl, col, keynum, recreate_views, subscribers_widened): every reason
-- to refuse the conversion, as rows (SQLSTATE, message, hint) in the order they are checked; none: it
-- may run.
CREATE FUNCTION snowflake_internal.convert_blockers(tbl regclass, col name, keynum int2, recreate_views boolean,
                                                    subscribers_widened boolean)
RETURNS TABLE (state text, message text, hint text)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH reach AS (SELECT * FROM snowflake_internal.convert_reach(tbl, keynum)),
wide AS (SELECT * FROM reach WHERE widen),
inserters AS (SELECT * FROM snowflake_internal.convert_inserters(tbl, keynum)),
-- The tables logical replication publishes whose columns it widens, with their publications.
published AS (SELECT w.n, string_agg(DISTINCT format('%s (publication %I)', w.relid::regclass, p.pubname), ', ') AS what
              FROM wide w JOIN pg_class c ON c.oid = w.relid
              JOIN pg_publication_tables p ON p.schemaname = c.relnamespace::regnamespace::text AND p.tablename = c.relname
              GROUP BY w.n),
-- Partitions and children of another owner than the table whose ALTER TABLE recurses into them.
strange AS (SELECT r.*, c.relowner AS owner, p.relid AS parent, pc.relowner AS parent_owner
            FROM reach r JOIN pg_class c ON c.oid = r.relid
            JOIN reach p ON p.n = r.n AND p.level = 0 JOIN pg_class pc ON pc.oid = p.relid
            WHERE r.level > 0 AND c.relowner <> pc.relowner),
blockers(k, state, objects, message, hint) AS (VALUES
    -- A foreign key declared on a partition or child (not on its parent): its column is inherited,
    -- and no ALTER TABLE of the conversion reaches it from its parent.
    (1, '0A000', (SELECT format('foreign key %s on %s references %s.%I, but its column %s.%I is inherited from %s',
                                con.conname, con.conrelid::regclass, con.confrelid::regclass, fa.attname,
                                con.conrelid::regclass, a.attname,
                                (SELECT string_agg(inhparent::regclass::text, ', ' ORDER BY inhseqno)
                                 FROM pg_inherits WHERE inhrelid = con.conrelid))
                  FROM snowflake_internal.convert_closure(tbl, keynum) c
                  JOIN pg_constraint con ON con.oid = c.conid
                  JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
                  JOIN pg_attribute fa ON fa.attrelid = con.confrelid
                                      AND fa.attnum = con.confkey[array_position(con.conkey, c.attnum)]
                  WHERE c.depth > 0 AND a.attinhcount > 0
                    AND snowflake_internal.convert_base_type(a.atttypid) <> 'bigint'::regtype
                    AND NOT EXISTS (SELECT 1 FROM reach r WHERE r.relid = c.relid AND r.attnum = c.attnum)
                  ORDER BY c.depth, con.conrelid::regclass::text, con.conname LIMIT 1), '%2$s',
     'An inherited column changes type only with its parent: widen it there first (ALTER TABLE parent ALTER COLUMN ... '
     'TYPE bigint reaches every partition or child), in the same transaction, then convert.'),
    -- A foreign key declared on a partition of a table whose key index is rebuilt (its column
    -- widened): PostgreSQL drops the partitioned index with the partition's before it has set the
    -- foreign key aside to rebuild ("cannot drop constraint ... because other objects depend on it").
    (17, '0A000', (SELECT string_agg(format('%s on %s (references %s)', con.conname, con.conrelid::regclass,
                                            con.confrelid::regclass), ', ' ORDER BY c.depth, con.conname)
                   FROM snowflake_internal.convert_closure(tbl, keynum) c
                   JOIN pg_constraint con ON con.oid = c.conid JOIN pg_class p ON p.oid = con.confrelid
                   WHERE p.relispartition
                     AND EXISTS (SELECT 1 FROM reach r WHERE r.relid = con.confrelid AND r.widen AND r.level > 0
                                                        AND r.attnum = con.confkey[array_position(con.conkey, c.attnum)])),
     'foreign keys reference partitions whose column converting %s widens: %s',
     (SELECT format('PostgreSQL cannot change the type of a partitioned table''s key while a foreign key references one '
                    'of its partitions (its index is rebuilt under the foreign key). In one transaction: ALTER TABLE %1$s '
                    'DROP CONSTRAINT %2$I; then convert; then ALTER TABLE %1$s ALTER COLUMN %3$I TYPE bigint; ALTER '
                    'TABLE %1$s ADD CONSTRAINT %2$I %4$s;', con.conrelid::regclass, con.conname, a.attname,
                    pg_get_constraintdef(con.oid))
      FROM snowflake_internal.convert_closure(tbl, keynum) c
      JOIN pg_constraint con ON con.oid = c.conid JOIN pg_class p ON p.oid = con.confrelid
      JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
      WHERE p.relispartition
        AND EXISTS (SELECT 1 FROM reach r WHERE r.relid = con.confrelid AND r.widen AND r.level > 0
                                           AND r.attnum = con.confkey[array_position(con.conkey, c.attnum)])
      ORDER BY c.depth, con.conname LIMIT 1)),
    -- PostgreSQL 18 (its not-null constraints in pg_constraint): a child's NOT NULL on a widened
    -- column that is its own and inherited, under another name than its parent's, is rebuilt under
    -- its own name and refused ("cannot create not-null constraint ... already exists").
    (18, '0A000', (SELECT string_agg(format('%s (%I, inherited from %s as %I)', r.relid::regclass, cn.conname,
                                            i.inhparent::regclass, pn.conname), ', ' ORDER BY r.n, r.level, cn.conname)
                   FROM reach r JOIN pg_constraint cn ON cn.conrelid = r.relid AND cn.contype = 'n'
                                                     AND cn.conkey = ARRAY[r.attnum] AND cn.conislocal AND cn.coninhcount > 0
                   JOIN pg_inherits i ON i.inhrelid = r.relid
                   JOIN pg_attribute pa ON pa.attrelid = i.inhparent AND pa.attname = r.attname
                   JOIN pg_constraint pn ON pn.conrelid = i.inhparent AND pn.contype = 'n' AND pn.conkey = ARRAY[pa.attnum]
                   WHERE r.widen AND r.level > 0 AND cn.conname <> pn.conname),
     'children of the tables that converting %s widens have NOT NULL constraints of their own under another name than '
     'their parent''s: %s',
     (SELECT format('PostgreSQL 18 rebuilds such a constraint under its own name when the column''s type changes, and '
                    'refuses it (cannot create not-null constraint). Give it its parent''s name first, in the same '
                    'transaction: ALTER TABLE %1$s NO INHERIT %2$s; ALTER TABLE %1$s RENAME CONSTRAINT %3$I TO %4$I; '
                    'ALTER TABLE %1$s INHERIT %2$s; then convert.', r.relid::regclass, i.inhparent::regclass,
                    cn.conname, pn.conname)
      FROM reach r JOIN pg_constraint cn ON cn.conrelid = r.relid AND cn.contype = 'n'
                                        AND cn.conkey = ARRAY[r.attnum] AND cn.conislocal AND cn.coninhcount > 0
      JOIN pg_inherits i ON i.inhrelid = r.relid
      JOIN pg_attribute pa ON pa.attrelid = i.inhparent AND pa.attname = r.attname
      JOIN pg_constraint pn ON pn.conrelid = i.inhparent AND pn.contype = 'n' AND pn.conkey = ARRAY[pa.attnum]
      WHERE r.widen AND r.level > 0 AND cn.conname <> pn.conname ORDER BY r.n, r.level LIMIT 1)),
    -- ALTER COLUMN ... TYPE bigint would drop a column's domain, and with it its constraints.
    (2, '0A000', (SELECT string_agg(format('%s.%I (domain %s over %s)', w.relid::regclass, w.attname, a.atttypid::regtype,
                                           snowflake_internal.convert_base_type(a.atttypid)), ', '
                                    ORDER BY w.n, w.relid::regclass::text)
                  FROM wide w JOIN pg_attribute a ON a.attrelid = w.relid AND a.attnum = w.attnum
                  JOIN pg_type t ON t.oid = a.atttypid
                  WHERE w.level = 0 AND t.typtype = 'd'),
     'columns that converting %s widens are of a domain over a smaller integer: %s',
     (SELECT format('Widening a column to bigint would drop its domain and the domain''s constraints. Give it a domain '
                    'over bigint with the same constraints first, in the same transaction (here: CREATE DOMAIN %s AS '
                    'bigint%s; ALTER TABLE %s ALTER COLUMN %I TYPE %1$s;), then convert: a column of a domain over '
                    'bigint is kept as it is.',
                    quote_ident(n.nspname) || '.' || quote_ident(t.typname || '_big'),
                    (SELECT coalesce(' DEFAULT ' || t.typdefault, '')
                            || CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END
                            || coalesce(string_agg(' CONSTRAINT ' || quote_ident(dc.conname) || ' '
                                                   || pg_get_constraintdef(dc.oid), '' ORDER BY dc.conname), '')
                     FROM pg_constraint dc WHERE dc.contypid = t.oid AND dc.contype = 'c'),
                    w.relid::regclass, w.attname)
      FROM wide w JOIN pg_attribute a ON a.attrelid = w.relid AND a.attnum = w.attnum
      JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE w.level = 0 AND t.typtype = 'd' ORDER BY w.n LIMIT 1)),
    (3, '0A000', (SELECT string_agg(DISTINCT format('%s (of the type %s)', w.relid::regclass, c.reloftype::regtype), ', ')
                  FROM wide w JOIN pg_class c ON c.oid = w.relid WHERE c.reloftype <> 0),
     'converting %s widens columns of typed tables (CREATE TABLE ... OF type), whose column types are their type''s: %s',
     'Detach the table from its type first, in the same transaction (ALTER TABLE ... NOT OF: it keeps its columns), '
     'then convert.'),
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
     'insert, then convert.'),
    -- What else ALTER COLUMN ... TYPE refuses: a rule on the table itself, a function's BEGIN ATOMIC
    -- body, a publication's row filter or column list (15+), another relation storing the table's
    -- row type.
    (10, '0A000', (SELECT string_agg(DISTINCT format('%s.%I (used by the rule %I on %s)', w.relid::regclass, w.attname,
                                                     r.rulename, r.ev_class::regclass), ', ')
                   FROM wide w JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid
                                               AND d.refobjsubid = w.attnum AND d.classid = 'pg_rewrite'::regclass
                   JOIN pg_rewrite r ON r.oid = d.objid
                   WHERE r.ev_class = w.relid AND r.rulename <> '_RETURN'),
     'rules use the columns that converting %s widens: %s',
     'Save the rule''s definition (pg_get_ruledef), DROP RULE, convert, and create it again, in one transaction.'),
    (11, '0A000', (SELECT string_agg(DISTINCT format('%s.%I (used by %s)', w.relid::regclass, w.attname,
                                                     pg_describe_object(d.classid, d.objid, d.objsubid)), ', ')
                   FROM wide w JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid
                                               AND d.refobjsubid = w.attnum AND d.classid = 'pg_proc'::regclass),
     'functions with a BEGIN ATOMIC body use the columns that converting %s widens: %s',
     'Save the function''s definition (pg_get_functiondef), drop it, convert, and create it again, in one transaction.'),
    (12, '0A000', (SELECT string_agg(DISTINCT format('%s.%I (publication %I)', w.relid::regclass, w.attname, p.pubname),
                                     ', ')
                   FROM wide w JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = w.relid
                                               AND d.refobjsubid = w.attnum
                                               AND d.classid = 'pg_publication_rel'::regclass
                   JOIN pg_publication_rel pr ON pr.oid = d.objid JOIN pg_publication p ON p.oid = pr.prpubid),
     'publications filter the columns that converting %s widens (a row filter or a column list): %s',
     'ALTER COLUMN ... TYPE refuses a column that a publication''s WHERE or column list names: ALTER PUBLICATION ... '
     'SET TABLE ... without them, convert, and set them again (ALTER PUBLICATION ... SET TABLE ... (columns) WHERE '
     '(...)), in one transaction.'),
    (13, '0A000', (SELECT string_agg(DISTINCT format('%s (its row type is the type of %s.%I)', w.relid::regclass,
                                                     a.attrelid::regclass, a.attname), ', ')
                   FROM wide w JOIN pg_class c ON c.oid = w.relid
                   JOIN pg_type rt ON rt.oid = c.reltype
                   JOIN pg_attribute a ON a.atttypid IN (rt.oid, rt.typarray) AND NOT a.attisdropped AND a.attnum > 0
                   JOIN pg_class o ON o.oid = a.attrelid AND o.relkind IN ('r', 'p', 'f', 'm', 'c')),
     'converting %s widens columns of tables whose row type other columns store: %s',
     'PostgreSQL cannot change a table''s column while another column stores its rows: change or drop those columns '
     'first (ALTER TABLE ... ALTER COLUMN ... TYPE ..., or DROP COLUMN), then convert.'),
    -- Logical replication: a subscriber whose column is still integer stops at the first new id.
    (14, '55000', (SELECT string_agg(p.what, ', ' ORDER BY p.n) FROM published p
                   WHERE NOT subscribers_widened
                     AND EXISTS (SELECT 1 FROM pg_replication_slots s
                                 WHERE s.slot_type = 'logical' AND s.database = current_database())),
     'converting %s widens columns of tables that logical replication publishes, and this database has logical '
     'replication slots: %s',
     (SELECT 'A subscriber whose column is still integer stops at the first new id it receives (integer out of range), '
             'and this server keeps the WAL of its slot until it is fixed. On every subscriber, first: '
             || string_agg(format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint;', t.relid::regclass, t.attname), ' '
                           ORDER BY t.n)
             || ' (a bigint column there takes this server''s integer values too), then convert here with '
                'subscribers_widened => true.'
      FROM snowflake_internal.convert_targets(tbl, keynum) t WHERE t.widen AND t.n IN (SELECT n FROM published))),
    -- Every role that inserts runs the new default (issue 60): the conversion grants it EXECUTE on
    -- snowflake_nextval() (convert_statements), which PUBLIC is never given, and only a role that
    -- may grant it can.
    (15, '42501', (SELECT tbl::text FROM inserters WHERE role = 0),
     'every role (PUBLIC) may insert into %2$s, and snowflake_nextval(), its new default, is not granted to PUBLIC',
     'pg_snowflake keeps snowflake_nextval() from PUBLIC (it spends this server''s ids): grant INSERT to the roles that '
     'insert rather than to PUBLIC (REVOKE INSERT ON ... FROM PUBLIC; GRANT INSERT ON ... TO ...), or, if every role '
     'may mint ids, GRANT EXECUTE ON FUNCTION @extschema@.snowflake_nextval() TO PUBLIC; then convert.'),
    (16, '42501', (SELECT string_agg(i.rolname, ', ' ORDER BY i.rolname) FROM inserters i
                   WHERE i.role <> 0
                     AND NOT has_function_privilege('@extschema@.snowflake_nextval()'::regprocedure,
                                                    'EXECUTE WITH GRANT OPTION')),
     'permission denied: converting %1$s makes snowflake_nextval() the default of the roles that insert into its table, '
     'and %3$I may not grant them EXECUTE on it: %2$s',
     (SELECT format('Every role that inserts runs the default, so the conversion grants it to those that lack it, which '
                    'only a role that may grant it can do: have a superuser or the extension''s owner run GRANT EXECUTE '
                    'ON FUNCTION @extschema@.snowflake_nextval() TO %s; then convert (or convert as one of them).',
                    string_agg(i.rolname, ', ' ORDER BY i.rolname))
      FROM inserters i WHERE i.role <> 0))
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

-- snowflake_internal.convert_citus_check(tbl, col, rels, cols): a helper of snowflake_convert_column(). When
-- Citus is installed, it refuses what Citus's DDL propagation would refuse half-way: Citus cannot
-- change a distribution column's default or type ("cannot execute ALTER TABLE command involving
-- partition column"), so neither tbl.col (its default changes) nor any column it widens (rels,
-- cols) may be the distribution column of a distributed table (reference tables and Citus local
-- tables have none); and Citus cannot drop an identity ("alter table command is currently
-- unsupported"), nor undistribute a table that has one, so an identity column of any Citus table
-- is refused too, with the way that works. Without Citus it does nothing.
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
