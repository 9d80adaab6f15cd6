//! What every backend shares, as pure Rust: the generator's state word, the durable high-water
//! mark and the statistics. The PostgreSQL shell places one of these in shared memory
//! (`src/postgres/shared_memory.rs`); the tests use a plain one. Fields written on every id sit on their own cache line, away from the ones
//! read on every new tick and from the statistics written only on slow paths.

use crate::claim_status::ClaimStatus;
use crate::layout::Layout;
// The model check (tests/loom.rs, built with `--cfg loom`) runs this very code over loom's atomics,
// which explore every interleaving; every other build uses the standard ones.
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicU8};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicU8};

/// Written on every id.
#[repr(C, align(64))]
pub struct Hot {
    /// `(last_tick + 1) << sequence_bits | last_sequence`, 0 while nothing was issued; see
    /// `generator`. The tick is one up so that a fresh state is no tick at all: tick 0 is issued
    /// like any other, under a durable mark.
    pub state: AtomicU64,
    /// Ids issued since the statistics were reset by processes without a counter of their own
    /// (PostgreSQL's backends count in `process_counters`, on lines of their own; the tests count
    /// here).
    pub issued: AtomicU64,
    /// The machine id this server holds and until when: `until_tick << machine_bits | leased id`
    /// (see [`grant`]). Read on every id, beside `state`: an id is issued only on a tick before
    /// `until_tick`, under the generator's own machine id OR the leased one. A machine id set by
    /// hand (or read from a pod index) is held for ever ([`grant::FOREVER`], leased bits 0); one
    /// leased from etcd is held until the local deadline of its lease, and 0 means held by nobody.
    pub grant: GrantCell,
}

/// The grant word and how many times one was published: a backend's attempt confirms that no
/// grant was published since it loaded its own, not only that the word reads the same. A word
/// can be published again exactly as it was (a release whose final mark a clock stepped back
/// kept below the grant's end, then a claim of the same id with a deadline in the same tick; or
/// any two grants of one id near the end of the timestamp field, where every deadline is the
/// last tick), and a backend that took the state word after the release must not issue then
/// (issue 56's ABA: `tests/grant_aba.rs`).
///
/// The word is stored before the generation is raised, and read after it: a reader that sees a
/// generation sees that publication's word or a later one. Every change goes through
/// [`GrantCell::publish`] (the postmaster at start, then the machine-id worker).
#[repr(C)]
pub struct GrantCell {
    word: AtomicU64,
    generation: AtomicU64,
}

/// A grant as a backend loaded it: the word and its generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantSeen {
    pub word: u64,
    generation: u64,
}

impl GrantCell {
    pub fn new(word: u64) -> GrantCell {
        GrantCell { word: AtomicU64::new(word), generation: AtomicU64::new(0) }
    }

    /// Publishes `word`: every attempt that loaded an earlier grant fails its confirmation from
    /// now on, whatever the words (the same word again too: an attempt under way starts over, a
    /// gap; no publisher needs to know what the word was).
    pub fn publish(&self, word: u64) {
        self.word.store(word, Release);
        self.generation.fetch_add(1, Release);
    }

    /// The grant in force, with its generation (an attempt's first step).
    #[inline(always)]
    pub fn seen(&self) -> GrantSeen {
        let generation = self.generation.load(Acquire);
        GrantSeen { word: self.word.load(Acquire), generation }
    }

    /// Whether no grant was published since `seen` was loaded: a state word taken under `seen`
    /// whose compare-and-swap came after a later publication (or after anything the worker did
    /// behind one: a release's read of the state word, a new grant's `use_up_to`, its backends)
    /// sees that publication's generation here (the compare-and-swap acquires, and every change
    /// of the state word is a read-modify-write).
    #[inline(always)]
    pub fn unchanged_since(&self, seen: GrantSeen) -> bool {
        self.generation.load(Acquire) == seen.generation
    }

    /// The word alone: what reports it (the status, an error's message), and the negative
    /// control that confirms by the word (`GrantCheck::Word`).
    pub fn word(&self) -> u64 {
        self.word.load(Acquire)
    }
}

/// The grant word of [`Hot::grant`], as plain arithmetic.
pub mod grant {
    /// Held for ever, by the generator's own machine id: any tick of any layout is below it, and
    /// the leased bits are 0 (the widest machine field is 24 bits).
    pub const FOREVER: u64 = u64::MAX << 24;
    /// Held by nobody: no tick is below 0.
    pub const NOBODY: u64 = 0;

