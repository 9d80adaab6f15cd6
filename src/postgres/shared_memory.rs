//! The generator's shared state in PostgreSQL's shared memory: one [`SharedState`] for the whole server,
//! used by every backend, database, parallel worker and the lease worker. Set up by the book (as
//! contrib's pg_stat_statements does): space requested while libraries preload, the struct created
//! under `AddinShmemInitLock` when shared memory is (re)initialised. That also happens after a
//! backend crash, so the state is rebuilt from the durable high-water mark each time.

use super::clock::wall_clock_ms;
use super::process_counters as counters;
use super::{errors, mark_store, server_config, settings};
use pg_snowflake_core::lifecycle;
use pg_snowflake_core::start_check::{Facts, Reservation};
use pg_snowflake_core::state::SharedState;
use pg_snowflake_core::Error;
use pgrx::pg_sys;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Where this process finds the shared struct; null until the startup hook ran, so also null in
/// a backend that loaded the library without `shared_preload_libraries`.
static SHARED: AtomicPtr<SharedState> = AtomicPtr::new(std::ptr::null_mut());

static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;
#[cfg(not(feature = "pg14"))]
static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;

/// Registers the request and the startup hook. Call from `_PG_init` while libraries preload.
pub fn install_hooks() {
    // SAFETY: the postmaster is single-threaded while it loads libraries; the hooks are chained.
    unsafe {
        #[cfg(feature = "pg14")]
        request_space();
        #[cfg(not(feature = "pg14"))]
        {
            PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
            pg_sys::shmem_request_hook = Some(on_shmem_request);
        }
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(on_shmem_startup);
    }
}

/// When the postmaster exits normally (code 0: after a clean shutdown, once every child process
/// is gone; a crash reinitialisation calls this with code 1), the mark on disk comes down from its
/// lease to the last tick issued on, so that the next start issues its first id at once instead
/// of waiting up to a lease for the clock to pass it. After a crash the postmaster does not get
/// here and the lease mark stays.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_postmaster_exit(code: std::ffi::c_int, _arg: pg_sys::Datum) {
    // Children inherit the callback with the postmaster's memory; only the postmaster acts.
    if code != 0 || unsafe { pg_sys::IsUnderPostmaster } {
        return;
    }
    let (Some(shared), Ok(layout)) = (shared(), server_config::layout()) else { return };
    if let Some(ms) = lifecycle::at_clean_stop(shared, layout) {
        if let Err(e) = mark_store::write(shared, ms) {
            // The lease mark stays: safe, the next start only waits for it.
            pgrx::log!("pg_snowflake: could not lower the high-water mark at shutdown: {e}");
        }
    }
}

/// How many per-process counters were asked for (see `process_counters`).
static COUNTERS: AtomicUsize = AtomicUsize::new(0);

unsafe fn request_space() {
    let counters = counters::wanted();
    COUNTERS.store(counters, Ordering::Relaxed);
    unsafe { pg_sys::RequestAddinShmemSpace(std::mem::size_of::<SharedState>() + 64 + counters::bytes(counters)) };
}

#[cfg(not(feature = "pg14"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_shmem_request() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_REQUEST_HOOK {
            prev();
        }
        request_space();
    }
}

/// The state a server starts from: above the mark on disk, if there is one (the core's
/// `lifecycle::start` decides; this reads the file and says what it found).
fn initial_state() -> SharedState {
    let now = wall_clock_ms();
    let Ok(layout) = server_config::layout() else {
        return SharedState::starting_at(None, 0, now); // nothing can be issued anyway
    };
    let found = mark_store::read();
    if let Err(reason) = &found {
        pgrx::warning!(
            "pg_snowflake cannot generate ids: the high-water mark file {:?} could not be read: {reason}",
            mark_store::path()
        );
    }
    let accepted = settings::accepted_layout_change();
    let facts = Facts {
        layout,
        machine_id: server_config::generator().ok().map(|g| g.machine_id()).filter(|_| server_config::etcd().is_none()),
        leased: server_config::etcd().is_some(),
        system_identifier: mark_store::system_identifier(),
        // Set by hand and reserved in an id space: issued at once only if this data directory saw
        // that reservation confirmed before (test builds' control: whatever etcd says).
        reservation: match (server_config::reservation(), server_config::generator()) {
            (Some(config), Ok(g)) if !super::id_source::fault_hand_set_unguarded() => {
                super::etcd_record::reservation_at_start(config, g.machine_id(), &layout.describe())
            }
            _ => Reservation::None,
        },
        accepted_layout: &accepted,
    };
    let found_mark = matches!(found, Ok(Some(_)));
    let started = lifecycle::start(found, &facts, now);
    if found_mark && super::id_source::fault_start_grant() {
        // Test builds only: the start of issue 51's finding 1 (the negative control).
        started.shared.hot.grant.publish(pg_snowflake_core::state::grant::FOREVER);
    }
    for note in &started.notes {
        pgrx::log!("{note}");
    }
    if let Some((first_new, last_old)) = started.accepted_below {
        pgrx::warning!(
            "pg_snowflake: under the new layout the next ids start at {first_new}, not above {last_old}, the largest id the old layout could have issued: ids of the two layouts do not compare, and a new id can equal an old one (see the manual: Failover and backups, Copies and layout changes)"
        );
    }
    if let Some(e @ Error::LayoutChanged { .. }) = &started.refused {
        errors::warn_at_start(e);
    }
    started.shared
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_shmem_startup() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            prev();
        }
        let lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock; // AddinShmemInitLock
        pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let raw =
            pg_sys::ShmemInitStruct(c"pg_snowflake".as_ptr(), std::mem::size_of::<SharedState>() + 64, &mut found);
        // ShmemInitStruct aligns to 8 bytes; SharedState wants a cache line.
        let shared = raw.cast::<u8>().add(raw.cast::<u8>().align_offset(64)).cast::<SharedState>();
        if !found {
            mark_store::learn_system_identifier();
            shared.write(initial_state());
        }
        let counters = COUNTERS.load(Ordering::Relaxed);
        let raw = pg_sys::ShmemInitStruct(c"pg_snowflake counters".as_ptr(), counters::bytes(counters), &mut found);
        counters::attach(raw.cast(), counters, !found);
        SHARED.store(shared, Ordering::Release);
        pg_sys::LWLockRelease(lock);
        // Runs before shared memory is detached (exit callbacks run last-registered first), and
        // is registered again each time shared memory is (re)initialised.
        if !pg_sys::IsUnderPostmaster {
            pg_sys::on_shmem_exit(Some(on_postmaster_exit), pg_sys::Datum::from(0));
        }
    }
}

/// The server's shared state, or `None` when the library was not preloaded.
#[inline]
pub fn shared() -> Option<&'static SharedState> {
    // SAFETY: once set, the pointer stays valid for the life of this process.
    unsafe { SHARED.load(Ordering::Acquire).as_ref() }
}
