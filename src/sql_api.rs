//! The SQL-facing functions. Each turns a domain `Error` into a PostgreSQL error with its SQLSTATE,
//! message and hint; nothing here panics on bad input.

use crate::error::Error;
use crate::layout::Layout;
use crate::pg_host::PgHost;
use crate::{gucs, shmem, startup};
use pgrx::prelude::*;

pgrx::extension_sql_file!("../sql/snowflake_parts.sql", name = "snowflake_parts", bootstrap);
pgrx::extension_sql_file!("../sql/comments.sql", name = "comments", finalize);

/// The next id of this server: strictly greater than every id it issued before, in any backend.
#[inline]
fn nextval() -> Result<i64, Error> {
    let generator = startup::generator()?;
    let state = shmem::state().ok_or(Error::NotPreloaded)?;
    // SAFETY: a plain read of recovery state; cheap once recovery has ended in this backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(Error::HotStandby);
    }
    generator.next_id(state, &mut PgHost::default(), gucs::max_clock_wait_ms)
}

/// VOLATILE: every call returns a new value. PARALLEL SAFE: the state lives in shared memory, so a
/// parallel worker issues from the same generator as its leader.
#[pg_extern(volatile, parallel_safe)]
fn snowflake_nextval() -> i64 {
    nextval().unwrap_or_else(|e| e.raise())
}

/// Microseconds since 2000-01-01, PostgreSQL's timestamptz representation, if in its range.
fn to_timestamptz(unix_ms: i64) -> Option<TimestampWithTimeZone> {
    const PG_EPOCH_MS: i64 = 946_684_800_000;
    let us = unix_ms.checked_sub(PG_EPOCH_MS)?.checked_mul(1000)?;
    // i64::MIN and i64::MAX stand for -infinity and infinity: no id means either.
    if us == i64::MIN || us == i64::MAX {
        return None;
    }
    TimestampWithTimeZone::try_from(us).ok()
}

fn decode(layout: &Layout, id: i64) -> Result<(TimestampWithTimeZone, i32, i32), Error> {
    let parts = layout.decode(id)?;
    let ts = to_timestamptz(parts.unix_ms).ok_or(Error::TimeOutOfRange { id })?;
    // Both fields are at most 24 bits wide (layout::MAX_FIELD_BITS), so they fit an integer.
    Ok((ts, parts.machine_id as i32, parts.sequence as i32))
}

/// STABLE, not IMMUTABLE: the answer depends on the server's layout (snowflake.epoch and the bit
/// settings), which can differ after a restart. IMMUTABLE would let an index expression or a cached
/// plan keep a decoding made under another layout.
#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_decode(id: i64) -> pgrx::composite_type!('static, "snowflake_parts") {
    let (ts, machine_id, sequence) = startup::layout()
        .and_then(|layout| decode(layout, id))
        .unwrap_or_else(|e| e.raise());
    let mut row = PgHeapTuple::new_composite_type("snowflake_parts")
        .unwrap_or_else(|e| error!("type snowflake_parts is missing: {e}"));
    for result in [row.set_by_name("ts", ts), row.set_by_name("machine_id", machine_id), row.set_by_name("sequence", sequence)] {
        result.unwrap_or_else(|e| error!("type snowflake_parts has changed: {e}"));
    }
    row
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
