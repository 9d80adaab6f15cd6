//! The durable high-water mark as a lease on time: the mark is written about a second ahead of
//! the clock, so that a new tick rarely has to wait for the disk, and ids past the mark are issued
//! only once a new mark is durable. The background worker renews it while ids are being issued;
//! a backend that finds it expired renews it itself. One writer at a time; the others keep issuing
//! under the old mark, or wait briefly for the new one.

use crate::error::Error;
use crate::host::MarkStore;
use crate::layout::Layout;
use crate::state::SharedState;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// How far ahead of the clock a new mark is written.
pub const LEASE_MS: i64 = 1000;
/// The worker renews the mark when less than this is left and ids are being issued.
pub const RENEW_BELOW_MS: i64 = 600;

/// Writes a new mark a lease ahead of `now_ms`, durably, then publishes it. `Ok(false)`: another
/// process is writing one; pause and look again.
pub fn cover<M: MarkStore>(shared: &SharedState, layout: &Layout, now_ms: i64, store: &mut M) -> Result<bool, Error> {
    let mark = &shared.mark;
    if mark.unreadable.load(Relaxed) {
        return Err(Error::MarkUnreadable);
    }
    if mark.writing.compare_exchange(false, true, Acquire, Relaxed).is_err() {
        return Ok(false);
    }
    let new_ms = now_ms + LEASE_MS;
    if new_ms <= mark.unix_ms.load(Relaxed) {
        // The clock went back: the mark already reaches further. Never lower it.
        mark.writing.store(false, Release);
        return Ok(true);
    }
    let written = store.persist_mark(new_ms);
    if written.is_ok() {
        mark.unix_ms.store(new_ms, Relaxed);
        let tick = layout.tick_of_time(new_ms).unwrap_or(layout.max_tick());
        mark.tick.fetch_max(tick, Release);
        shared.stats.mark_writes.fetch_add(1, Relaxed);
    }
    mark.writing.store(false, Release);
    written.map(|()| true).map_err(|reason| Error::MarkWrite { reason })
}

/// The mark to leave on disk when the server stops cleanly, if it should change: the start of the
/// last tick issued on. Every process that could issue an id is gone by then, so nothing can be
/// above it, and the next start need not wait out the rest of the lease (up to [`LEASE_MS`]) before
/// its first id. `None`: nothing to lower (no id issued, or the mark is already that low) or the
/// mark could not be read at start (then the file is left as it is).
pub fn final_mark(shared: &SharedState, layout: &Layout) -> Option<i64> {
    if shared.mark.unreadable.load(Relaxed) {
        return None;
    }
    let last_ms = shared.last_issued_ms(layout)?;
    (last_ms < shared.mark.unix_ms.load(Relaxed)).then_some(last_ms)
}

/// The worker's periodic check: renew the mark if ids were issued within the last lease and less
/// than [`RENEW_BELOW_MS`] of it is left. An idle server writes nothing.
pub fn renew_if_due<M: MarkStore>(
    shared: &SharedState,
    layout: &Layout,
    now_ms: i64,
    store: &mut M,
) -> Result<bool, Error> {
    let mark_ms = shared.mark.unix_ms.load(Relaxed);
    let Some(last_ms) = shared.last_issued_ms(layout) else { return Ok(false) };
    let active = last_ms >= now_ms - LEASE_MS;
    if !active || mark_ms - now_ms >= RENEW_BELOW_MS || shared.mark.unreadable.load(Relaxed) {
        return Ok(false);
    }
    cover(shared, layout, now_ms, store)
}
