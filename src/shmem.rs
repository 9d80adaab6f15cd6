//! The generator's state in shared memory: one atomic word for the whole server, shared by every
//! backend, database and parallel worker. Set up by the book (as contrib's pg_stat_statements
//! does): space requested while libraries preload, the struct created or attached under
//! `AddinShmemInitLock` when shared memory is (re)initialised, which also happens after a backend
//! crash.

use pgrx::pg_sys;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

#[repr(C)]
struct Shared {
    /// `last_tick << sequence_bits | last_sequence`; see `generator`.
    state: AtomicU64,
}

/// Where this process finds the shared struct; null until the startup hook ran, so also null in
/// a backend that loaded the library without `shared_preload_libraries`.
static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

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

unsafe fn request_space() {
    unsafe { pg_sys::RequestAddinShmemSpace(std::mem::size_of::<Shared>()) };
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

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_shmem_startup() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            prev();
        }
        let lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock; // AddinShmemInitLock
        pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let shared = pg_sys::ShmemInitStruct(c"pg_snowflake".as_ptr(), std::mem::size_of::<Shared>(), &mut found)
            .cast::<Shared>();
        if !found {
            shared.write(Shared { state: AtomicU64::new(0) });
        }
        SHARED.store(shared, Ordering::Release);
        pg_sys::LWLockRelease(lock);
    }
}

/// The shared state word, or `None` when the library was not preloaded.
#[inline]
pub fn state() -> Option<&'static AtomicU64> {
    // SAFETY: once set, the pointer stays valid for the life of this process.
    unsafe { SHARED.load(Ordering::Acquire).as_ref().map(|s| &s.state) }
}
