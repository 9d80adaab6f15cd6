//! The generator's state machine, as pure Rust over one atomic word and an injected clock.
//!
//! The whole state is one `u64`: `last_tick << sequence_bits | last_sequence`. It only ever grows,
//! and an id is that word with the machine id slotted in, so ids grow with it. Issuing is one clock
//! read and one compare-and-swap; nobody holds a lock, so no backend waits on another.
//!
//! - The clock moved on: the word becomes `now_tick << sequence_bits` (sequence 0).
//! - Same tick, or the clock is behind the last tick: the word is incremented (next sequence on the
//!   last used tick), until that tick's sequence is used up.
//! - Used up: the caller must wait for the clock to pass the last tick, re-reading it
//!   ([`Host::spin`]), and gives up after `max_clock_wait` if the clock is behind.

use crate::error::Error;
use crate::layout::Layout;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the generator needs from the world; the real one reads the system clock and lets
/// PostgreSQL cancel the wait, the tests' one is a fake clock.
pub trait Host {
    /// Wall-clock time in milliseconds since 1970-01-01 UTC.
    fn now_ms(&mut self) -> i64;
    /// A clock that never goes backwards, in microseconds, to bound the wait.
    fn monotonic_us(&mut self) -> u64;
    /// A short pause before re-reading the clock; where the user may cancel.
    fn spin(&mut self);
    /// A longer pause, when the clock is known to be at least this far behind.
    fn sleep_ms(&mut self, ms: u64);
}

/// Why no id could be issued at this clock reading: the sequence of `last_tick`, the last tick
/// issued, is used up, and the clock reads `now_tick`, the same tick (the next is due shortly) or
/// an earlier one (the clock is behind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub last_tick: i64,
    pub now_tick: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generator {
    layout: Layout,
    machine_id: i64,
}

impl Generator {
    pub fn new(layout: Layout, machine_id: i64) -> Result<Generator, Error> {
        layout.check_machine_id(machine_id)?;
        Ok(Generator { layout, machine_id })
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn machine_id(&self) -> i64 {
        self.machine_id
    }

    #[inline]
    fn id_of_state(&self, state: u64) -> i64 {
        let s = self.layout.sequence_bits();
        let state = state as i64;
        self.layout.compose(state >> s, self.machine_id, state & self.layout.max_sequence())
    }

    /// One attempt at the clock reading `now_ms`: an id, a reason to wait, or an error that waiting
    /// cannot cure (`Err(Err(..))`).
    #[inline]
    pub fn try_issue(&self, state: &AtomicU64, now_ms: i64) -> Result<i64, Result<Blocked, Error>> {
        let now_tick = self.layout.tick_at(now_ms).map_err(Err)? as u64;
        let s = self.layout.sequence_bits();
        let seq_mask = self.layout.max_sequence() as u64;
        let mut current = state.load(Ordering::Acquire);
        loop {
            let last_tick = current >> s;
            let next = if now_tick > last_tick {
                now_tick << s
            } else if current & seq_mask != seq_mask {
                current + 1
            } else {
                return Err(Ok(Blocked { last_tick: last_tick as i64, now_tick: now_tick as i64 }));
            };
            match state.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(self.id_of_state(next)),
                Err(actual) => current = actual,
            }
        }
    }

