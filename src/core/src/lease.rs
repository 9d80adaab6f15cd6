//! The durable high-water mark as a lease on time: the mark is written about a second ahead of
//! the clock, so that a new tick rarely has to wait for the disk, and ids past the mark are issued
//! only once a new mark is durable. The background worker renews it while ids are being issued;
//! a backend that finds it expired renews it itself. One writer at a time; the others keep issuing
//! under the old mark, or wait briefly for the new one.

use crate::error::Error;
use crate::host::{Clock, Events, MarkStore, Processes, Settings};
use crate::layout::Layout;
use crate::mark_writer::{self, Taken, WriteStep};
use crate::state::SharedState;
use std::sync::atomic::Ordering::{Relaxed, Release};

/// How far ahead of the clock a new mark is written, at least.
pub const LEASE_MS: i64 = 1000;
/// At most: a mark write that took longer than a lease would publish a mark already past, so the
/// next lease is twice as long as the last write took, up to this (a restart after a crash waits
/// for the clock to pass the mark: at most this long).
pub const MAX_LEASE_MS: i64 = 10_000;
/// The worker renews the mark when less than this is left (or twice the last write's time) and
/// ids are being issued.
pub const RENEW_BELOW_MS: i64 = 600;

/// The length of the next lease: a second, or twice as long as the last mark write took.
fn lease_ms(shared: &SharedState) -> i64 {
    LEASE_MS.max(2 * shared.mark.last_write_ms.load(Relaxed)).min(MAX_LEASE_MS)
}

/// What [`cover`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cover {
    /// A new mark is published, or the mark already reached past `now + LEASE_MS`.
    Done,
    /// Another process (`pid`, at `step`) is writing one: pause and look again.
    Busy { pid: i32, step: Option<WriteStep> },
}

/// Writes a new mark a lease ahead of `now_ms`, durably, then publishes it, unless another process
/// is writing one. The writer's flag is this process's until the write ends, however it ends: it
/// is released when this returns or unwinds (a cancelled wait in PostgreSQL), by the host when the
/// process exits without unwinding, and taken over by the next writer if its holder is gone.
pub fn cover<H: MarkStore + Processes + Events + Clock + Settings>(
    shared: &SharedState,
    layout: &Layout,
    now_ms: i64,
    host: &mut H,
) -> Result<Cover, Error> {
    let mark = &shared.mark;
    if mark.unreadable.load(Relaxed) {
        return Err(Error::MarkUnreadable);
    }
    if let Some(old) = shared.refused.layout() {
        return Err(Error::LayoutChanged { old, new: *layout });
    }
    let me = host.this_process();
    let writer = match mark_writer::try_take(shared, me, |pid| host.process_exists(pid)) {
        Taken::Mine { writer, from } => {
            if let Some(pid) = from {
                host.writer_taken_over(pid);
            }
            writer
        }
        Taken::Busy { pid, step } => return Ok(Cover::Busy { pid, step }),
    };
    let new_ms = now_ms + lease_ms(shared);
    if new_ms <= mark.unix_ms.load(Relaxed) {
        // The clock went back: the mark already reaches further. Never lower it.
        return Ok(Cover::Done);
    }
    let mono_us = host.monotonic_us() as i64;
    check_jump(shared, now_ms, mono_us, host.limits().max_clock_jump_ms)?;
    if let Err(e) = host.persist_mark(new_ms, &writer) {
        if matches!(e, Error::StandbysDidNotConfirm { .. }) {
            shared.stats.standby_wait_timeouts.fetch_add(1, Relaxed);
        }
        return Err(e);
    }
    mark.last_write_ms.store((host.monotonic_us() as i64 - mono_us) / 1000, Relaxed);
    mark.unix_ms.fetch_max(new_ms, Relaxed);
    let tick = layout.tick_of_time(new_ms).unwrap_or(layout.max_tick());
    mark.tick.fetch_max(tick, Release);
    mark.written_wall_ms.store(now_ms, Relaxed);
    mark.written_mono_us.store(mono_us, Relaxed);
    shared.stats.mark_writes.fetch_add(1, Relaxed);
    Ok(Cover::Done)
}