    /// The word for `machine_id` (which fits `machine_bits`) held while the clock's tick is below
    /// `until_tick`.
    pub fn held(machine_id: i64, until_tick: i64, machine_bits: u32) -> u64 {
        ((until_tick.max(0) as u64).min(u64::MAX >> machine_bits) << machine_bits) | machine_id as u64
    }

    /// (machine id, until tick) of a word other than [`FOREVER`].
    pub fn parts(word: u64, machine_bits: u32) -> (i64, i64) {
        ((word & ((1 << machine_bits) - 1)) as i64, (word >> machine_bits) as i64)
    }

    /// The leased machine id ids are issued under at `now_tick`, if any: the word's id while the
    /// tick is below its end. A word whose lease's deadline has passed (etcd unreachable, no
    /// renewal) holds nothing, though the worker has not taken it away yet.
    pub fn in_effect(word: u64, machine_bits: u32, now_tick: i64) -> Option<i64> {
        let (id, until) = parts(word, machine_bits);
        (word != NOBODY && now_tick < until).then_some(id)
    }
}

/// The durable high-water mark: no id this server issued or will issue without writing a new mark
/// first carries a tick above `tick`.
#[repr(C, align(64))]
pub struct Mark {
    /// The mark, in ticks of the layout; -1 when none is durable yet.
    pub tick: AtomicI64,
    /// The same mark in milliseconds since 1970 (as written in the file); -1 when none.
    pub unix_ms: AtomicI64,
    /// The mark found on disk when shared memory was set up: ids wait for the clock to pass it.
    pub restart_tick: AtomicI64,
    /// The mark recorded for a machine id this server claimed (taken as used: `use_up_to`), -1
    /// when none: waiting for the clock to pass it, however far ahead the holder before wrote
    /// it, is no clock rollback of this server's.
    pub claimed_tick: AtomicI64,
    /// The process id of the one process writing a new mark; 0 when none (see `mark_writer`).
    pub writer: AtomicI32,
    /// What that writer is doing: a `mark_writer::WriteStep`, 0 when none.
    pub writer_step: AtomicU8,
    /// The mark on disk could not be read at start: nothing may be issued.
    pub unreadable: AtomicBool,
    /// When this process's server last wrote a mark, by the wall clock (ms since 1970) and by
    /// the monotonic clock (us); -1 until the first write since start. The lease compares the
    /// two to tell a wall clock stepped forward from time that passed.
    pub written_wall_ms: AtomicI64,
    pub written_mono_us: AtomicI64,
    /// How long the last mark write took (ms): the next lease is at least twice as long.
    pub last_write_ms: AtomicI64,
}

/// Slow-path counters; relaxed atomics, never a lock.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Stats {
    pub sequence_waits: AtomicU64,
    pub clock_rollbacks: AtomicU64,
    pub largest_rollback_ms: AtomicI64,
    pub wait_us: AtomicU64,
    pub mark_writes: AtomicU64,
    /// Calls that found the mark expired and waited for a new one to be written.
    pub mark_waits: AtomicU64,
    /// Calls that waited for another process's mark write.
    pub writer_waits: AtomicU64,
    /// Calls that gave up waiting for a durable mark after snowflake.max_mark_wait (another
    /// process's write, or writes of their own that each took longer than their lease).
    pub mark_wait_timeouts: AtomicU64,
    /// Writer's flags taken over from a process that had ended without releasing it.
    pub writer_takeovers: AtomicU64,
    /// Mark writes that waited for the synchronous standbys, and those that gave up.
    pub standby_waits: AtomicU64,
    pub standby_wait_timeouts: AtomicU64,
    /// Calls that waited for a clock behind the last issued tick (or one that did not advance), and
    /// those that gave up (snowflake.max_clock_wait).
    pub clock_waits: AtomicU64,
    pub clock_wait_timeouts: AtomicU64,
    /// The last tick at which a rollback was counted, so that one step back is one event.
    pub rollback_tick: AtomicI64,
    /// When the last rollback WARNING was logged (monotonic ms), for rate limiting.
    pub last_warning_ms: AtomicI64,
    /// When the statistics were last reset, in milliseconds since 1970.
    pub reset_unix_ms: AtomicI64,
    /// The sum of the per-process counters at the last reset (they are never zeroed: each is
    /// written by its own process only).
    pub per_process_at_reset: AtomicU64,
}