    /// The next id, waiting as long as needed for a new tick when the sequence runs out, but at
    /// most `max_clock_wait_ms` while the clock is behind the last issued tick.
    #[inline]
    pub fn next_id<H: Host>(&self, state: &AtomicU64, host: &mut H, max_clock_wait_ms: impl Fn() -> u64) -> Result<i64, Error> {
        let mut behind_since_us = None;
        loop {
            let now_ms = host.now_ms();
            let blocked = match self.try_issue(state, now_ms) {
                Ok(id) => return Ok(id),
                Err(Err(e)) => return Err(e),
                Err(Ok(blocked)) => blocked,
            };
            let start_of = |tick| self.layout.tick_start_ms(tick).unwrap_or(i64::MAX);
            // How long until a tick with a fresh sequence begins.
            let mut pause_ms = start_of(blocked.last_tick + 1).saturating_sub(now_ms) - 1;
            if blocked.now_tick < blocked.last_tick {
                let behind_ms = start_of(blocked.last_tick) - now_ms;
                let now_us = host.monotonic_us();
                let waited_us = now_us - *behind_since_us.get_or_insert(now_us);
                let limit_us = max_clock_wait_ms().saturating_mul(1000);
                if waited_us > limit_us {
                    return Err(Error::ClockBehind { behind_ms, waited_ms: (waited_us / 1000) as i64 });
                }
                // Never sleep past the deadline, and re-read the clock at least every 10 ms in
                // case it is stepped forward again.
                pause_ms = pause_ms.min(((limit_us - waited_us) / 1000) as i64).min(10);
            }
            // Under a millisecond to go: re-read the clock rather than sleep.
            if pause_ms >= 1 {
                host.sleep_ms(pause_ms as u64);
            } else {
                host.spin();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::{seed_layout, EPOCH_2025, SEED_LAYOUTS};
    use crate::layout::Layout;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicI64;
    use std::sync::Arc;

    /// A fake clock: each pause advances it; `script` can step the wall clock.
    struct FakeHost {
        wall_us: i64,
        mono_us: u64,
        spins: u64,
        slept_ms: u64,
    }

    impl FakeHost {
        fn at(ms: i64) -> Self {
            FakeHost { wall_us: ms * 1000, mono_us: 0, spins: 0, slept_ms: 0 }
        }
        /// Time passes: both clocks move on.
        fn advance_us(&mut self, us: u64) {
            self.wall_us += us as i64;
            self.mono_us += us;
        }
        /// The wall clock is stepped (backwards if negative); the monotonic clock is not.
        fn step_wall_ms(&mut self, ms: i64) {
            self.wall_us += ms * 1000;
        }
    }

    impl Host for FakeHost {
        fn now_ms(&mut self) -> i64 {
            self.wall_us.div_euclid(1000)
        }
        fn monotonic_us(&mut self) -> u64 {
            self.mono_us
        }
        fn spin(&mut self) {
            self.spins += 1;
            self.advance_us(50);
        }
        fn sleep_ms(&mut self, ms: u64) {
            self.slept_ms += ms;
            self.advance_us(ms * 1000);
        }
    }

    fn generator(layout_index: usize, machine_id: i64) -> Generator {
        Generator::new(seed_layout(layout_index), machine_id).unwrap()
    }

    const WAIT_1S: fn() -> u64 = || 1000;

    #[test]
    fn same_millisecond_increments_the_sequence() {
        let g = generator(0, 7);
        let state = AtomicU64::new(0);
        let mut host = FakeHost::at(EPOCH_2025 + 1000);
        let ids: Vec<i64> = (0..3).map(|_| g.next_id(&state, &mut host, WAIT_1S).unwrap()).collect();
        let l = g.layout();
        assert_eq!(ids, vec![l.compose(1000, 7, 0), l.compose(1000, 7, 1), l.compose(1000, 7, 2)]);
        assert_eq!(host.spins, 0);
    }

    #[test]
    fn a_new_millisecond_restarts_the_sequence() {
        let g = generator(0, 3);
        let state = AtomicU64::new(0);
        let mut host = FakeHost::at(EPOCH_2025 + 10);
        g.next_id(&state, &mut host, WAIT_1S).unwrap();
        g.next_id(&state, &mut host, WAIT_1S).unwrap();
        host.advance_us(1000);
        assert_eq!(g.next_id(&state, &mut host, WAIT_1S), Ok(g.layout().compose(11, 3, 0)));
    }

    #[test]
    fn exhaustion_waits_for_the_next_millisecond_by_re_reading_the_clock() {
        for i in 0..SEED_LAYOUTS.len() {
            let g = generator(i, 1);
            let l = *g.layout();
            let state = AtomicU64::new(0);
            let mut host = FakeHost::at(EPOCH_2025 + 5);
            let per_ms = l.max_sequence() + 1;
            let mut last = -1;
            for n in 0..per_ms {
                let id = g.next_id(&state, &mut host, WAIT_1S).unwrap();
                assert_eq!(id, l.compose(5, 1, n), "layout {i}, id {n}: the last sequence value is used too");
                assert!(id > last);
                last = id;
            }
            assert_eq!(host.spins, 0);
            let id = g.next_id(&state, &mut host, WAIT_1S).unwrap();
            assert_eq!(id, l.compose(6, 1, 0), "layout {i}: after exhaustion, the next tick");
            assert_eq!(host.spins, 20, "1 ms re-read in 50 us spins, no sleep");
            assert_eq!(host.slept_ms, 0);
        }
    }

    #[test]
    fn clock_stepped_back_one_ms_keeps_the_last_tick_then_waits() {
        let g = generator(0, 2);
        let l = *g.layout();
        let state = AtomicU64::new(0);
        let mut host = FakeHost::at(EPOCH_2025 + 100);
        let first = g.next_id(&state, &mut host, WAIT_1S).unwrap();
        host.step_wall_ms(-1); // the clock now reads tick 99
        let next = g.next_id(&state, &mut host, WAIT_1S).unwrap();
        assert_eq!(next, l.compose(100, 2, 1), "issues on the last used tick, never on tick 99");
        // Use up tick 100, then the generator must wait until the clock reaches tick 101.
        for _ in 2..=l.max_sequence() {
            g.next_id(&state, &mut host, WAIT_1S).unwrap();
        }
        assert_eq!(host.now_ms(), EPOCH_2025 + 99);
        let after = g.next_id(&state, &mut host, WAIT_1S).unwrap();
        assert_eq!(after, l.compose(101, 2, 0));
        assert!(after > first && host.now_ms() == EPOCH_2025 + 101);
    }

    #[test]
    fn clock_stepped_back_five_seconds_errors_after_max_clock_wait() {
        let g = generator(0, 2);
        let state = AtomicU64::new(0);
        let mut host = FakeHost::at(EPOCH_2025 + 10_000);
        let before = g.next_id(&state, &mut host, WAIT_1S).unwrap();
        host.step_wall_ms(-5000);
        // The rest of tick 10_000's sequence is still issued, in order.
        let mut last = before;
        for _ in 1..4096 {
            let id = g.next_id(&state, &mut host, WAIT_1S).unwrap();
            assert!(id > last);
            last = id;
        }
        let mono_before = host.monotonic_us();
        let err = g.next_id(&state, &mut host, WAIT_1S).unwrap_err();
        let waited_ms = ((host.monotonic_us() - mono_before) / 1000) as i64;
        match err {
            Error::ClockBehind { behind_ms, waited_ms: reported } => {
                assert!((3_990..=4_000).contains(&behind_ms), "behind {behind_ms} ms after a 1 s wait");
                assert_eq!(reported, waited_ms);
                assert!((1000..=1001).contains(&waited_ms), "waited {waited_ms} ms, limit 1000");
            }
            other => panic!("expected ClockBehind, got {other:?}"),
        }
        assert!(host.slept_ms >= 990, "a long gap is slept through, not spun: slept {}", host.slept_ms);
        // Once the clock has caught up, ids resume above everything issued before.
        host.step_wall_ms(4000);
        assert!(g.next_id(&state, &mut host, WAIT_1S).unwrap() > last);
    }

    #[test]
    fn a_zero_max_clock_wait_refuses_at_once() {
        let g = generator(0, 0);
        let state = AtomicU64::new(((10_u64) << 12) | 4095); // tick 10 used up
        let mut host = FakeHost::at(EPOCH_2025 + 5);
        assert!(matches!(g.next_id(&state, &mut host, || 0), Err(Error::ClockBehind { behind_ms: 5, .. })));
    }

    #[test]
    fn before_the_epoch_and_past_the_field_are_errors_not_ids() {
        let g = generator(3, 0);
        let state = AtomicU64::new(0);
        let mut host = FakeHost::at(EPOCH_2025 - 1);
        assert!(matches!(g.next_id(&state, &mut host, WAIT_1S), Err(Error::ClockBeforeEpoch { .. })));
        let mut host = FakeHost::at(g.layout().end_unix_ms() - 1);
        let top = g.next_id(&state, &mut host, WAIT_1S).unwrap();
        assert_eq!(g.layout().decode(top).unwrap().unix_ms, g.layout().end_unix_ms() - 1);
        host.advance_us(1000);
        assert!(matches!(g.next_id(&state, &mut host, WAIT_1S), Err(Error::TimestampExhausted { .. })));
        // Exhausting the very last tick cannot wrap around either.
        let mut host = FakeHost::at(g.layout().end_unix_ms() - 1);
        for _ in 1..=g.layout().max_sequence() {
            g.next_id(&state, &mut host, WAIT_1S).unwrap();
        }
        assert!(matches!(g.next_id(&state, &mut host, WAIT_1S), Err(Error::TimestampExhausted { .. })));
    }

    #[test]
    fn largest_machine_id_and_last_sequence_decode_back() {
        for i in 0..SEED_LAYOUTS.len() {
            let l = seed_layout(i);
            let g = Generator::new(l, l.max_machine_id()).unwrap();
            let state = AtomicU64::new(((100_u64) << l.sequence_bits()) | (l.max_sequence() as u64 - 1));
            let mut host = FakeHost::at(EPOCH_2025 + 100);
            let id = g.next_id(&state, &mut host, WAIT_1S).unwrap();
            let p = l.decode(id).unwrap();
            assert_eq!((p.unix_ms, p.machine_id, p.sequence), (EPOCH_2025 + 100, l.max_machine_id(), l.max_sequence()));
        }
        assert!(matches!(Generator::new(seed_layout(0), 1024), Err(Error::MachineIdOutOfRange { .. })));
        assert!(matches!(Generator::new(seed_layout(0), -1), Err(Error::MachineIdUnset { .. })));
    }

    #[test]
    fn a_longer_tick_sleeps_through_most_of_the_wait() {
        let g = Generator::new(Layout::new(EPOCH_2025, 10, 10, 12).unwrap(), 1).unwrap();
        let state = AtomicU64::new(0);
        let mut host = FakeHost::at(EPOCH_2025 + 1_002); // tick 100, 8 ms before tick 101
        for n in 0..4096 {
            assert_eq!(g.next_id(&state, &mut host, WAIT_1S), Ok(g.layout().compose(100, 1, n)));
        }
        let id = g.next_id(&state, &mut host, WAIT_1S).unwrap();
        assert_eq!(id, g.layout().compose(101, 1, 0));
        assert_eq!((host.slept_ms, host.spins), (7, 20), "sleep 7 ms, then spin the last one");
    }

    proptest! {
        /// Whatever the clock does (jumps, steps back, stands still), every id issued is greater
        /// than the one before, so none repeats; the only refusal is a clock too far behind.
        #[test]
        fn any_clock_never_repeats_an_id(layout in 0..SEED_LAYOUTS.len(), steps in prop::collection::vec((-3_000_i64..3_000, 0_usize..600), 1..40)) {
            let g = generator(layout, 5);
            let state = AtomicU64::new(0);
            let mut host = FakeHost::at(EPOCH_2025 + 1_000_000);
            let mut last = -1;
            for (step_ms, burst) in steps {
                host.step_wall_ms(step_ms);
                for _ in 0..burst {
                    match g.next_id(&state, &mut host, || 200) {
                        Ok(id) => { prop_assert!(id > last); last = id; }
                        Err(Error::ClockBehind { behind_ms, waited_ms }) => prop_assert!(behind_ms > 0 && waited_ms >= 200),
                        Err(e) => prop_assert!(false, "unexpected error {:?}", e),
                    }
                }
            }
        }
    }

    /// Threads race on one state word with a shared clock that ticks as it is read: no id is
    /// issued twice, none is lost (the final state is the largest id's), and each thread's ids grow.
    #[test]
    fn concurrent_threads_get_unique_increasing_ids() {
        struct SharedClock(Arc<AtomicI64>);
        impl Host for SharedClock {
            fn now_ms(&mut self) -> i64 {
                EPOCH_2025 + self.0.fetch_add(1, Ordering::Relaxed) / 3000
            }
            fn monotonic_us(&mut self) -> u64 {
                self.0.load(Ordering::Relaxed) as u64
            }
            fn spin(&mut self) {
                std::hint::spin_loop();
            }
            fn sleep_ms(&mut self, _: u64) {
                std::thread::yield_now();
            }
        }
        // 9 sequence bits (512 per tick) with ~3000 clock reads per tick forces many exhaustion waits.
        let g = generator(3, 65_535);
        let state = Arc::new(AtomicU64::new(0));
        let reads = Arc::new(AtomicI64::new(0));
        let (threads, per_thread) = (8, 20_000);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (state, reads) = (state.clone(), reads.clone());
                std::thread::spawn(move || {
                    let mut host = SharedClock(reads);
                    (0..per_thread).map(|_| g.next_id(&state, &mut host, || 60_000).unwrap()).collect::<Vec<i64>>()
                })
            })
            .collect();
        let mut all = HashSet::new();
        let mut largest = 0;
        for h in handles {
            let ids = h.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "a thread's ids went down");
            largest = largest.max(*ids.last().unwrap());
            all.extend(ids);
        }
        assert_eq!(all.len(), threads * per_thread, "duplicates were issued");
        assert_eq!(g.id_of_state(state.load(Ordering::SeqCst)), largest, "an update was lost");
    }
}
