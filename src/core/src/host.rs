//! What the generator needs from the world, split by what each part is for. The PostgreSQL shell
//! implements them with the system clock, latch waits, the mark file and the server log; the
//! tests with a fake clock. The lease protocol needs only a [`MarkStore`].

use crate::error::Error;
use crate::layout::Layout;
use crate::mark_writer::MarkWriter;
use crate::state::SharedState;
use std::sync::atomic::Ordering::Relaxed;

/// The clocks.
pub trait Clock {
    /// Wall-clock time in milliseconds since 1970-01-01 UTC.
    fn now_ms(&mut self) -> i64;
    /// The same clock in microseconds, for telling a clock step from two processors' readings a
    /// moment apart.
    fn now_us(&mut self) -> i64;
    /// A clock that never goes backwards and reads the same in every process, in microseconds.
    fn monotonic_us(&mut self) -> u64;
}

/// Pauses, in which the user may cancel.
pub trait Waiter {
    /// A short pause before re-reading the clock.
    fn spin(&mut self);
    /// A longer pause, when the clock is known to be at least this far behind.
    fn sleep_ms(&mut self, ms: u64);
}

/// Where the high-water mark is made durable.
pub trait MarkStore {
    /// Makes `unix_ms` the durable high-water mark before returning, saying each step to `writer`
    /// as it begins (the processes that wait for it see what it is doing).
    fn persist_mark(&mut self, unix_ms: i64, writer: &MarkWriter) -> Result<(), Error>;
}

/// The mark file alone, for a lease replayed from the WAL (its record is durable already).
pub trait MarkFile {
    /// Makes `unix_ms` the mark on disk, stamped with `stamped`, before returning.
    fn write_mark_file(&mut self, unix_ms: i64, stamped: &Layout) -> Result<(), Error>;
}

/// The processes that may hold the mark writer's flag.
pub trait Processes {
    /// This process's id, above 0. Called before this process takes the writer's flag: the host
    /// then makes sure that the flag is released whenever the process exits, unwinding or not.
    fn this_process(&mut self) -> i32;
    /// Whether process `pid` still exists.
    fn process_exists(&mut self, pid: i32) -> bool;
}

/// Whether this server replays WAL (a standby, a server in crash recovery or restoring a backup).
pub trait Recovery {
    fn in_recovery(&mut self) -> bool;
}

/// What the generator reports.
pub trait Events {
    /// A clock seen going backwards (already rate-limited).
    fn clock_went_back(&mut self, behind_ms: i64);
    /// Counts one id issued, for the statistics.
    #[inline]
    fn count_issued(&mut self, shared: &SharedState) {
        shared.hot.issued.fetch_add(1, Relaxed);
    }
    /// The mark writer's flag was taken over from process `pid`, which had ended without
    /// releasing it.
    fn writer_taken_over(&mut self, _pid: i32) {}
}

/// The operator's limits, read when they are needed (off the hot path): they may change by reload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How long a call waits for a clock that is behind the last issued tick (snowflake.max_clock_wait).
    pub max_clock_wait_ms: u64,
    /// How far the wall clock may jump forward, beyond the time that passed, between two leases;
    /// 0: no limit (snowflake.max_clock_jump).
    pub max_clock_jump_ms: u64,
    /// How long a call waits for a new mark to become durable: for another process's write, or,
    /// writing it, for the synchronous standbys (snowflake.max_mark_wait).
    pub max_mark_wait_ms: u64,
}

/// Where the limits come from: the settings, as they are now.
pub trait Settings {
    fn limits(&mut self) -> Limits;
}

/// Everything the generator needs, in one bound.
pub trait Host: Clock + Waiter + MarkStore + Processes + Events + Settings {}

impl<T: Clock + Waiter + MarkStore + Processes + Events + Settings> Host for T {}
