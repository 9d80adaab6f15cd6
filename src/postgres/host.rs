//! The core's view of the world inside a PostgreSQL process: the system clock (read through the
//! vDSO, no system call), pauses that PostgreSQL can cancel (Ctrl-C, statement_timeout, shutdown),
//! the I/O of a mark write (its file, and its WAL record on PostgreSQL 15+; the core's `mark_write`
//! orders them), recovery, the settings, and the server log.

use super::clock::{monotonic_us, wall_clock_ms, wall_clock_us};
use super::{mark_store, process_counters, settings, shared_memory};
use pg_snowflake_core::host::{Clock, Events, Limits, MarkStore, Processes, Recovery, Settings, Waiter};
use pg_snowflake_core::lease_record::LEN;
use pg_snowflake_core::mark_write::{self, Identity, MarkIo};
use pg_snowflake_core::mark_writer::{self, MarkWriter, WriteStep};
use pg_snowflake_core::state::SharedState;
use pg_snowflake_core::Error;
use pgrx::pg_sys;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

pub struct PgHost;

/// Test builds only: installs the generator's hold points (`snowflake.fault_hold_at =
/// 'grant_loaded'`: the first attempt to issue of the process pauses between its load of the grant
/// and its load of the state word, for `snowflake.fault_hold_ms`, cancellably, so that a test can stall a backend
/// there, or stop it with SIGSTOP). Nothing in a real build.
pub fn install_hold_points() {
    #[cfg(feature = "fault_injection")]
    let _ = pg_snowflake_core::generator::HOLD_AFTER_GRANT.set(|| {
        // Once per process: an attempt that starts over (the grant changed meanwhile) goes on.
        static HELD: AtomicBool = AtomicBool::new(false);
        if let Some((at, ms)) = settings::fault_hold() {
            if at == "grant_loaded" && !HELD.swap(true, Relaxed) {
                // SAFETY: this process's id, set at its start.
                let pid = unsafe { pg_sys::MyProcPid };
                pgrx::log!("pg_snowflake fault injection: process {pid} pauses after loading the grant for {ms} ms");
                let deadline_us = monotonic_us() + ms * 1000;
                while monotonic_us() < deadline_us {
                    PgHost.sleep_ms(10);
                }
            }
        }
    });
}

/// Whether this process has asked to release the writer's flag when it exits.
static EXIT_RELEASE_REGISTERED: AtomicBool = AtomicBool::new(false);

/// Runs when this process exits, however (ERROR at top level, FATAL, proc_exit), before it
/// leaves shared memory: a FATAL exit does not unwind, so the writer's drop guard cannot run.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn release_writer_at_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    if settings::fault_keep_writer_flag() {
        return; // test builds only: the negative control of the fault tests
    }
    if let Some(shared) = shared_memory::shared() {
        // SAFETY: this process's id, set at its start.
        mark_writer::release_if_held_by(shared, unsafe { pg_sys::MyProcPid });
    }
}

impl Processes for PgHost {
    fn this_process(&mut self) -> i32 {
        if !EXIT_RELEASE_REGISTERED.swap(true, Relaxed) {
            // SAFETY: registers a callback of this process's own; runs once per process.
            unsafe { pg_sys::before_shmem_exit(Some(release_writer_at_exit), pg_sys::Datum::from(0)) };
        }
        // SAFETY: this process's id, set at its start.
        unsafe { pg_sys::MyProcPid }
    }

    fn process_exists(&mut self, pid: i32) -> bool {
        // Signal 0 checks that the process exists (every PostgreSQL process runs as one OS user).
        // SAFETY: sends no signal.
        let gone =
            unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        !gone || settings::fault_keep_writer_flag()
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
        // The lease worker's SIGTERM (pg_terminate_backend, a shutdown): pgrx's handler sets
        // ShutdownRequestPending, not ProcDiePending, so the interrupt check above does not end
        // the worker. End it here, in any wait of a mark write (the synchronous standbys), as
        // PostgreSQL's own processes end on SIGTERM; the exit callback releases the writer's
        // flag. Only background workers' handlers set this flag: a backend never sees it.
        // SAFETY: a sig_atomic_t written by this process's signal handler.
        if unsafe { std::ptr::read_volatile(&raw const pg_sys::ShutdownRequestPending) } != 0 {
            pgrx::ereport!(
                pgrx::PgLogLevel::FATAL,
                pgrx::PgSqlErrorCode::ERRCODE_ADMIN_SHUTDOWN,
                "terminating the pg_snowflake lease worker due to administrator command"
            );
        }
    }
}

