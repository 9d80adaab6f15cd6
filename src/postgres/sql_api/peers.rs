//! The connection strings of `snowflake_check_peers()` (sql/check_peers.sql): how a peer is shown
//! (no password), what is connected to (a connect timeout added unless the string sets one), and
//! the secrets to keep out of any message about it. The reading is the core's
//! (`pg_snowflake_core::conninfo`); this only gives it a SQL face.

use pg_snowflake_core::conninfo;
use pgrx::pg_sys::ffi;
use pgrx::prelude::*;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI32};

/// One row: `shown` (the string without its secrets, or a placeholder naming `position` when it
/// does not parse), `connect` (with `connect_timeout` added unless set; NULL when it does not
/// parse) and `secrets` (every spelling of its secret values). IMMUTABLE: it reads only its
/// arguments.
#[pg_extern(immutable, parallel_safe, strict)]
fn snowflake_peer_conninfo(
    conninfo: &str,
    position: i32,
    connect_timeout: i32,
) -> TableIterator<'static, (name!(shown, String), name!(connect, Option<String>), name!(secrets, Vec<String>))> {
    let shown = conninfo::shown(conninfo, position.max(0) as usize);
    let row = match conninfo::parse(conninfo) {
        Ok(c) => (shown, Some(c.with_connect_timeout(connect_timeout.max(1) as u32)), c.secrets()),
        Err(_) => (shown, None, Vec::new()),
    };
    TableIterator::once(row)
}

// A deadline for dblink's connect. From PostgreSQL 16 on, dblink connects through
// libpqsrv_connect(), which can be interrupted but ignores the connection string's connect_timeout;
// before 16 it calls PQconnectdb(), which honours connect_timeout but cannot be interrupted. So
// snowflake_check_peers() arms this timer around dblink_connect(): when it fires, the backend is
// cancelled as by statement_timeout, and the caller learns that it was this timer.

/// `TimeoutId`'s `USER_TIMEOUT` (utils/timeout.h) in each major: the first id an extension may
/// register.
#[cfg(feature = "pg14")]
const USER_TIMEOUT: i32 = 10;
#[cfg(any(feature = "pg15", feature = "pg16"))]
const USER_TIMEOUT: i32 = 12;
#[cfg(any(feature = "pg17", feature = "pg18"))]
const USER_TIMEOUT: i32 = 13;

// Called through pg_guard_ffi_boundary: they may raise a PostgreSQL ERROR.
unsafe extern "C-unwind" {
    fn RegisterTimeout(id: i32, handler: Option<unsafe extern "C" fn()>) -> i32;
    fn enable_timeout_after(id: i32, delay_ms: std::ffi::c_int);
    fn disable_timeout(id: i32, keep_indicator: bool);
}

static FIRED: AtomicBool = AtomicBool::new(false);
/// The registered timeout's id in this backend; -1 until first used.
static TIMER_ID: AtomicI32 = AtomicI32::new(-1);

/// The timer's handler, in a signal handler: what PostgreSQL's SIGINT handler does for a cancel.
unsafe extern "C" fn on_deadline() {
    FIRED.store(true, Relaxed);
    // SAFETY: the flags are sig_atomic_t, and SetLatch is safe in a signal handler.
    unsafe {
        pg_sys::InterruptPending = 1;
        pg_sys::QueryCancelPending = 1;
        pg_sys::SetLatch(pg_sys::MyLatch);
    }
}

/// Disarms the deadline of this backend and returns whether it fired since it was armed; then,
/// if `ms` > 0, arms it to cancel the running statement in `ms` milliseconds (PostgreSQL 16 and
/// later; before, it does nothing and returns false). VOLATILE.
#[pg_extern(volatile, parallel_unsafe, strict)]
fn snowflake_peer_deadline(ms: i32) -> bool {
    // PostgreSQL 14 and 15: dblink connects with PQconnectdb(), which honours connect_timeout and
    // cannot be interrupted; a cancel of ours would only land after it returned, on whatever the
    // caller runs next (its error handler). So no timer there.
    if cfg!(any(feature = "pg14", feature = "pg15")) {
        return false;
    }
    let mut id = TIMER_ID.load(Relaxed);
    if id < 0 {
        // SAFETY: registering a handler in this backend's timeout table (ERRORs are guarded).
        id = unsafe { ffi::pg_guard_ffi_boundary(|| RegisterTimeout(USER_TIMEOUT, Some(on_deadline))) };
        TIMER_ID.store(id, Relaxed);
    }
    // SAFETY: the id was registered above.
    unsafe { ffi::pg_guard_ffi_boundary(|| disable_timeout(id, false)) };
    let fired = FIRED.swap(false, Relaxed);
    if fired {
        // Its cancel, if not yet acted on, must not end a later statement.
        unsafe { pg_sys::QueryCancelPending = 0 };
    }
    if ms > 0 {
        unsafe { ffi::pg_guard_ffi_boundary(|| enable_timeout_after(id, ms)) };
    }
    fired
}
