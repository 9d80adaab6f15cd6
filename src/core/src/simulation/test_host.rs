//! The test host of the core: a fake world for the generator and the lease, with the few switches
//! their tests need ([`FakeHost`]), and a thread-safe variant whose clock all threads share
//! ([`ThreadHost`]). Tests only.

use crate::error::Error;
use crate::generator::Generator;
use crate::host::{Clock, Events, Limits, MarkStore, Processes, Settings, Waiter};
use crate::layout::tests::{seed_layout, EPOCH_2025};
use crate::mark_writer::{MarkWriter, WriteStep};
use crate::state::SharedState;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// One process's world, all of it in memory: each pause advances its clocks, and the switches
/// below make its mark writes fail, unwind or take time, its wall clock stand still or step.
pub(crate) struct FakeHost {
    pub(crate) wall_us: i64,
    pub(crate) mono_us: u64,
    pub(crate) spins: u64,
    pub(crate) slept_ms: u64,
    /// Marks made durable, in order.
    pub(crate) marks: Vec<i64>,
    /// What a mark write returns instead of succeeding, if anything.
    pub(crate) persist_error: Option<Error>,
    /// A mark write that unwinds (in PostgreSQL: a cancelled wait).
    pub(crate) persist_panics: bool,
    /// The wall clock stands still: pauses pass only on the monotonic clock.
    pub(crate) wall_frozen: bool,
    pub(crate) warnings: Vec<i64>,
    pub(crate) limits: Limits,
    /// This process's id, and the processes that no longer exist.
    pub(crate) pid: i32,
    pub(crate) gone: Vec<i32>,
    /// How long a mark write takes.
    pub(crate) write_us: u64,
}

impl FakeHost {
    pub(crate) fn at(ms: i64) -> Self {
        FakeHost {
            wall_us: ms * 1000,
            mono_us: 0,
            spins: 0,
            slept_ms: 0,
            marks: vec![],
            persist_error: None,
            persist_panics: false,
            wall_frozen: false,
            warnings: vec![],
            limits: Limits { max_clock_wait_ms: 1000, max_clock_jump_ms: 0, max_mark_wait_ms: 5000 },
            pid: 1,
            gone: vec![],
            write_us: 0,
        }
    }
    /// Time passes: both clocks move on (the wall clock unless it stands still).
    pub(crate) fn advance_us(&mut self, us: u64) {
        if !self.wall_frozen {
            self.wall_us += us as i64;
        }
        self.mono_us += us;
    }
    /// The wall clock is stepped (backwards if negative); the monotonic clock is not.
    pub(crate) fn step_wall_ms(&mut self, ms: i64) {
        self.wall_us += ms * 1000;
    }
}

impl Clock for FakeHost {
    fn now_ms(&mut self) -> i64 {
        self.wall_us.div_euclid(1000)
    }
    fn now_us(&mut self) -> i64 {
        self.wall_us
    }
    fn monotonic_us(&mut self) -> u64 {
        self.mono_us
    }
}

impl Waiter for FakeHost {
    fn spin(&mut self) {
        self.spins += 1;
        self.advance_us(50);
    }
    fn sleep_ms(&mut self, ms: u64) {
        self.slept_ms += ms;
        self.advance_us(ms * 1000);
    }
}

impl MarkStore for FakeHost {
    fn persist_mark(&mut self, unix_ms: i64, writer: &MarkWriter) -> Result<(), Error> {
        if self.persist_panics {
            panic!("canceling statement due to user request");
        }
        if let Some(e) = self.persist_error.clone() {
            if matches!(e, Error::StandbysDidNotConfirm { .. }) {
                writer.step(WriteStep::StandbyWait);
            }
            return Err(e);
        }
        self.advance_us(self.write_us);
        self.marks.push(unix_ms);
        Ok(())
    }
}

impl Processes for FakeHost {
    fn this_process(&mut self) -> i32 {
        self.pid
    }
    fn process_exists(&mut self, pid: i32) -> bool {
        !self.gone.contains(&pid)
    }
}

impl Events for FakeHost {
    fn clock_went_back(&mut self, behind_ms: i64) {
        self.warnings.push(behind_ms);
    }
}

impl Settings for FakeHost {
    fn limits(&mut self) -> Limits {
        self.limits
    }
}

/// SharedState state with nothing issued and no mark yet.
pub(crate) fn fresh() -> SharedState {
    SharedState::starting_at(None, 0, 0)
}

/// SharedState state whose state word is `state`.
pub(crate) fn with_state(state: u64) -> SharedState {
    let s = fresh();
    s.hot.state.store(state, Relaxed);
    s
}

pub(crate) fn generator(layout_index: usize, machine_id: i64) -> Generator {
    Generator::new(seed_layout(layout_index), machine_id).unwrap()
}

/// Threads that race on one state word: the clock, shared by all, ticks as it is read (3000 reads a
/// millisecond); `.1` counts the clock rollbacks reported; `.2` is the thread's process id.
pub(crate) struct ThreadHost(pub(crate) Arc<AtomicI64>, pub(crate) Arc<AtomicU64>, pub(crate) i32);
impl Clock for ThreadHost {
    fn now_ms(&mut self) -> i64 {
        EPOCH_2025 + self.0.fetch_add(1, Ordering::Relaxed) / 3000
    }
    fn now_us(&mut self) -> i64 {
        EPOCH_2025 * 1000 + self.0.fetch_add(1, Ordering::Relaxed) / 3
    }
    fn monotonic_us(&mut self) -> u64 {
        self.0.load(Ordering::Relaxed) as u64
    }
}
impl Waiter for ThreadHost {
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
    fn sleep_ms(&mut self, _: u64) {
        std::thread::yield_now();
    }
}
impl MarkStore for ThreadHost {
    fn persist_mark(&mut self, _: i64, _: &MarkWriter) -> Result<(), Error> {
        Ok(())
    }
}
impl Processes for ThreadHost {
    fn this_process(&mut self) -> i32 {
        self.2
    }
    fn process_exists(&mut self, _: i32) -> bool {
        true
    }
}
impl Events for ThreadHost {
    fn clock_went_back(&mut self, _: i64) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}
impl Settings for ThreadHost {
    fn limits(&mut self) -> Limits {
        Limits { max_clock_wait_ms: 60_000, max_clock_jump_ms: 0, max_mark_wait_ms: 60_000 }
    }
}
