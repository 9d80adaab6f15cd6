//! The background worker "pg_snowflake lease": it renews the durable high-water mark ahead of the
//! clock while ids are being issued, so that backends never wait for the disk in steady state.
//! Backends renew it themselves if the worker falls behind, so ids never depend on it.

use super::clock::wall_clock_ms;
use super::host::PgHost;
use super::{server_config, shared_memory, worker_exit};
use pg_snowflake_core::lease;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::prelude::*;
use std::time::Duration;

/// How often the worker looks at the mark.
const PERIOD: Duration = Duration::from_millis(100);

/// Registers the worker; called from `_PG_init` while libraries preload.
pub fn register() {
    BackgroundWorkerBuilder::new("pg_snowflake lease")
        .set_type("pg_snowflake lease")
        .set_library("pg_snowflake")
        .set_function("pg_snowflake_lease_main")
        // Shared memory, and a connection to no database: that makes the worker a backend of
        // its own (pg_stat_activity lists it, pg_terminate_backend() reaches it) without SPI.
        .enable_spi_access()
        // Not on a standby: it never issues ids.
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_snowflake_lease_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    worker_exit::note_sigterm_sender();
    BackgroundWorker::connect_worker_to_spi(None, None);
    loop {
        renew_until_sigterm();
        // SIGTERM: from pg_terminate_backend(), or the server is shutting down. After the first,
        // exit code 1 asks the postmaster to start the worker again after its restart interval
        // (code 0 would mean "done for good", and backends would pay every mark write); at a
        // shutdown, code 0; while a smart shutdown waits for its clients, it starts over in place
        // (see `worker_exit`).
        match worker_exit::after_sigterm() {
            worker_exit::Next::Exit(code) => return worker_exit::exit(code),
            worker_exit::Next::StartOver => pgrx::log!(
                "pg_snowflake: the worker \"pg_snowflake lease\" was terminated while a smart shutdown waits for its clients: it starts over at once (the postmaster starts no worker while it shuts down)"
            ),
        }
    }
}

/// Renews the mark when due, until SIGTERM.
fn renew_until_sigterm() {
    if let (Ok(generator), Some(shared)) = (server_config::generator(), shared_memory::shared()) {
        let mut host = PgHost;
        while BackgroundWorker::wait_latch(Some(PERIOD)) {
            reload_if_asked();
            if let Err(e) = lease::renew_if_due(shared, generator.layout(), wall_clock_ms(), &mut host) {
                // Backends will meet the same error when they need the mark; say it once a period.
                pgrx::log!("pg_snowflake lease: {}", e.message());
            }
        }
    } else {
        // Nothing can be issued with this configuration: nothing to renew. Stay, so that the
        // postmaster does not restart the worker every second.
        while BackgroundWorker::wait_latch(None) {
            reload_if_asked();
        }
    }
}

/// On SIGHUP, reads the configuration again (snowflake.max_clock_jump, lease_sync, and the
/// test builds' clock offset reach the worker this way). The machine id's worker calls it too.
pub(super) fn reload_if_asked() {
    if BackgroundWorker::sighup_received() {
        // SAFETY: the worker's own configuration, outside any transaction, as PostgreSQL's
        // processes do on SIGHUP.
        unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
    }
}
