//! `snowflake_nextval()`, the column DEFAULT.

use super::super::clock::wall_clock_ms;
use super::super::host::PgHost;
use super::super::{server_config, shared_memory};
use super::raise;
use pg_snowflake_core::Error;
use pgrx::prelude::*;

/// The next id of this server: strictly greater than every id it issued before, in any backend.
#[inline]
fn nextval() -> Result<i64, Error> {
    let generator = server_config::generator()?;
    // `let-else`, not `ok_or(Error)`: that builds an `Error` and drops it on every call.
    let Some(shared) = shared_memory::shared() else { return Err(Error::NotPreloaded) };
    // Test builds only: the negative control of issue 56's fix.
    #[cfg(feature = "fault_injection")]
    if super::super::settings::fault_stale_grant() {
        return generator.with_stale_grant(true).nextval(shared, &mut PgHost).map_err(name_the_source);
    }
    generator.nextval(shared, &mut PgHost).map_err(name_the_source)
}

/// A refusal for want of a leased id names where it is leased from (the core does not know); a
/// clock behind the mark another holder recorded in etcd names that holder.
#[cold]
fn name_the_source(e: Error) -> Error {
    match (e, server_config::etcd()) {
        (Error::MachineIdNotHeld { last_error, lapsed, trouble, .. }, Some(etcd)) => {
            Error::MachineIdNotHeld { source: etcd.describe(), last_error, lapsed, trouble }
        }
        (Error::ClockBehind { behind_ms, waited_ms, .. }, Some(_)) => {
            // The mark waited for is etcd's when it is at least where the clock must get to
            // (else it is this server's own, from its mark file or its WAL), give or take a tick and
            // the time since the refusal was measured.
            let inherited = shared_memory::shared().and_then(|s| s.claim.inherited());
            let unit = server_config::layout().map_or(1, |l| l.tick_ms());
            let mark_from = inherited
                .filter(|(mark_ms, _)| *mark_ms + unit + 1_000 >= wall_clock_ms() + behind_ms)
                .map(|(_, from)| from);
            Error::ClockBehind { behind_ms, waited_ms, mark_from }
        }
        (e, _) => e,
    }
}

/// VOLATILE: every call returns a new value. PARALLEL SAFE: the state lives in shared memory, so a
/// parallel worker issues from the same generator as its leader.
#[pg_extern(volatile, parallel_safe)]
fn snowflake_nextval() -> i64 {
    raise(nextval())
}
