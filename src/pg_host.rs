//! The generator's view of the world inside a backend: the system clock (read through the vDSO, no
//! system call) and pauses that PostgreSQL can cancel (Ctrl-C, statement_timeout, shutdown).

use crate::generator::Host;
use pgrx::pg_sys;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since 1970-01-01 UTC by the system clock, negative before it.
#[inline]
pub fn wall_clock_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(before) => -(before.duration().as_millis() as i64) - 1,
    }
}

/// Created for each call; it reads the monotonic clock only once a wait begins.
#[derive(Default)]
pub struct PgHost {
    wait_started: Option<Instant>,
}

impl Host for PgHost {
    #[inline]
    fn now_ms(&mut self) -> i64 {
        wall_clock_ms()
    }

    fn monotonic_us(&mut self) -> u64 {
        self.wait_started.get_or_insert_with(Instant::now).elapsed().as_micros() as u64
    }

    fn spin(&mut self) {
        std::hint::spin_loop();
        pgrx::check_for_interrupts!();
    }

    fn sleep_ms(&mut self, ms: u64) {
        // SAFETY: a backend's own latch; WaitLatch returns early on a signal, and the interrupt
        // check then raises any pending cancel or termination.
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