impl MarkStore for PgHost {
    /// In the core's order (`mark_write`: the file, then the lease's WAL record, then publish).
    fn persist_mark(&mut self, unix_ms: i64, writer: &MarkWriter) -> Result<(), Error> {
        mark_write::persist(self, unix_ms, writer)
    }
}

/// The I/O of each step of a mark write; the core decides their order.
impl MarkIo for PgHost {
    fn identity(&mut self) -> Result<Identity, Error> {
        mark_store::identity(shared_memory::shared())
    }

    /// In the test builds, a pause when snowflake.fault_hold_at names the step.
    fn at_step(&mut self, step: WriteStep) -> Result<(), Error> {
        #[cfg(feature = "fault_injection")]
        if let Some((at, ms)) = settings::fault_hold() {
            if at == step.name() {
                pgrx::log!("pg_snowflake fault injection: the mark write pauses at {at} for {ms} ms");
                let deadline_us = monotonic_us() + ms * 1000;
                while monotonic_us() < deadline_us {
                    self.sleep_ms(10);
                }
            }
        }
        let _ = step;
        Ok(())
    }

    fn write_temp_file(&mut self, text: &str) -> Result<(), Error> {
        mark_store::write_temp(text)
    }

    fn replace_mark_file(&mut self) -> Result<(), Error> {
        mark_store::replace()
    }

    /// PostgreSQL 14 has no custom resource managers.
    fn logs_leases(&mut self) -> bool {
        cfg!(not(feature = "pg14"))
    }

    /// The record of pg_snowflake's resource manager (15+).
    fn insert_lease_record(&mut self, record: &[u8; LEN]) -> Result<Option<u64>, Error> {
        #[cfg(not(feature = "pg14"))]
        return Ok(super::wal::insert_lease(record));
        #[cfg(feature = "pg14")]
        {
            let _ = record;
            Ok(None)
        }
    }

    fn flush_wal(&mut self, end: u64) -> Result<(), Error> {
        #[cfg(not(feature = "pg14"))]
        super::wal::flush(end);
        let _ = end;
        Ok(())
    }

    fn lease_sync(&mut self) -> bool {
        #[cfg(not(feature = "pg14"))]
        return settings::lease_sync();
        #[cfg(feature = "pg14")]
        false
    }

    fn standbys_confirmed(&mut self, end: u64) -> bool {
        #[cfg(not(feature = "pg14"))]
        return super::wal::confirmed_by_sync_standbys(end);
        #[cfg(feature = "pg14")]
        {
            let _ = end;
            true
        }
    }

    fn sync_standby_names(&mut self) -> String {
        #[cfg(not(feature = "pg14"))]
        return super::wal::sync_standby_names();
        #[cfg(feature = "pg14")]
        String::new()
    }

    fn record_first(&mut self) -> bool {
        #[cfg(not(feature = "pg14"))]
        return settings::fault_record_first();
        #[cfg(feature = "pg14")]
        false
    }
}

impl Recovery for PgHost {
    /// Recovery, once ended, never resumes in a running server (a promoted standby stays a
    /// primary), so after the first `false` this process makes no more calls into PostgreSQL
    /// here: each costs a `sigsetjmp` in pgrx's guard, a sixth of `snowflake_nextval()`'s time.
    #[inline]
    fn in_recovery(&mut self) -> bool {
        // One per process (backends are processes, not threads); Relaxed is all it needs.
        static RECOVERY_ENDED: AtomicBool = AtomicBool::new(false);
        if RECOVERY_ENDED.load(Relaxed) {
            return false;
        }
        // SAFETY: a read of the shared recovery state, valid in any backend.
        let in_recovery = unsafe { pg_sys::RecoveryInProgress() };
        if !in_recovery {
            RECOVERY_ENDED.store(true, Relaxed);
        }
        in_recovery
    }
}

impl Events for PgHost {
    #[inline]
    fn count_issued(&mut self, shared: &SharedState) {
        process_counters::count_one(shared);
    }

    fn writer_taken_over(&mut self, pid: i32) {
        pgrx::log!(
            "pg_snowflake: took over the high-water mark write from process {pid}, which ended without finishing it"
        );
    }

    fn clock_went_back(&mut self, behind_ms: i64) {
        pgrx::warning!(
            "pg_snowflake: the system clock went backwards by {behind_ms} ms; ids continue on the last issued timestamp and wait for the clock to catch up (at most snowflake.max_clock_wait)"
        );
    }
}

impl Settings for PgHost {
    fn limits(&mut self) -> Limits {
        Limits {
            max_clock_wait_ms: settings::max_clock_wait_ms(),
            max_clock_jump_ms: settings::max_clock_jump_ms(),
            max_mark_wait_ms: settings::max_mark_wait_ms(),
        }
    }
}