/// The guard against a wall clock stepped far forward while the server runs (a host whose clock
/// was wrong until NTP stepped it): the wall clock may not have moved more than `limit_ms` beyond
/// the time that passed by the monotonic clock since the last mark this server wrote. Before the
/// first write since start there is nothing to compare: a server down for a week starts a week
/// past its mark, rightly.
fn check_jump(shared: &SharedState, now_ms: i64, mono_us: i64, limit_ms: u64) -> Result<(), Error> {
    let (wall_ms, then_us) = (shared.mark.written_wall_ms.load(Relaxed), shared.mark.written_mono_us.load(Relaxed));
    if limit_ms == 0 || then_us < 0 {
        return Ok(());
    }
    let jump_ms = (now_ms - wall_ms) - (mono_us - then_us) / 1000;
    if jump_ms > limit_ms as i64 {
        return Err(Error::ClockJumped { jump_ms, limit_ms: limit_ms as i64 });
    }
    Ok(())
}

/// The mark to leave on disk when the server stops cleanly, if it should change: the start of the
/// last tick issued on. Every process that could issue an id is gone by then, so nothing can be
/// above it, and the next start need not wait out the rest of the lease (up to [`LEASE_MS`]) before
/// its first id. `None`: nothing to lower (no id issued since start, or the mark is already that low) or the
/// mark could not be read at start (then the file is left as it is).
pub fn final_mark(shared: &SharedState, layout: &Layout) -> Option<i64> {
    if shared.mark.unreadable.load(Relaxed) {
        return None;
    }
    // Nothing issued since start (the state word is still the mark's tick used up): the file
    // already holds the mark as the last stop left it. Lowering it to the start of that tick
    // would, across an accepted change of layout, lower it below ids of the other layout.
    let last_tick = shared.last_tick(layout.sequence_bits())?;
    if last_tick <= shared.mark.restart_tick.load(Relaxed) {
        return None;
    }
    let last_ms = layout.tick_start_ms(last_tick)?;
    (last_ms < shared.mark.unix_ms.load(Relaxed)).then_some(last_ms)
}

