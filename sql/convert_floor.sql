-- New ids above the old (a part of snowflake_convert_column(), sql/convert_column.sql): the column's
-- largest value against the first id this server would give it, what to do when it is not below,
-- and the CHECK constraints every new id must pass in each column that will hold it.

-- snowflake_internal.convert_wait_limit(): how far ahead of this server's clock a column's largest value
-- may decode (under this server's layout) for the conversion to wait for the clock to pass it rather
-- than refuse: ids of this very millisecond (a default counting on its own, as pgEdge's does per
-- sequence), or of a server whose clock is a little ahead.
CREATE FUNCTION snowflake_internal.convert_wait_limit() RETURNS interval
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT interval '1 second' $fn$;

-- snowflake_internal.convert_floor(tbl, col, kind, issue): the largest value of tbl.col (read as the
-- table's owner, restricted, with row_security off: a policy that would apply is an error) and the first
-- id this server would give it: with issue, an id it issues now (when the caller may execute
-- snowflake_nextval(); every later id is above it), else the smallest id it could issue now (its
-- clock, machine id and layout; NULL when it cannot issue ids: then nothing is compared). When the
-- largest value is not below the first id, hint says what would put new ids above the old: for
-- pgEdge's ids, pgEdge's epoch; for others, the latest epoch that would, if there is one. An epoch
-- is offered as the fix only on a server that has issued no ids (no high-water mark on record:
-- snowflake_stats().high_water_mark); on one that has, a new epoch stops snowflake_nextval() (55000,
-- the layout changed) until snowflake.accept_layout_change, and then every id it issued decodes at
-- another time, in every table: the hint says so and gives the choices that leave them alone.
-- pgEdge's ids (ms since 2023-01-01 << 22 | node << 12 | count) are named by what the values decode
-- to under that layout, not by their range: the largest (and, unless the column has pgEdge's
-- default, the smallest: a sequence's values count from 1) must carry a time from pgEdge's epoch to
-- now (a minute of clock skew allowed). A largest value that decodes, under this server's layout, to
-- a time at most convert_wait_limit() ahead of its clock is no refusal: with issue, it waits until
-- the clock has passed that tick, then issues; without, the first id is that of the next tick. One
-- up to a day ahead gets a hint of its own (a clock ahead, not an epoch to change).
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
    top_ts timestamptz;
    tick interval;
    ahead interval;
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
    -- A largest value of a tick the clock is about to pass: new ids are above it once it has.
    top_ts := @extschema@.snowflake_timestamp(max_id);
    tick := lay.time_unit_ms * interval '1 ms';
    ahead := top_ts - clock;
    IF ahead < snowflake_internal.convert_wait_limit() THEN
        IF issue THEN
            -- (The table is locked: its largest value stays what it is.)
            WHILE @extschema@.snowflake_clock() < top_ts + tick LOOP
                PERFORM pg_sleep(greatest(extract(epoch FROM top_ts + tick - @extschema@.snowflake_clock()), 0.001));
            END LOOP;
            IF has_function_privilege('@extschema@.snowflake_nextval()', 'EXECUTE') THEN
                first_id := @extschema@.snowflake_nextval();
            ELSE
                first_id := @extschema@.snowflake_from_timestamp(@extschema@.snowflake_clock()) | (machine << lay.sequence_bits);
            END IF;
        ELSE
            first_id := @extschema@.snowflake_from_timestamp(top_ts + tick) | (machine << lay.sequence_bits);
        END IF;
        IF max_id < first_id THEN
            RETURN;
        END IF;
    END IF;
    IF ahead < interval '1 day' THEN
        hint := format('Its largest value decodes to %s under this server''s layout, %s ahead of its clock: ids of a '
                       'server whose clock is ahead, or written by hand. New ids pass them once this clock does: convert '
                       'after %s (a value at most %s s ahead is waited for); snowflake_check_peers() compares the '
                       'clocks of the servers that share the id space.',
                       to_char(top_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS+00'),
                       date_trunc('second', ahead), to_char(top_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'),
                       extract(epoch FROM snowflake_internal.convert_wait_limit())::float8);
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

-- snowflake_internal.convert_above(tbl, col, kind, issue): refuses (22003) a column whose largest value is
-- not below the first id this server would give it (snowflake_convert_floor), with the fix; else
-- returns that first id (NULL when the server cannot issue ids).
CREATE FUNCTION snowflake_internal.convert_above(tbl regclass, col name, kind text, issue boolean) RETURNS bigint
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
    RETURN f.first_id;
END
$fn$;

-- snowflake_internal.convert_checked(tbl, keynum): the columns (of convert_holders: every relation that
-- will hold new ids) whose CHECK constraints a new id must pass: a CHECK of the table on that
-- column alone, or a CHECK of the column's domain (or of a domain under it). A partition or child
-- only for a CHECK of its own (those it inherits, and its column's domain, are its parent's).
CREATE FUNCTION snowflake_internal.convert_checked(tbl regclass, keynum int2)
RETURNS TABLE (relid oid, attname name)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT h.relid, h.attname FROM snowflake_internal.convert_holders(tbl, keynum) h
JOIN pg_attribute a ON a.attrelid = h.relid AND a.attnum = h.attnum
WHERE EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conrelid = h.relid AND c.contype = 'c' AND c.conkey = ARRAY[h.attnum]
                                              AND (h.level = 0 OR c.conislocal))
   OR h.level = 0 AND EXISTS (WITH RECURSIVE d(typ) AS (SELECT a.atttypid
                                        UNION
                                        SELECT t.typbasetype FROM d JOIN pg_type t ON t.oid = d.typ WHERE t.typtype = 'd')
              SELECT 1 FROM d JOIN pg_constraint c ON c.contypid = d.typ AND c.contype = 'c')
ORDER BY h.depth, h.relid::regclass::text
$fn$;

-- snowflake_internal.convert_checks(tbl, keynum, first_id): refuses (23514) a conversion whose new ids
-- would fail a CHECK constraint of a column that will hold them (convert_checked), evaluated at the
-- first new id as the owner of that column's table (snowflake_internal.as_owner's check action):
-- every insert would fail (a key kept BETWEEN 1 AND 1000000000), or every reference to a new id.
-- Only constraints on that one column are evaluated (one that also names other columns cannot be
-- evaluated at an id alone), and at the first new id only.
CREATE FUNCTION snowflake_internal.convert_checks(tbl regclass, keynum int2, first_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    h record;
    failed bigint;
    con record;
BEGIN
    IF first_id IS NULL THEN
        RETURN;
    END IF;
    FOR h IN SELECT * FROM snowflake_internal.convert_checked(tbl, keynum) LOOP
        failed := snowflake_internal.as_owner('check', h.relid, h.attname, first_id);
        CONTINUE WHEN failed IS NULL;
        SELECT c.conname, c.contypid, pg_get_constraintdef(c.oid) AS def INTO con FROM pg_constraint c WHERE c.oid = failed::oid;
        RAISE EXCEPTION 'new ids would fail the check constraint % of %: % is false for the first new id, %',
                quote_ident(con.conname),
                CASE WHEN con.contypid = 0 THEN h.relid::regclass::text
                     ELSE format('the domain %s (of %s.%I)', con.contypid::regtype, h.relid::regclass, h.attname) END,
                con.def, first_id
            USING ERRCODE = '23514', HINT = 'Every row that takes a new id would be refused: change or drop the constraint '
                  'in the same transaction (' || CASE WHEN con.contypid = 0
                  THEN format('ALTER TABLE %s DROP CONSTRAINT %I, then ADD CONSTRAINT ... CHECK (...) if it still has a '
                              'use', h.relid::regclass, con.conname)
                  ELSE format('ALTER DOMAIN %s DROP CONSTRAINT %I', con.contypid::regtype, con.conname) END
                  || '), then convert.';
    END LOOP;
END
$fn$;
