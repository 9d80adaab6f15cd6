//! The core's view of the world inside a PostgreSQL process: the system clock (read through the
//! vDSO, no system call), pauses that PostgreSQL can cancel (Ctrl-C, statement_timeout, shutdown),
//! the mark (its file, and its WAL record on PostgreSQL 15+), the settings, and the server log.

use super::clock::{monotonic_us, wall_clock_ms, wall_clock_us};
use super::{mark_store, process_counters, settings};
use pg_snowflake_core::host::{Clock, Events, Limits, MarkStore, Waiter};
use pg_snowflake_core::state::SharedState;
use pgrx::pg_sys;

pub struct PgHost;

impl PgHost {
    /// Waits until the synchronous standbys have flushed `lsn`, at most snowflake.max_clock_wait;
    /// cancellable (statement_timeout, Ctrl-C), and in the lease worker bounded by that wait.
    #[cfg(not(feature = "pg14"))]
    fn wait_for_sync_standbys(&mut self, lsn: pg_sys::XLogRecPtr) -> Result<(), String> {
        let limit_ms = settings::max_clock_wait_ms();
        let deadline_us = monotonic_us() + limit_ms * 1000;
        while !super::wal::confirmed_by_sync_standbys(lsn) {
            if monotonic_us() > deadline_us {
                return Err(format!(
                    "the synchronous standbys did not confirm the lease within {limit_ms} ms (snowflake.lease_sync = on; the wait is snowflake.max_clock_wait)"
                ));
            }
            self.sleep_ms(1);
        }
        Ok(())
    }
}

impl Clock for PgHost {
    #[inline]
    fn now_ms(&mut self) -> i64 {
        wall_clock_ms()
    }

    fn now_us(&mut self) -> i64 {
        wall_clock_us()
    }

    fn monotonic_us(&mut self) -> u64 {
        monotonic_us()
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
    /// The WAL record first (PostgreSQL 15+; with snowflake.lease_sync, confirmed by the
    /// synchronous standbys), then the file: all before the mark is used.
    fn persist_mark(&mut self, unix_ms: i64) -> Result<(), String> {
        #[cfg(not(feature = "pg14"))]
        if let Some(lsn) = super::wal::log_lease(unix_ms) {
            if settings::lease_sync() {
                self.wait_for_sync_standbys(lsn)?;
            }
        }
        mark_store::write(unix_ms)
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

impl Limits for PgHost {
    fn max_clock_wait_ms(&mut self) -> u64 {
        settings::max_clock_wait_ms()
    }

    fn max_clock_jump_ms(&mut self) -> u64 {
        settings::max_clock_jump_ms()
    }
}
