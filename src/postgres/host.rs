//! The core's view of the world inside a PostgreSQL process: the system clock (read through the
//! vDSO, no system call), pauses that PostgreSQL can cancel (Ctrl-C, statement_timeout, shutdown),
//! the mark file in the data directory, and the server log.

use super::{process_counters, settings};
use pg_snowflake_core::host::{Clock, Events, MarkStore, Waiter};
use pg_snowflake_core::mark_file;
use pg_snowflake_core::state::SharedState;
use pgrx::pg_sys;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// Taken in the postmaster, inherited by every process it forks: `Instant`s measured from it are
/// comparable across processes (CLOCK_MONOTONIC is system-wide).
static BASE: OnceLock<Instant> = OnceLock::new();

pub fn set_monotonic_base() {
    BASE.get_or_init(Instant::now);
}

/// The system clock. One vDSO call, no system call; read straight from the `timespec` (through
/// `SystemTime` it costs a checked subtraction more, a tenth of `snowflake_nextval()`'s time).
#[inline]
fn wall_clock() -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own; CLOCK_REALTIME cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts
}

/// Milliseconds since 1970-01-01 UTC by the system clock, negative before it (tv_nsec is in
/// 0..1e9, so this rounds down before 1970 too).
#[inline]
pub fn wall_clock_ms() -> i64 {
    let ts = wall_clock();
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000 + settings::fault_clock_offset_ms()
}

/// The same clock in microseconds.
pub fn wall_clock_us() -> i64 {
    let ts = wall_clock();
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000 + settings::fault_clock_offset_ms() * 1000
}

/// The data directory; PostgreSQL processes also run in it.
pub fn data_dir() -> PathBuf {
    // SAFETY: DataDir is set before libraries load and never freed.
    unsafe { pg_sys::DataDir.as_ref() }
        .map(|p| PathBuf::from(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()))
        .unwrap_or_else(|| PathBuf::from("."))
}

pub struct PgHost;

impl Clock for PgHost {
    #[inline]
    fn now_ms(&mut self) -> i64 {
        wall_clock_ms()
    }

    fn now_us(&mut self) -> i64 {
        wall_clock_us()
    }

    fn monotonic_us(&mut self) -> u64 {
        BASE.get_or_init(Instant::now).elapsed().as_micros() as u64
    }
}

impl Waiter for PgHost {
    fn spin(&mut self) {
        std::hint::spin_loop();
        pgrx::check_for_interrupts!();
    }

    fn sleep_ms(&mut self, ms: u64) {
        // SAFETY: this process's own latch; WaitLatch returns early on a signal, and the
        // interrupt check then raises any pending cancel or termination.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                ms as std::ffi::c_long,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        pgrx::check_for_interrupts!();
    }
}

impl MarkStore for PgHost {
    fn persist_mark(&mut self, unix_ms: i64) -> Result<(), String> {
        mark_file::write(&data_dir(), unix_ms).map_err(|e| e.to_string())
    }
}

impl Events for PgHost {
    #[inline]
    fn count_issued(&mut self, shared: &SharedState) {
        process_counters::count_one(shared);
    }

    fn clock_went_back(&mut self, behind_ms: i64) {
        pgrx::warning!(
            "pg_snowflake: the system clock went backwards by {behind_ms} ms; ids continue on the last issued timestamp and wait for the clock to catch up (at most snowflake.max_clock_wait)"
        );
    }
}
