//! Making ids from their fields: the lower bound of a time range, and any id for backfills and
//! tests. STABLE: see the module note in `mod.rs`.

use super::super::server_config;
use super::{raise, unix_ms_of};
use pg_snowflake_core::Error;
use pgrx::prelude::*;

/// The id with these fields under the server's layout; the time is rounded down to its tick.
fn compose(ts: TimestampWithTimeZone, machine_id: i64, sequence: i64) -> Result<i64, Error> {
    Ok(server_config::layout()?.compose_checked(unix_ms_of(ts)?, machine_id, sequence)?)
}

/// The smallest id that can carry `ts` (machine 0, sequence 0): every id minted at or after `ts`
/// is at least this, so `WHERE id >= snowflake_from_timestamp(t)` is a primary-key range scan.
#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_from_timestamp(ts: TimestampWithTimeZone) -> i64 {
    raise(compose(ts, 0, 0))
}

#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_compose(ts: TimestampWithTimeZone, machine_id: i32, sequence: i32) -> i64 {
    raise(compose(ts, machine_id.into(), sequence.into()))
}
