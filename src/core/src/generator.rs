//! The generator's state machine, as pure Rust over shared atomics and an injected clock.
//!
//! The whole state is one `u64`: `(last_tick + 1) << sequence_bits | last_sequence`, 0 while
//! nothing was issued (see [`crate::state`]). It only ever grows, and an id is that word with the
//! tick taken down by one and the machine id slotted in, so ids grow with it. Issuing is one clock
//! read and one compare-and-swap; nobody holds a lock, so no backend waits on another.
//!
//! - The clock moved on (or nothing was issued yet): the word becomes `(now_tick + 1) <<
//!   sequence_bits` (sequence 0), provided the durable high-water mark covers `now_tick`; if not, a new mark is written first ([`lease`]).
//! - Same tick, or the clock is behind the last tick: the word is incremented (next sequence on the
//!   last used tick), until that tick's sequence is used up.
//! - Used up: the caller must wait for the clock to pass the last tick, re-reading it
//!   ([`Waiter::spin`]), and gives up after `max_clock_wait` if the clock is behind.
//!
//! [`lease`]: crate::lease

use crate::error::Error;
use crate::host::{Host, Recovery};
#[cfg(doc)]
use crate::host::{Limits, Waiter};
use crate::layout::{Layout, LayoutError};
use crate::lease;
use crate::state::{grant, GrantSeen, SharedState};
use std::num::NonZeroU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

/// At most one clock-rollback WARNING per this many milliseconds.
pub const WARNING_INTERVAL_MS: i64 = 10_000;
/// A clock read on one processor can trail one read a moment earlier on another by a few
/// microseconds (their counters are not perfectly in step, least of all in a VM): a reading this
/// little behind the tick another process issued on is not a clock step.
pub const CLOCK_SKEW_US: i64 = 250;

/// Test builds only (the feature `hold_points`): called by every attempt to issue between its load
/// of the grant and its load of the state word, so that a test can stall a backend there (the
/// shell pauses when `snowflake.fault_hold_at = 'grant_loaded'`). Not compiled into a real build.
#[cfg(feature = "hold_points")]
pub static HOLD_AFTER_GRANT: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// The checks of [`Generator::take`], each switched off in a test only (`mutant::with`), the
/// negative controls of the property test that the raw entry's plain case issues exactly what it
/// should (issue 61). In every other build `off` is a constant `false`: nothing is compiled in.
pub(crate) mod mutant {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Check {
        GrantCoversClock,
        Mark,
        SequenceLeft,
        Behind,
        GrantCoversTick,
    }

    #[cfg(test)]
    thread_local! {
        static OFF: std::cell::Cell<Option<Check>> = const { std::cell::Cell::new(None) };
    }

    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn off(check: Check) -> bool {
        OFF.with(|o| o.get() == Some(check))
    }

    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) const fn off(_: Check) -> bool {
        false
    }

    /// Runs `f` with `check` switched off in this thread.
    #[cfg(test)]
    pub(crate) fn with<T>(check: Check, f: impl FnOnce() -> T) -> T {
        OFF.with(|o| o.set(Some(check)));
        let t = f();
        OFF.with(|o| o.set(None));
        t
    }
}

/// Why no id could be issued at this clock reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// The sequence of `last_tick`, the last tick issued, is used up, and the clock reads
    /// `now_tick`: the same tick (the next is due shortly) or an earlier one (the clock is behind).
    Tick { last_tick: i64, now_tick: i64 },
    /// A new tick is due but the durable mark does not cover it yet.
    Mark,
    /// No machine id is held at this clock reading: a leased id not claimed yet, or whose lease
    /// reached its local deadline without a renewal.
    NotHeld,
}

/// A state word an attempt took under a grant, not yet an id: [`Generator::confirm`] makes it one
/// if that grant is still in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    word: u64,
    grant: GrantSeen,
    behind: bool,
}

/// How an attempt checks its grant. Only [`GrantCheck::Generation`] in a real build; the others
/// are the negative controls of the proofs (loom, the lifecycle simulation, `tests/grant_aba.rs`,
/// the stale_grant scenario), each the fix of issue 56 with a part switched off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantCheck {
    /// The grant covers the tick issued, and no grant was published between its load and the
    /// confirmation (its generation).
    Generation,
    /// As `Generation`, but the confirmation compares the grant's word only: a grant published
    /// again with the same word passes (the ABA).
    Word,
    /// As before issue 56: once, against the clock read, neither at the tick issued nor after
    /// the compare-and-swap.
    Stale,
}