#[repr(C)]
pub struct SharedState {
    pub hot: Hot,
    pub mark: Mark,
    pub stats: Stats,
    /// A change of layout that was not accepted: nothing may be issued (see [`LayoutCell`]).
    pub refused: LayoutCell,
    /// The old layout of a change that this start accepted (`snowflake.accept_layout_change`):
    /// a lease of that layout replayed after the start (crash recovery of the records written
    /// before it) is the same change, accepted, and refuses nothing.
    pub accepted: LayoutCell,
    /// The lease of a machine id leased from etcd: what `snowflake_machine_id_status()` shows.
    pub claim: ClaimStatus,
}

/// A layout in shared memory, or none. `refused`: the layout the ids on record were issued under,
/// when this server's differs and the change was not accepted: the mark on disk at start
/// (`start_check`), then each lease replayed from the WAL (`lifecycle::replay`: the latest layout
/// on record decides). `accepted`: the old layout of a change accepted at start. Written by one
/// process at a time (the postmaster at start, the startup process in recovery) and read by any,
/// through a sequence counter that is odd while the fields change: a reader retries until it reads
/// them unchanged.
#[repr(C)]
#[derive(Default)]
pub struct LayoutCell {
    seq: AtomicU32,
    set: AtomicBool,
    epoch_ms: AtomicI64,
    tick_ms: AtomicI64,
    /// machine_bits << 8 | sequence_bits.
    bits: AtomicU32,
}

impl LayoutCell {
    /// The layout held, if any.
    pub fn layout(&self) -> Option<Layout> {
        loop {
            let before = self.seq.load(Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let (set, epoch_ms, tick_ms, bits) = (
                self.set.load(Acquire),
                self.epoch_ms.load(Acquire),
                self.tick_ms.load(Acquire),
                self.bits.load(Acquire),
            );
            if self.seq.load(Acquire) == before {
                return set.then(|| Layout::new(epoch_ms, tick_ms, bits >> 8, bits & 0xff).ok()).flatten();
            }
        }
    }

    /// Holds `old` (for `refused`: refuses generation because the ids on record were issued
    /// under it), or (`None`) nothing (lifts the refusal: the latest record is of this server's
    /// layout, or accepted).
    pub fn set(&self, old: Option<&Layout>) {
        let seq = self.seq.load(Relaxed);
        self.seq.store(seq.wrapping_add(1), Release);
        if let Some(old) = old {
            self.epoch_ms.store(old.epoch_ms(), Release);
            self.tick_ms.store(old.tick_ms(), Release);
            self.bits.store(old.machine_bits() << 8 | old.sequence_bits(), Release);
        }
        self.set.store(old.is_some(), Release);
        self.seq.store(seq.wrapping_add(2), Release);
    }
}

/// A copy of the counters, for `snowflake_stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub issued: u64,
    pub sequence_waits: u64,
    pub clock_rollbacks: u64,
    pub largest_rollback_ms: i64,
    pub wait_us: u64,
    pub mark_writes: u64,
    pub mark_waits: u64,
    pub writer_waits: u64,
    pub mark_wait_timeouts: u64,
    pub writer_takeovers: u64,
    pub standby_waits: u64,
    pub standby_wait_timeouts: u64,
    pub clock_waits: u64,
    pub clock_wait_timeouts: u64,
    pub reset_unix_ms: i64,
}

impl SharedState {
    /// The shared state of a server that starts with `mark`, the mark read from disk as (tick,
    /// milliseconds since 1970), if any: its first id must carry a later tick. The mark's tick is
    /// taken as used up, so that no id is issued on it.
    pub fn starting_at(mark: Option<(i64, i64)>, sequence_bits: u32, now_unix_ms: i64) -> SharedState {
        let (state, tick, unix_ms) = match mark {
            Some((t, ms)) if t >= 0 => (used_up(t, sequence_bits), t, ms),
            _ => (0, -1, -1),
        };
        SharedState {
            hot: Hot { state: AtomicU64::new(state), issued: AtomicU64::new(0), grant: GrantCell::new(grant::FOREVER) },
            mark: Mark {
                tick: AtomicI64::new(tick),
                unix_ms: AtomicI64::new(unix_ms),
                restart_tick: AtomicI64::new(tick),
                claimed_tick: AtomicI64::new(-1),
                writer: AtomicI32::new(0),
                writer_step: AtomicU8::new(0),
                unreadable: AtomicBool::new(false),
                written_wall_ms: AtomicI64::new(-1),
                written_mono_us: AtomicI64::new(-1),
                last_write_ms: AtomicI64::new(0),
            },
            stats: Stats {
                rollback_tick: AtomicI64::new(-1),
                last_warning_ms: AtomicI64::new(i64::MIN / 2),
                reset_unix_ms: AtomicI64::new(now_unix_ms),
                ..Stats::default()
            },
            refused: LayoutCell::default(),
            accepted: LayoutCell::default(),
            claim: ClaimStatus::default(),
        }
    }