/// The worker's periodic check: renew the mark if ids were issued within the last lease and less
/// than [`RENEW_BELOW_MS`] of it is left. An idle server writes nothing.
pub fn renew_if_due<H: MarkStore + Processes + Events + Clock + Settings>(
    shared: &SharedState,
    layout: &Layout,
    now_ms: i64,
    host: &mut H,
) -> Result<bool, Error> {
    let mark_ms = shared.mark.unix_ms.load(Relaxed);
    let Some(last_ms) = shared.last_issued_ms(layout) else { return Ok(false) };
    let active = last_ms >= now_ms - LEASE_MS;
    let renew_below_ms = RENEW_BELOW_MS.max(2 * shared.mark.last_write_ms.load(Relaxed));
    if !active || mark_ms - now_ms >= renew_below_ms || shared.mark.unreadable.load(Relaxed) {
        return Ok(false);
    }
    Ok(cover(shared, layout, now_ms, host)? == Cover::Done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::EPOCH_2025;
    use crate::simulation::test_host::{fresh, generator, FakeHost};

    #[test]
    fn the_mark_is_never_lowered() {
        let g = generator(0, 1);
        let state = fresh();
        let mut host = FakeHost::at(EPOCH_2025 + 5_000);
        g.next_id(&state, &mut host).unwrap();
        host.step_wall_ms(-3_000);
        assert_eq!(cover(&state, g.layout(), host.now_ms(), &mut host), Ok(Cover::Done));
        assert_eq!(host.marks, vec![EPOCH_2025 + 6_000]);
        assert_eq!(state.mark.unix_ms.load(Relaxed), EPOCH_2025 + 6_000);
    }

    /// The store's own bounded wait (synchronous standbys that do not confirm) ends the call with
    /// its error, counted; the flag is released.
    #[test]
    fn standbys_that_do_not_confirm_end_the_write_and_are_counted() {
        let g = generator(0, 1);
        let state = fresh();
        let mut host = FakeHost::at(EPOCH_2025 + 5_000);
        host.persist_error = Some(Error::StandbysDidNotConfirm { standby_names: "nosuch".into(), limit_ms: 5000 });
        let e = cover(&state, g.layout(), EPOCH_2025 + 5_000, &mut host);
        assert_eq!(e, Err(Error::StandbysDidNotConfirm { standby_names: "nosuch".into(), limit_ms: 5000 }));
        let stats = state.stats();
        assert_eq!((stats.standby_waits, stats.standby_wait_timeouts, stats.mark_writes), (1, 1, 0));
        assert_eq!((state.mark.writer.load(Relaxed), state.mark.tick.load(Relaxed)), (0, -1));
    }

    /// A store that unwinds (in PostgreSQL: a cancel while waiting for a synchronous standby)
    /// leaves no mark published and the writer's flag released, so later writes are not blocked.
    #[test]
    fn a_store_that_unwinds_releases_the_writer() {
        let g = generator(0, 1);
        let state = fresh();
        let mut host = FakeHost::at(EPOCH_2025 + 5_000);
        host.persist_panics = true;
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cover(&state, g.layout(), EPOCH_2025 + 5_000, &mut host)
        }));
        assert!(unwound.is_err());
        assert_eq!(state.mark.writer.load(Relaxed), 0, "the writer's flag is released");
        assert_eq!(state.mark.tick.load(Relaxed), -1, "no mark was published");
        let mut fine = FakeHost::at(EPOCH_2025 + 5_000);
        assert!(g.next_id(&state, &mut fine).is_ok(), "later writes go through");
    }

    #[test]
    fn the_worker_renews_only_while_ids_are_issued() {
        let g = generator(0, 1);
        let state = fresh();
        let mut host = FakeHost::at(EPOCH_2025 + 5_000);
        assert_eq!(renew_if_due(&state, g.layout(), host.now_ms(), &mut host), Ok(false), "idle: no write");
        g.next_id(&state, &mut host).unwrap(); // mark at +6000
        host.advance_us(300_000);
        g.next_id(&state, &mut host).unwrap();
        assert_eq!(renew_if_due(&state, g.layout(), host.now_ms(), &mut host), Ok(false), "700 ms left");
        host.advance_us(200_000);
        g.next_id(&state, &mut host).unwrap();
        assert_eq!(renew_if_due(&state, g.layout(), host.now_ms(), &mut host), Ok(true), "500 ms left");
        assert_eq!(host.marks, vec![EPOCH_2025 + 6_000, EPOCH_2025 + 6_500]);
        assert_eq!(state.mark.tick.load(Relaxed), 6_500);
        host.advance_us(5_000_000);
        assert_eq!(renew_if_due(&state, g.layout(), host.now_ms(), &mut host), Ok(false), "idle again");
    }

    #[test]
    fn a_clean_stop_leaves_the_mark_at_the_last_tick_so_the_next_start_need_not_wait() {
        let g = generator(0, 2);
        let state = fresh();
        let mut host = FakeHost::at(EPOCH_2025 + 5_000);
        assert_eq!(final_mark(&state, g.layout()), None, "nothing issued: the mark stays");
        for _ in 0..3 {
            g.next_id(&state, &mut host).unwrap();
        }
        host.advance_us(2_000);
        let last = g.next_id(&state, &mut host).unwrap();
        assert_eq!(host.marks, vec![EPOCH_2025 + 6_000], "a lease ahead");
        let final_ms = final_mark(&state, g.layout()).unwrap();
        assert_eq!(final_ms, EPOCH_2025 + 5_002, "the start of the last tick issued on");
        // Started again from that mark 1 ms later: the first id comes at once and is above all.
        let restarted = SharedState::starting_at(Some((g.layout().tick_of_time(final_ms).unwrap(), final_ms)), 12, 0);
        assert_eq!(final_mark(&restarted, g.layout()), None, "nothing issued since: already that low");
        host.advance_us(1_000);
        let (spins, slept) = (host.spins, host.slept_ms);
        assert!(g.next_id(&restarted, &mut host).unwrap() > last);
        assert_eq!((host.spins, host.slept_ms), (spins, slept), "no wait");
        // From the lease mark instead (a crash), the same start would wait out the lease.
        let crashed = SharedState::starting_at(Some((6_000, EPOCH_2025 + 6_000)), 12, 0);
        g.next_id(&crashed, &mut host).unwrap();
        assert!(host.slept_ms > slept + 900);
        // A mark that could not be read is never touched.
        crashed.mark.unreadable.store(true, Relaxed);
        assert_eq!(final_mark(&crashed, g.layout()), None);
    }
}
