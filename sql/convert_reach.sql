-- What a conversion of tbl.col reaches (a part of snowflake_convert_column(), sql/convert_column.sql):
-- every column that will hold the key's values (the key, and every column whose foreign key
-- references one of them, at any depth, on the table or on any partition or child of it), the
-- columns it widens, and every relation its ALTER TABLEs recurse into. Catalog reads only.

-- snowflake_internal.convert_base_type(typ): the type under a domain (under every domain of a domain
-- over a domain), or typ itself.
CREATE FUNCTION snowflake_internal.convert_base_type(typ oid) RETURNS regtype
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE b(typ, depth) AS (
    SELECT typ, 0
    UNION ALL
    SELECT t.typbasetype, b.depth + 1 FROM b JOIN pg_type t ON t.oid = b.typ WHERE t.typtype = 'd' AND b.depth < 64
)
SELECT b.typ::regtype FROM b ORDER BY b.depth DESC LIMIT 1
$fn$;

-- snowflake_internal.convert_tree(rel): rel (level 0) and every partition and child of a table inherited
-- from below it, at its level (pg_inherits, recursively: where ALTER TABLE and LOCK TABLE recurse).
CREATE FUNCTION snowflake_internal.convert_tree(rel oid)
RETURNS TABLE (relid oid, level int)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE tree(relid, level) AS (
    SELECT rel, 0
    UNION
    SELECT i.inhrelid, t.level + 1 FROM tree t JOIN pg_inherits i ON i.inhparent = t.relid WHERE t.level < 64
)
SELECT DISTINCT ON (t.relid) t.relid, t.level FROM tree t ORDER BY t.relid, t.level
$fn$;

-- snowflake_internal.convert_closure(tbl, keynum): every column that holds the key's values once it is
-- converted: the key (depth 0), and every column whose foreign key references one of them, on its
-- table or on any partition or child of it (a foreign key to a partition, or to an inheritance
-- child, references the same values), at the depth of its shortest chain (a 1:1 table's key that
-- references the key, and the columns that reference that one, and so on); conid: the foreign key
-- (of a partitioned table, the constraint declared on it, not its copies on the partitions).
CREATE FUNCTION snowflake_internal.convert_closure(tbl regclass, keynum int2)
RETURNS TABLE (relid oid, attnum int2, depth int, conid oid)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE cols(relid, attnum, depth, conid) AS (
    SELECT tbl::oid, keynum, 0, 0::oid
    UNION ALL
    SELECT con.conrelid, con.conkey[array_position(con.confkey, a.attnum)], c.depth + 1, con.oid
    FROM cols c
    JOIN pg_attribute ca ON ca.attrelid = c.relid AND ca.attnum = c.attnum
    CROSS JOIN LATERAL snowflake_internal.convert_tree(c.relid) t
    JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = ca.attname AND NOT a.attisdropped
    JOIN pg_constraint con ON con.contype = 'f' AND con.conparentid = 0 AND con.confrelid = t.relid
                           AND a.attnum = ANY (con.confkey)
    WHERE c.depth < 64
) CYCLE relid, attnum SET cyclic USING path
SELECT DISTINCT ON (c.relid, c.attnum) c.relid, c.attnum, c.depth, c.conid
FROM cols c WHERE NOT c.cyclic
ORDER BY c.relid, c.attnum, c.depth, c.conid
$fn$;

-- snowflake_internal.convert_targets(tbl, keynum): the columns the conversion's ALTER TABLEs name, in the
-- order it alters them (n): the key column, then every column of the closure (convert_closure) that
-- is not bigint yet (its type, or the type under its domain) and not inherited (an inherited column
-- changes type with its parent's, in the ALTER TABLE that recurses into it), the nearest first.
-- widen: the column changes type (the key column's default changes even when it does not).
CREATE FUNCTION snowflake_internal.convert_targets(tbl regclass, keynum int2)
RETURNS TABLE (n int, relid oid, attnum int2, attname name, widen boolean)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT (row_number() OVER (ORDER BY c.depth, c.conid, c.relid, c.attnum))::int, c.relid, c.attnum, a.attname,
       snowflake_internal.convert_base_type(a.atttypid) <> 'bigint'::regtype
FROM snowflake_internal.convert_closure(tbl, keynum) c
JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.attnum
WHERE c.depth = 0 OR (snowflake_internal.convert_base_type(a.atttypid) <> 'bigint'::regtype AND a.attinhcount = 0)
ORDER BY 1
$fn$;

-- snowflake_internal.convert_reach(tbl, keynum): every relation an ALTER TABLE of the conversion reaches,
-- found as PostgreSQL recurses: the target's table (n of snowflake_convert_targets) and every
-- partition and child of a table inherited from (pg_inherits, recursively, at its level), with the
-- column's number there (a partition or child may number it otherwise).
CREATE FUNCTION snowflake_internal.convert_reach(tbl regclass, keynum int2)
RETURNS TABLE (n int, relid oid, attnum int2, attname name, widen boolean, level int)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT DISTINCT ON (t.n, r.relid) t.n, r.relid, a.attnum, a.attname, t.widen, r.level
FROM snowflake_internal.convert_targets(tbl, keynum) t
CROSS JOIN LATERAL snowflake_internal.convert_tree(t.relid) r
JOIN pg_attribute a ON a.attrelid = r.relid AND a.attname = t.attname AND NOT a.attisdropped
ORDER BY t.n, r.relid, r.level
$fn$;

-- snowflake_internal.convert_holders(tbl, keynum): every relation that holds the key's values once it is
-- converted, with the column there: each column of the closure (convert_closure) on its table and
-- on every partition and child of it (level), whether it is widened (widen: it or the column it
-- inherits is a target) and whether a foreign key could reference it (referenceable: a unique
-- index without expressions or predicate holds it, on the table itself).
CREATE FUNCTION snowflake_internal.convert_holders(tbl regclass, keynum int2)
RETURNS TABLE (relid oid, attnum int2, attname name, depth int, level int, widen boolean, referenceable boolean)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH reach AS (SELECT * FROM snowflake_internal.convert_reach(tbl, keynum))
SELECT DISTINCT ON (r.relid, a.attnum) r.relid, a.attnum, a.attname, c.depth, r.level,
       EXISTS (SELECT 1 FROM reach w WHERE w.relid = r.relid AND w.attnum = a.attnum AND w.widen),
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = r.relid AND i.indisunique AND i.indpred IS NULL
                                          AND i.indexprs IS NULL AND a.attnum = ANY (i.indkey::int2[]))
FROM snowflake_internal.convert_closure(tbl, keynum) c
JOIN pg_attribute ca ON ca.attrelid = c.relid AND ca.attnum = c.attnum
CROSS JOIN LATERAL snowflake_internal.convert_tree(c.relid) r
JOIN pg_attribute a ON a.attrelid = r.relid AND a.attname = ca.attname AND NOT a.attisdropped
ORDER BY r.relid, a.attnum, c.depth, r.level
$fn$;