    /// Raises the mark to (`tick`, `unix_ms`) if it is lower, and takes every tick up to `tick` as
    /// used, as a restart from that mark does: a server that learns of a mark another server
    /// wrote (a standby replaying its primary's lease) issues nothing at or below it. Never
    /// lowers anything. Returns whether the mark rose.
    pub fn raise_to_mark(&self, tick: i64, unix_ms: i64, sequence_bits: u32) -> bool {
        if tick < 0 {
            return false;
        }
        self.hot.state.fetch_max(used_up(tick, sequence_bits), AcqRel);
        self.mark.restart_tick.fetch_max(tick, Relaxed);
        self.mark.tick.fetch_max(tick, Release);
        self.mark.unix_ms.fetch_max(unix_ms, Relaxed) < unix_ms
    }

    /// Takes every tick up to `tick` as used (the high-water mark recorded for a machine id this
    /// server now holds), as a restart above that mark does: waiting for the clock to pass it is
    /// no clock rollback. The state word never comes down.
    pub fn use_up_to(&self, tick: i64, sequence_bits: u32) {
        if tick >= 0 && self.hot.state.fetch_max(used_up(tick, sequence_bits), AcqRel) < used_up(tick, sequence_bits) {
            self.mark.restart_tick.fetch_max(tick, Relaxed);
            self.mark.claimed_tick.fetch_max(tick, Relaxed);
        }
    }

    /// The tick of the last id issued (or taken as used up at start), if any.
    pub fn last_tick(&self, sequence_bits: u32) -> Option<i64> {
        let state = self.hot.state.load(Acquire);
        (state != 0).then(|| (state >> sequence_bits) as i64 - 1)
    }

    /// The start of the tick of the last id issued, in milliseconds since 1970, if any was issued.
    pub fn last_issued_ms(&self, layout: &Layout) -> Option<i64> {
        layout.tick_start_ms(self.last_tick(layout.sequence_bits())?)
    }

    /// As [`SharedState::last_issued_ms`], read with a read-modify-write that changes nothing, so
    /// that it is the latest word of all (a plain load may return an older one): what a
    /// release's final mark must cover, read once the grant is taken away.
    pub fn last_issued_ms_latest(&self, layout: &Layout) -> Option<i64> {
        let state = self.hot.state.fetch_or(0, AcqRel);
        (state != 0).then(|| layout.tick_start_ms((state >> layout.sequence_bits()) as i64 - 1)).flatten()
    }

    /// The counters when no process counts on its own (the tests).
    #[cfg(test)]
    pub fn stats(&self) -> StatsSnapshot {
        self.stats_with(0)
    }

    /// The counters, with `per_process` ids counted by the processes themselves (their sum now).
    pub fn stats_with(&self, per_process: u64) -> StatsSnapshot {
        let s = &self.stats;
        StatsSnapshot {
            issued: self.hot.issued.load(Relaxed) + per_process.wrapping_sub(s.per_process_at_reset.load(Relaxed)),
            sequence_waits: s.sequence_waits.load(Relaxed),
            clock_rollbacks: s.clock_rollbacks.load(Relaxed),
            largest_rollback_ms: s.largest_rollback_ms.load(Relaxed),
            wait_us: s.wait_us.load(Relaxed),
            mark_writes: s.mark_writes.load(Relaxed),
            mark_waits: s.mark_waits.load(Relaxed),
            writer_waits: s.writer_waits.load(Relaxed),
            mark_wait_timeouts: s.mark_wait_timeouts.load(Relaxed),
            writer_takeovers: s.writer_takeovers.load(Relaxed),
            standby_waits: s.standby_waits.load(Relaxed),
            standby_wait_timeouts: s.standby_wait_timeouts.load(Relaxed),
            clock_waits: s.clock_waits.load(Relaxed),
            clock_wait_timeouts: s.clock_wait_timeouts.load(Relaxed),
            reset_unix_ms: s.reset_unix_ms.load(Relaxed),
        }
    }

