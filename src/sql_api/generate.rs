//! `snowflake_nextval()`, the column DEFAULT.

use super::raise;
use crate::error::Error;
use crate::pg_host::PgHost;
use crate::{gucs, shmem, startup};
use pgrx::prelude::*;

/// The next id of this server: strictly greater than every id it issued before, in any backend.
#[inline]
fn nextval() -> Result<i64, Error> {
    let generator = startup::generator()?;
    let shared = shmem::shared().ok_or(Error::NotPreloaded)?;
    // SAFETY: a plain read of recovery state; cheap once recovery has ended in this backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(Error::HotStandby);
    }
    generator.next_id(shared, &mut PgHost, gucs::max_clock_wait_ms)
}

/// VOLATILE: every call returns a new value. PARALLEL SAFE: the state lives in shared memory, so a
/// parallel worker issues from the same generator as its leader.
#[pg_extern(volatile, parallel_safe)]
fn snowflake_nextval() -> i64 {
    raise(nextval())
}
