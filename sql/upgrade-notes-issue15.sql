-- Issue 15: the SQL-surface changes since b74a586, as an upgrade script from the previous
-- version needs them (the definitions pgrx generates: cargo pgrx schema pg16).

-- Item 2: IMMUTABLE readers that take the layout as arguments (src/postgres/sql_api/fixed.rs).
-- src/postgres/sql_api/fixed.rs:35
-- pg_snowflake::postgres::sql_api::fixed::snowflake_decode
CREATE  FUNCTION "snowflake_decode"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"machine_bits" INT, /* i32 */
	"sequence_bits" INT, /* i32 */
	"time_unit_ms" INT DEFAULT 1 /* i32 */
) RETURNS snowflake_parts /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_decode_fixed_wrapper';

-- src/postgres/sql_api/fixed.rs:81
-- pg_snowflake::postgres::sql_api::fixed::snowflake_from_timestamp
CREATE  FUNCTION "snowflake_from_timestamp"(
	"ts" timestamp with time zone, /* TimestampWithTimeZone */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"machine_bits" INT, /* i32 */
	"sequence_bits" INT, /* i32 */
	"time_unit_ms" INT DEFAULT 1 /* i32 */
) RETURNS bigint /* i64 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_from_timestamp_fixed_wrapper';

-- src/postgres/sql_api/fixed.rs:58
-- pg_snowflake::postgres::sql_api::fixed::snowflake_machine_id
CREATE  FUNCTION "snowflake_machine_id"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"machine_bits" INT, /* i32 */
	"sequence_bits" INT, /* i32 */
	"time_unit_ms" INT DEFAULT 1 /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_machine_id_fixed_wrapper';

-- src/postgres/sql_api/fixed.rs:99
-- pg_snowflake::postgres::sql_api::fixed::snowflake_machine_id
CREATE  FUNCTION "snowflake_machine_id"(
	"id" bigint, /* i64 */
	"preset" TEXT /* & str */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_machine_id_preset_wrapper';

-- src/postgres/sql_api/fixed.rs:69
-- pg_snowflake::postgres::sql_api::fixed::snowflake_sequence
CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"machine_bits" INT, /* i32 */
	"sequence_bits" INT, /* i32 */
	"time_unit_ms" INT DEFAULT 1 /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_sequence_fixed_wrapper';

-- src/postgres/sql_api/fixed.rs:104
-- pg_snowflake::postgres::sql_api::fixed::snowflake_sequence
CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint, /* i64 */
	"preset" TEXT /* & str */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_sequence_preset_wrapper';

-- src/postgres/sql_api/fixed.rs:47
-- pg_snowflake::postgres::sql_api::fixed::snowflake_timestamp
CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"machine_bits" INT, /* i32 */
	"sequence_bits" INT, /* i32 */
	"time_unit_ms" INT DEFAULT 1 /* i32 */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_timestamp_fixed_wrapper';

-- src/postgres/sql_api/fixed.rs:94
-- pg_snowflake::postgres::sql_api::fixed::snowflake_timestamp
CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint, /* i64 */
	"preset" TEXT /* & str */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_timestamp_preset_wrapper';


-- Their descriptions (sql/comments.sql).
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
    'When an id was minted, under a preset (twitter, discord, instagram, sonyflake; not server); IMMUTABLE';
COMMENT ON FUNCTION snowflake_machine_id(bigint, text) IS
    'The machine field of an id, under a preset (not server); IMMUTABLE';
COMMENT ON FUNCTION snowflake_sequence(bigint, text) IS
    'The sequence field of an id, under a preset (not server); IMMUTABLE';

-- Item 5: the JSON form of an id (src/postgres/sql_api/json.rs).
-- src/postgres/sql_api/json.rs:21
-- pg_snowflake::postgres::sql_api::json::snowflake_to_jsonb
CREATE  FUNCTION "snowflake_to_jsonb"(
	"id" bigint /* i64 */
) RETURNS jsonb /* JsonB */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_to_jsonb_wrapper';

COMMENT ON FUNCTION snowflake_to_jsonb(bigint) IS
    'An id and its fields as JSON, the id as a decimal string (JSON numbers above 2^53 lose digits in JavaScript)';

-- Item 3: range-partition bounds on the id (src/postgres/sql_api/partition.rs).
-- src/postgres/sql_api/partition.rs:18
-- pg_snowflake::postgres::sql_api::partition::snowflake_partition_bounds
CREATE  FUNCTION "snowflake_partition_bounds"(
	"from" timestamp with time zone, /* TimestampWithTimeZone */
	"to" timestamp with time zone, /* TimestampWithTimeZone */
	"step" interval /* Interval */
) RETURNS TABLE (
	"from_id" bigint,  /* i64 */
	"to_id" bigint,  /* i64 */
	"suffix" TEXT,  /* String */
	"from_ts" timestamp with time zone,  /* TimestampWithTimeZone */
	"to_ts" timestamp with time zone  /* TimestampWithTimeZone */
)
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_partition_bounds_wrapper';

COMMENT ON FUNCTION snowflake_partition_bounds(timestamptz, timestamptz, interval) IS
    'Range-partition bounds on the id, one row per step of time (in UTC) from the first time to at least the second: FOR VALUES FROM (from_id) TO (to_id)';
