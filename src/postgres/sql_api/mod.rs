//! The SQL-facing functions, one file per concern. Each turns a core `Error` into a PostgreSQL
//! error with its SQLSTATE, message and hint (through `errors`); nothing here panics on bad input.
//!
//! Volatility: everything that reads the server's layout (snowflake.epoch, time_unit and the bit
//! settings) is STABLE, not IMMUTABLE, because the layout can differ after a restart: IMMUTABLE
//! would let an index expression or a cached plan keep an answer made under another layout.
//! The IMMUTABLE forms in `fixed_layout.rs` take the layout as arguments instead.
//! STABLE still lets the planner use `snowflake_from_timestamp(...)` in an index condition.

mod as_owner;
mod compose;
mod decode;
mod fixed_layout;
mod generate;
mod json;
mod layout;
mod machine_id;
mod partition;
mod peers;
mod presets;
mod public_id;
mod stats;

use super::errors;
use pg_snowflake_core::Error;
use pgrx::prelude::*;

pgrx::extension_sql_file!("../../../sql/types.sql", name = "types", bootstrap);
pgrx::extension_sql_file!("../../../sql/comments.sql", name = "comments", finalize);
// PL/pgSQL over dblink: network I/O stays far from the generator's path.
pgrx::extension_sql_file!(
    "../../../sql/check_peers.sql",
    name = "check_peers",
    requires = [
        peers::snowflake_internal::peer_conninfo,
        peers::snowflake_internal::peer_deadline,
        peers::snowflake_internal::dblink_poll
    ]
);
// PL/pgSQL: catalog queries, and actions run as their relation's owner (as_owner.rs), in the
// caller's transaction.
pgrx::extension_sql_file!(
    "../../../sql/convert_column.sql",
    name = "convert_column",
    requires = [
        as_owner::snowflake_internal::as_owner,
        as_owner::snowflake_internal::owner_statement,
        as_owner::snowflake_internal::missing_grant
    ]
);

/// 2000-01-01, PostgreSQL's timestamp epoch, in milliseconds since 1970.
const PG_EPOCH_MS: i64 = 946_684_800_000;

/// A time in milliseconds since 1970 as a timestamptz, if it is within timestamptz's range.
fn to_timestamptz(unix_ms: i64) -> Option<TimestampWithTimeZone> {
    let us = unix_ms.checked_sub(PG_EPOCH_MS)?.checked_mul(1000)?;
    // i64::MIN and i64::MAX stand for -infinity and infinity: no id means either.
    if us == i64::MIN || us == i64::MAX {
        return None;
    }
    TimestampWithTimeZone::try_from(us).ok()
}

/// A timestamptz in whole milliseconds since 1970 (rounded down, as the clock is when an id is
/// minted). `-infinity` and `infinity` are no time an id can carry: with long ticks a timestamp
/// field can outlive timestamptz, and the extremes would otherwise land inside it.
fn unix_ms_of(ts: TimestampWithTimeZone) -> Result<i64, Error> {
    let us: i64 = ts.into();
    match us {
        i64::MIN => Err(Error::InfiniteTime { negative: true }),
        i64::MAX => Err(Error::InfiniteTime { negative: false }),
        _ => Ok(us.div_euclid(1000).saturating_add(PG_EPOCH_MS)),
    }
}

/// The `-infinity`/`infinity` timestamptz for the end of a field beyond any calendar.
fn to_timestamptz_or_infinity(unix_ms: i64) -> TimestampWithTimeZone {
    to_timestamptz(unix_ms).unwrap_or_else(|| TimestampWithTimeZone::try_from(i64::MAX).unwrap())
}

/// A new row of the composite type the called function returns. Found through the function's
/// own declaration, not by name, so that it works whatever the caller's search_path.
fn new_row(fcinfo: pg_sys::FunctionCallInfo, type_name: &str) -> PgHeapTuple<'static, pgrx::AllocatedByRust> {
    // SAFETY: fcinfo and its flinfo are PostgreSQL's, valid for the call.
    let typoid = unsafe { pg_sys::get_func_rettype((*(*fcinfo).flinfo).fn_oid) };
    PgHeapTuple::new_composite_type_by_oid(typoid).unwrap_or_else(|e| error!("type {type_name} is missing: {e}"))
}

/// The value, or the error raised as a PostgreSQL error.
#[inline]
fn raise<T, E: Into<Error>>(result: Result<T, E>) -> T {
    errors::value_or_raise(result)
}

/// Fills a composite result's fields, each set with `set_by_name`: a failure means the SQL type
/// no longer matches the code (an extension script out of step with the library).
fn fill_row<E: std::fmt::Display>(type_name: &str, results: impl IntoIterator<Item = Result<(), E>>) {
    for result in results {
        result.unwrap_or_else(|e| error!("type {type_name} has changed: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamptz_range_is_respected() {
        assert!(to_timestamptz(946_684_800_000).is_some());
        assert!(to_timestamptz(i64::MAX / 2).is_none());
    }
}