/// The layout's numbers an attempt to issue uses, worked out once when the generator is made (a
/// backend inherits it from the postmaster): masks, shifts and the tick's length, never recomputed
/// per call (issue 61: recomputing them with variable shifts cost about 2 ns a call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Consts {
    epoch_ms: i64,
    /// The tick's length: a division by a `NonZeroU64` has no panic path; 1 takes none at all.
    tick_ms: NonZeroU64,
    max_tick: u64,
    sequence_bits: u32,
    sequence_mask: u64,
    machine_bits: u32,
    machine_mask: u64,
    /// Where the tick sits in an id: machine bits + sequence bits.
    tick_shift: u32,
    /// The generator's own machine id, in its place in an id.
    own_machine: u64,
}

impl Consts {
    fn of(layout: &Layout, machine_id: i64) -> Consts {
        Consts {
            epoch_ms: layout.epoch_ms(),
            tick_ms: NonZeroU64::new(layout.tick_ms() as u64).unwrap_or(NonZeroU64::MIN),
            max_tick: layout.max_tick() as u64,
            sequence_bits: layout.sequence_bits(),
            sequence_mask: layout.max_sequence() as u64,
            machine_bits: layout.machine_bits(),
            machine_mask: layout.max_machine_id() as u64,
            tick_shift: layout.machine_bits() + layout.sequence_bits(),
            own_machine: (machine_id as u64) << layout.sequence_bits(),
        }
    }

    /// The tick of a clock reading, if ids can be issued at it (after the epoch, within the
    /// field); wrapping arithmetic and an unsigned division only: no panic path.
    #[inline(always)]
    fn tick_now(&self, now_ms: i64) -> Option<u64> {
        let since = now_ms.wrapping_sub(self.epoch_ms);
        if since < 0 {
            return None;
        }
        let tick = if self.tick_ms == NonZeroU64::MIN { since as u64 } else { since as u64 / self.tick_ms };
        (tick <= self.max_tick).then_some(tick)
    }