    /// Zeroes the counters (not the state, the mark or the rate limit of warnings); `per_process`
    /// is the sum of the per-process counters now.
    pub fn reset_stats(&self, now_unix_ms: i64, per_process: u64) {
        let s = &self.stats;
        self.hot.issued.store(0, Relaxed);
        s.per_process_at_reset.store(per_process, Relaxed);
        for c in [
            &s.sequence_waits,
            &s.clock_rollbacks,
            &s.wait_us,
            &s.mark_writes,
            &s.mark_waits,
            &s.writer_waits,
            &s.mark_wait_timeouts,
            &s.writer_takeovers,
            &s.standby_waits,
            &s.standby_wait_timeouts,
            &s.clock_waits,
            &s.clock_wait_timeouts,
        ] {
            c.store(0, Relaxed);
        }
        s.largest_rollback_ms.store(0, Relaxed);
        s.reset_unix_ms.store(now_unix_ms, Relaxed);
    }
}

/// The state word of `tick` with its sequence used up: nothing more can be issued on that tick or
/// an earlier one (the tick is held one up: see [`Hot::state`]).
fn used_up(tick: i64, sequence_bits: u32) -> u64 {
    (((tick + 1) as u64) << sequence_bits) | ((1_u64 << sequence_bits) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_past_its_deadline_holds_no_machine_id() {
        let word = grant::held(5, 1_000, 10);
        assert_eq!(grant::in_effect(word, 10, 999), Some(5));
        assert_eq!(grant::in_effect(word, 10, 1_000), None, "the deadline's tick is not issued on");
        assert_eq!(grant::in_effect(grant::held(0, 1_000, 10), 10, 5), Some(0), "machine id 0 is an id");
        assert_eq!(grant::in_effect(grant::NOBODY, 10, 0), None);
    }

    #[test]
    fn a_restart_above_a_mark_starts_with_that_tick_used_up() {
        let s = SharedState::starting_at(Some((1000, 1234)), 12, 0);
        assert_eq!(s.hot.state.load(Relaxed), (1001 << 12) | 4095);
        assert_eq!(s.last_tick(12), Some(1000));
        assert_eq!((s.mark.tick.load(Relaxed), s.mark.unix_ms.load(Relaxed)), (1000, 1234));
        let fresh = SharedState::starting_at(None, 12, 0);
        assert_eq!((fresh.hot.state.load(Relaxed), fresh.mark.tick.load(Relaxed)), (0, -1));
        assert_eq!(fresh.last_tick(12), None);
    }

    #[test]
    fn a_mark_learnt_from_elsewhere_is_taken_as_used_up_and_never_lowers_anything() {
        let s = SharedState::starting_at(Some((1000, 1234)), 12, 0);
        assert!(s.raise_to_mark(2000, 2345, 12));
        assert_eq!(s.last_tick(12), Some(2000), "every tick up to the mark is used");
        assert_eq!((s.mark.tick.load(Relaxed), s.mark.unix_ms.load(Relaxed)), (2000, 2345));
        assert!(!s.raise_to_mark(1500, 1600, 12), "a lower mark changes nothing");
        assert_eq!(
            (s.last_tick(12), s.mark.tick.load(Relaxed), s.mark.unix_ms.load(Relaxed)),
            (Some(2000), 2000, 2345)
        );
        let fresh = SharedState::starting_at(None, 12, 0);
        assert!(fresh.raise_to_mark(0, 10, 12));
        assert_eq!(fresh.last_tick(12), Some(0));
    }

    #[test]
    fn hot_fields_have_a_cache_line_of_their_own() {
        assert_eq!(std::mem::align_of::<Hot>(), 64);
        assert_eq!(std::mem::offset_of!(SharedState, mark) % 64, 0);
        assert!(std::mem::offset_of!(SharedState, mark) >= 64);
    }

    #[test]
    fn reset_zeroes_the_counters_only() {
        let s = SharedState::starting_at(Some((5, 5)), 12, 0);
        s.hot.issued.store(9, Relaxed);
        s.stats.clock_rollbacks.store(2, Relaxed);
        s.reset_stats(77, 0);
        assert_eq!(s.stats(), StatsSnapshot { reset_unix_ms: 77, ..StatsSnapshot::default() });
        assert_eq!(s.hot.state.load(Relaxed), (6 << 12) | 4095);
    }

    #[test]
    fn ids_counted_by_the_processes_add_up_from_the_last_reset() {
        let s = SharedState::starting_at(None, 12, 0);
        s.hot.issued.store(3, Relaxed);
        assert_eq!(s.stats_with(40).issued, 43);
        s.reset_stats(1, 40);
        assert_eq!(s.stats_with(40).issued, 0);
        s.hot.issued.store(1, Relaxed);
        assert_eq!(s.stats_with(45).issued, 6);
    }
}