    /// The id of a state word other than 0, under the leased machine id `leased` (0 when the
    /// machine id is the generator's own).
    #[inline(always)]
    fn id_of(&self, word: u64, leased: u64) -> i64 {
        let tick = (word >> self.sequence_bits).wrapping_sub(1);
        ((tick << self.tick_shift) | self.own_machine | (leased << self.sequence_bits) | (word & self.sequence_mask))
            as i64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generator {
    layout: Layout,
    k: Consts,
    machine_id: i64,
    /// [`GrantCheck::Generation`] in a real build; another in a negative control.
    check: GrantCheck,
}

impl Generator {
    pub fn new(layout: Layout, machine_id: i64) -> Result<Generator, LayoutError> {
        layout.check_machine_id(machine_id)?;
        Ok(Generator { layout, k: Consts::of(&layout, machine_id), machine_id, check: GrantCheck::Generation })
    }

    /// The generator with the fix of issue 56 switched off in part or whole: the negative
    /// control of the proofs that an id is issued only under a grant that covers its tick and
    /// was in force, unchanged, from its load to the id. Test builds only.
    pub fn with_grant_check(self, check: GrantCheck) -> Generator {
        Generator { check, ..self }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn machine_id(&self) -> i64 {
        self.machine_id
    }

    /// The id of a state word under the generator's own machine id (tests).
    #[cfg(test)]
    pub(crate) fn id_of_state(&self, word: u64) -> i64 {
        self.k.id_of(word, 0)
    }

    /// One attempt at the clock reading `now_ms`: an id and whether the clock read behind the
    /// tick it was issued on, a reason to wait, or an error that waiting cannot cure (`Err(Err)`).
    ///
    /// **One id, once, from every backend** (issue 56). The grant (the machine id and until
    /// when it is held) and the state word are two words: the lease's worker may switch the grant
    /// (a lease lost, a new id claimed and its recorded mark taken as used, a release at a stop)
    /// between a backend's load of the grant and its compare-and-swap, and other backends may
    /// push the state word past the old grant's end under the new one. So an id is built only
    /// - on a tick the grant covers, whichever branch chose it: the clock's tick, or the state
    ///   word's last tick (that tick may lie past the grant's end, pushed there under a newer
    ///   grant), and
    /// - under the grant in force when the state word was taken: after the compare-and-swap the
    ///   grant's generation is read again, and if a grant was published since the attempt loaded
    ///   its own (even one with the same word: a release and a claim of the same id), the word
    ///   taken is let go (a gap, never an id) and the attempt starts over under the new grant.
    ///   The worker takes a grant away (publishes another) before anything moves the state word
    ///   on behalf of what follows (a release's read of it, a new grant's `use_up_to`, that
    ///   grant's backends), and every change of the state word is a read-modify-write, so a
    ///   compare-and-swap that read a word written after the switch (acquire) sees the switch's
    ///   generation when it reads it again. A word written before the switch carries a tick the
    ///   old grant covered, below the mark recorded for it (and a release's final mark covers
    ///   every such word: see `claim::stop_issuing`).
    ///
    /// Proven by the loom models with two backends and the worker (tests/loom.rs) and the
    /// lifecycle simulation's backends that stall between any two steps: the attempt is its three
    /// steps, [`Generator::load_grant`], [`Generator::take`] and [`Generator::confirm`], which the
    /// simulation also calls one at a time with the world moving on between them (each inlined
    /// here: one function, as compiled).
    #[inline]
    pub fn try_issue(&self, shared: &SharedState, now_ms: i64) -> Result<(i64, bool), Result<Blocked, Error>> {
        let Some(now_tick) = self.k.tick_now(now_ms) else {
            // Before the epoch or past the field: the layout's error, which says which.
            return Err(Err(self.layout.tick_at(now_ms).err().map_or(Error::NotPreloaded, Error::from)));
        };
        loop {
            let grant = Self::load_grant(shared);
            let Some(taken) = self.take::<false>(shared, now_tick, grant).map_err(Ok)? else { continue };
            if let Some(issued) = self.confirm(shared, taken) {
                return Ok(issued);
            }
        }
    }

    /// The plain case of a call, for the shell's raw entry point (issue 61): `Some(id)` when the
    /// clock reads a tick of the layout, the grant covers it, and the tick is a new one under the
    /// durable mark, or the last one issued with sequence left and not ahead of the clock, the
    /// word taken and the grant confirmed; `None` in every other case, declined before any
    /// compare-and-swap (nothing is used up: the guarded path goes on from the same state), but
    /// when the grant changed between the compare-and-swap and its confirmation (the word is a
    /// gap, as in [`Generator::try_issue`]). The same three steps as `try_issue`: one issuing
    /// function. No allocation, indexing, unwrap or call: wrapping arithmetic, one unsigned
    /// division (a longer tick), atomics (the packaging test `package_fast_path` checks the built
    /// library's machine code for panic sites and calls).
    #[inline(always)]
    pub fn issue_plain(&self, shared: &SharedState, now_ms: i64) -> Option<i64> {
        let now_tick = self.k.tick_now(now_ms)?;
        let grant = Self::load_grant(shared);
        let taken = self.take::<true>(shared, now_tick, grant).ok()??;
        self.confirm(shared, taken).map(|(id, _)| id)
    }

    /// An attempt's first step: the grant, the machine id and until when it is held, from the same
    /// cache line as the state word. Set by hand, it is held for ever; leased, until the lease's
    /// local deadline, so that a server paused past its lease issues nothing when it resumes.
    #[inline(always)]
    pub fn load_grant(shared: &SharedState) -> GrantSeen {
        shared.hot.grant.seen()
    }

    /// An attempt's second step: a state word taken (compare-and-swap) at the clock's `now_tick`
    /// under `grant`, on a tick it covers; `Ok(None)`: the grant changed meanwhile, start over.
    /// `PLAIN` (the raw entry's [`Generator::issue_plain`]): a tick ahead of the clock declines
    /// too, before the compare-and-swap (the guarded path counts it as the clock behind).
    #[inline(always)]
    pub fn take<const PLAIN: bool>(
        &self,
        shared: &SharedState,
        now_tick: u64,
        grant: GrantSeen,
    ) -> Result<Option<Taken>, Blocked> {
        let k = &self.k;
        let s = k.sequence_bits;
        let seq_mask = k.sequence_mask;
        // Ticks as the state word holds them: one up, so that 0 is "nothing issued".
        let now_slot = now_tick + 1;
        let now_tick = now_tick as i64;
        // The first tick the grant does not cover, as a slot: a slot is covered while it is at
        // most this.
        let until_slot = grant.word >> k.machine_bits;
        if now_slot > until_slot && !mutant::off(mutant::Check::GrantCoversClock) {
            return Err(Blocked::NotHeld);
        }
        #[cfg(feature = "hold_points")]
        if let Some(hold) = HOLD_AFTER_GRANT.get() {
            hold();
        }
        let state = &shared.hot.state;
        let mut current = state.load(Acquire);
        loop {
            let last_slot = current >> s;
            let next = if now_slot > last_slot {
                // A tick never issued before: only under the durable mark.
                if now_tick > shared.mark.tick.load(Acquire) && !mutant::off(mutant::Check::Mark) {
                    return Err(Blocked::Mark);
                }
                now_slot << s
            } else if (current & seq_mask != seq_mask || mutant::off(mutant::Check::SequenceLeft))
                && !(PLAIN && now_slot < last_slot && !mutant::off(mutant::Check::Behind))
            {
                // The last tick issued, which may lie past this grant's end: only on a tick the
                // grant covers. Past it, either the grant changed meanwhile (another backend
                // pushed the word there under a newer one: start over under it), or the clock
                // reads behind a tick issued before this grant began (stepped back): wait for the
                // clock, as for any tick behind the clock.
                if last_slot > until_slot
                    && self.check != GrantCheck::Stale
                    && !mutant::off(mutant::Check::GrantCoversTick)
                {
                    // (The word too: a grant stored whose generation is not raised yet.)
                    if !shared.hot.grant.unchanged_since(grant) || shared.hot.grant.word() != grant.word {
                        return Ok(None);
                    }
                    return Err(Blocked::Tick { last_tick: last_slot as i64 - 1, now_tick });
                }
                current + 1
            } else {
                return Err(Blocked::Tick { last_tick: last_slot as i64 - 1, now_tick });
            };
            match state.compare_exchange_weak(current, next, AcqRel, Acquire) {
                Ok(_) => return Ok(Some(Taken { word: next, grant, behind: now_slot < last_slot })),
                Err(actual) => current = actual,
            }
        }
    }

    /// An attempt's last step: the id of the word taken, under the grant it was taken under if
    /// that grant is still in force; `None`: it changed meanwhile, the word is let go (a gap,
    /// never an id) and the attempt starts over. With the id, whether the clock read behind its
    /// tick.
    #[inline(always)]
    pub fn confirm(&self, shared: &SharedState, taken: Taken) -> Option<(i64, bool)> {
        let confirmed = match self.check {
            GrantCheck::Generation => shared.hot.grant.unchanged_since(taken.grant),
            GrantCheck::Word => shared.hot.grant.word() == taken.grant.word,
            GrantCheck::Stale => true,
        };
        if !confirmed {
            return None;
        }
        Some((self.k.id_of(taken.word, taken.grant.word & self.k.machine_mask), taken.behind))
    }

    /// `snowflake_nextval()`: the next id of this server, and none while it is in recovery (a hot
    /// standby: its primary issues them, and this server could not log a lease). Behind the check
    /// the generator issues nothing in recovery either: each id there would need a new mark, whose
    /// WAL record cannot be inserted during recovery.
    #[inline]
    pub fn nextval<H: Host + Recovery>(&self, shared: &SharedState, host: &mut H) -> Result<i64, Error> {
        if host.in_recovery() {
            return Err(Error::HotStandby);
        }
        self.next_id(shared, host)
    }

    /// The next id, waiting as long as needed for a new tick when the sequence runs out, but at
    /// most [`Limits::max_clock_wait_ms`] while the clock is behind the last issued tick.
    #[inline]
    pub fn next_id<H: Host>(&self, shared: &SharedState, host: &mut H) -> Result<i64, Error> {
        let now_ms = host.now_ms();
        match self.try_issue(shared, now_ms) {
            Ok((id, behind)) => {
                host.count_issued(shared);
                if behind {
                    self.note_clock_behind(shared, host);
                }
                Ok(id)
            }
            Err(_) => self.next_id_slowly(shared, host),
        }
    }

    #[cold]
    #[inline(never)]
    fn next_id_slowly<H: Host>(&self, shared: &SharedState, host: &mut H) -> Result<i64, Error> {
        let started_us = host.monotonic_us();
        let mut waited = false;
        let result = self.wait_for_id(shared, host, &mut waited);
        // The time waited counts whether the call then got an id or gave up with an error.
        if waited {
            shared.stats.wait_us.fetch_add(host.monotonic_us() - started_us, Relaxed);
        }
        result
    }

    /// The slow path's loop; `waited` says whether it had to wait (for a tick, the clock or the
    /// mark) before it ended. Every wait in it ends: for the clock (behind, or not moving on) after
    /// `max_clock_wait`, for another process's mark write after `max_mark_wait`, each with its
    /// error; the host's pauses can be cancelled.
    fn wait_for_id<H: Host>(&self, shared: &SharedState, host: &mut H, waited: &mut bool) -> Result<i64, Error> {
        let stats = &shared.stats;
        let mut clock_since_us = None;
        let mut stalled_since_us = None;
        let mut mark_since_us = None;
        let mut counted_writer_wait = false;
        let mut counted_wait = false;
        let mut counted_mark_wait = false;
        // Whether this call wrote a mark (lease::cover returned Done) since it began waiting.
        let mut written = false;
        loop {
            let now_ms = host.now_ms();
            let blocked = match self.try_issue(shared, now_ms) {
                Ok((id, behind)) => {
                    host.count_issued(shared);
                    if behind {
                        self.note_clock_behind(shared, host);
                    }
                    *waited = counted_wait || counted_mark_wait || clock_since_us.is_some();
                    return Ok(id);
                }
                Err(Err(e)) => return Err(e),
                Err(Ok(blocked)) => blocked,
            };
            let (last_tick, now_tick) = match blocked {
                Blocked::Mark => {
                    if !counted_mark_wait {
                        counted_mark_wait = true;
                        stats.mark_waits.fetch_add(1, Relaxed);
                    }
                    *waited = true;
                    let since_us = *mark_since_us.get_or_insert_with(|| host.monotonic_us());
                    let limit_ms = host.limits().max_mark_wait_ms;
                    let over = |host: &mut H| host.monotonic_us() - since_us > limit_ms.saturating_mul(1000);
                    // A mark was written, yet it does not reach this tick: a write that took
                    // longer than its lease. The next lease is longer; this call gives up only
                    // when its writes took longer than max_mark_wait in all. (Never right after a
                    // write: the new mark may reach the clock, its lease being twice as long as
                    // the last write took, and the id is then taken.)
                    if written && over(host) {
                        stats.mark_wait_timeouts.fetch_add(1, Relaxed);
                        return Err(Error::MarkWriteTooSlow { limit_ms: limit_ms as i64 });
                    }
                    match lease::cover(shared, &self.layout, now_ms, host)? {
                        lease::Cover::Busy { pid, step } => {
                            if !counted_writer_wait {
                                counted_writer_wait = true;
                                stats.writer_waits.fetch_add(1, Relaxed);
                            }
                            if over(host) {
                                stats.mark_wait_timeouts.fetch_add(1, Relaxed);
                                return Err(Error::MarkWriterBusy { pid, step, limit_ms: limit_ms as i64 });
                            }
                            host.sleep_ms(1);
                        }
                        lease::Cover::Done => written = true,
                    }
                    continue;
                }
                Blocked::Tick { last_tick, now_tick } => (last_tick, now_tick),
                // Waiting would not cure it within a call: the lease's holder keeps claiming.
                Blocked::NotHeld => {
                    shared.claim.refusals.fetch_add(1, Relaxed);
                    let word = shared.hot.grant.word();
                    let lapsed = (word != grant::NOBODY).then(|| grant::parts(word, self.layout.machine_bits()).0);
                    return Err(Error::MachineIdNotHeld {
                        source: String::new(),
                        last_error: shared.claim.error(),
                        lapsed,
                        trouble: shared.claim.trouble(),
                    });
                }
            };
            let start_of = |tick| self.layout.tick_start_ms(tick).unwrap_or(i64::MAX);
            // How long until a tick with a fresh sequence begins.
            let mut pause_ms = start_of(last_tick + 1).saturating_sub(now_ms) - 1;
            let now_us = host.monotonic_us();
            if now_tick < last_tick {
                let behind_ms = start_of(last_tick) - now_ms;
                if clock_since_us.is_none() {
                    stats.clock_waits.fetch_add(1, Relaxed);
                    self.note_clock_behind(shared, host);
                }
                let waited_us = now_us - *clock_since_us.get_or_insert(now_us);
                // Waiting out the mark after a restart is waiting out a lease (up to
                // MAX_LEASE_MS after a crash), not a clock stepped back: that much comes on top.
                let lease_us =
                    if restarting(shared, last_tick, behind_ms) { lease::MAX_LEASE_MS as u64 * 1000 } else { 0 };
                let limit_us = host.limits().max_clock_wait_ms.saturating_mul(1000).saturating_add(lease_us);
                if waited_us > limit_us {
                    *waited = true;
                    stats.clock_wait_timeouts.fetch_add(1, Relaxed);
                    return Err(Error::ClockBehind {
                        behind_ms,
                        waited_ms: (waited_us / 1000) as i64,
                        mark_from: None,
                    });
                }
                // Never sleep past the deadline, and re-read the clock at least every 10 ms in
                // case it is stepped forward again.
                pause_ms = pause_ms.min(((limit_us - waited_us) / 1000) as i64).min(10);
            } else {
                if !counted_wait {
                    counted_wait = true;
                    stats.sequence_waits.fetch_add(1, Relaxed);
                }
                // The next tick is due within one tick: a clock that does not get there in a
                // tick and max_clock_wait more stands still.
                let waited_us = now_us - *stalled_since_us.get_or_insert(now_us);
                let limit_ms = host.limits().max_clock_wait_ms.saturating_add(self.layout.tick_ms() as u64);
                if waited_us > limit_ms.saturating_mul(1000) {
                    *waited = true;
                    stats.clock_waits.fetch_add(1, Relaxed);
                    stats.clock_wait_timeouts.fetch_add(1, Relaxed);
                    return Err(Error::ClockStalled { limit_ms: limit_ms as i64 });
                }
            }
            // Under a millisecond to go: re-read the clock rather than sleep.
            if pause_ms >= 1 {
                host.sleep_ms(pause_ms as u64);
            } else {
                host.spin();
            }
        }
    }

    /// The clock read behind the last issued tick. Another backend may simply have read the clock
    /// a little later and issued first, so read it again: if it is still behind, it went back.
    /// One step back counts once, however many calls meet it; waiting out the mark after a
    /// restart is no rollback.
    #[cold]
    fn note_clock_behind<H: Host>(&self, shared: &SharedState, host: &mut H) {
        let now_us = host.now_us();
        let now_ms = now_us.div_euclid(1000);
        let Some(last_tick) = shared.last_tick(self.layout.sequence_bits()) else { return };
        let Ok(now_tick) = self.layout.tick_at(now_ms) else { return };
        let tick_start_ms = self.layout.tick_start_ms(last_tick).unwrap_or(i64::MAX / 1000);
        let behind_ms = tick_start_ms - now_ms;
        if now_tick >= last_tick
            || tick_start_ms.saturating_mul(1000) - now_us <= CLOCK_SKEW_US
            || restarting(shared, last_tick, behind_ms)
            || last_tick == shared.mark.claimed_tick.load(Relaxed)
        {
            return;
        }
        let stats = &shared.stats;
        stats.largest_rollback_ms.fetch_max(behind_ms, Relaxed);
        if stats.rollback_tick.swap(last_tick, Relaxed) == last_tick {
            return;
        }
        stats.clock_rollbacks.fetch_add(1, Relaxed);
        let now = (host.monotonic_us() / 1000) as i64;
        let last = stats.last_warning_ms.load(Relaxed);
        if now - last >= WARNING_INTERVAL_MS
            && stats.last_warning_ms.compare_exchange(last, now, Relaxed, Relaxed).is_ok()
        {
            host.clock_went_back(behind_ms);
        }
    }
}

/// Whether a clock `behind_ms` behind `last_tick` is a restart waiting out its mark: the tick is the
/// one the server started above (or learnt from a replayed lease, or from a claim), and the mark
/// lies no further ahead than a lease can reach (after a crash, the longest lease,
/// [`lease::MAX_LEASE_MS`]): such a wait may last that much longer. (A claimed mark further ahead
/// is no rollback either, `note_clock_behind` says, but its wait is max_clock_wait's: the refusal
/// names its holder.)
fn restarting(shared: &SharedState, last_tick: i64, behind_ms: i64) -> bool {
    last_tick == shared.mark.restart_tick.load(Relaxed) && behind_ms <= lease::MAX_LEASE_MS
}

#[cfg(test)]
#[path = "generator_tests.rs"]
mod tests;
