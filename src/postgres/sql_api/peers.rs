//! The connection strings of `snowflake_check_peers()` (sql/check_peers.sql): how a peer is shown
//! (no password), what is connected to (a connect timeout added unless the string sets one), and
//! the secrets to keep out of any message about it. The reading is the core's
//! (`pg_snowflake_core::conninfo`); this only gives it a SQL face.

use pg_snowflake_core::conninfo;
use pgrx::pg_sys::ffi;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::{IntoDatum, PgLogLevel, PgMemoryContexts, PgSqlErrorCode};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize};

// A deadline for dblink's connect. From PostgreSQL 16 on, dblink connects through
// libpqsrv_connect(), which can be interrupted but ignores the connection string's connect_timeout;
// before 16 it calls PQconnectdb(), which cannot be interrupted, and whose connect_timeout a peer
// defeats by never pausing (libpq looks at the time only when a wait for the socket times out: a
// flood of ParameterStatus messages before ReadyForQuery hangs it). So snowflake_check_peers() arms
// this timer around dblink_connect(): when it fires, from 16 on the backend is cancelled as by
// statement_timeout; before 16 the sockets opened since it was armed (libpq's) are shut down
// (their reads end), so that PQconnectdb() fails; and the caller learns that it was this timer.

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
/// Before 16: whether the timer is armed for a connect; the sockets this process had open when it
/// was armed, a bit per descriptor (`BEFORE_WORDS` words at `BEFORE`, allocated at arm time: as
/// many as the highest of them needs; kept for the next arming); and `SCAN_TO`, the descriptors
/// below which the handler looks for the connect's socket (the open-files limit at arm time: see
/// watch_new_sockets()). The handler reads them only while `WATCHING` is set, and arming writes
/// them only while it is not.
static WATCHING: AtomicBool = AtomicBool::new(false);
static BEFORE: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
static BEFORE_WORDS: AtomicUsize = AtomicUsize::new(0);
static SCAN_TO: AtomicUsize = AtomicUsize::new(0);
/// The registered timeout's id in this backend; -1 until first used.
static TIMER_ID: AtomicI32 = AtomicI32::new(-1);

/// The timer's handler, in a signal handler: what PostgreSQL's SIGINT handler does for a cancel;
/// before 16, shuts the peer's socket down instead (a cancel would land only after the connect).
unsafe extern "C" fn on_deadline() {
    FIRED.store(true, Relaxed);
    if BEFORE_16 {
        if WATCHING.load(Acquire) {
            shut_down_new_sockets();
        }
        return;
    }
    // SAFETY: the flags are sig_atomic_t, and SetLatch is safe in a signal handler.
    unsafe {
        pg_sys::InterruptPending = 1;
        pg_sys::QueryCancelPending = 1;
        pg_sys::SetLatch(pg_sys::MyLatch);
    }
}

/// In the handler, while `WATCHING`: shuts down every socket below `SCAN_TO` that was not open
/// when the timer was armed. Async-signal-safe: it allocates nothing, takes no lock, and calls
/// only fstat() and shutdown().
fn shut_down_new_sockets() {
    let words = BEFORE_WORDS.load(Relaxed);
    let table = BEFORE.load(Relaxed);
    let before: &[AtomicU64] = if table.is_null() {
        &[]
    } else {
        // SAFETY: published by watch_new_sockets() before `WATCHING` was set, freed only while it
        // is not.
        unsafe { std::slice::from_raw_parts(table, words) }
    };
    for fd in 0..SCAN_TO.load(Relaxed) {
        let open_before = before.get(fd / 64).is_some_and(|w| w.load(Relaxed) & (1 << (fd % 64)) != 0);
        if !open_before && is_socket(fd as i32) {
            // SAFETY: shutdown() is async-signal-safe; the socket is the connect's.
            unsafe { libc::shutdown(fd as i32, libc::SHUT_RDWR) };
        }
    }
}

/// Disarms the timer and forgets whether it fired (its cancel, if not yet acted on, must not end
/// a later statement); returns whether it had fired.
fn disarm(id: i32) -> bool {
    // SAFETY: the id was registered by peer_deadline() (ERRORs are guarded).
    unsafe { ffi::pg_guard_ffi_boundary(|| disable_timeout(id, false)) };
    WATCHING.store(false, SeqCst);
    let fired = FIRED.swap(false, Relaxed);
    if fired && !BEFORE_16 {
        unsafe { pg_sys::QueryCancelPending = 0 };
    }
    fired
}

/// PostgreSQL 14 and 15: dblink connects with PQconnectdb(), which cannot be interrupted.
const BEFORE_16: bool = cfg!(any(feature = "pg14", feature = "pg15"));

/// Whether the descriptor is an open socket (fstat() is async-signal-safe).
fn is_socket(fd: i32) -> bool {
    // SAFETY: fstat() writes into the buffer given; a closed descriptor fails (EBADF).
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK
    }
}

/// Notes the sockets open now, and watches for the connect's (the timer is not armed, and
/// `WATCHING` is not set: disarm() ran).
///
/// Which descriptors the handler must look at: libpq's socket is opened after this, and the kernel
/// numbers a new descriptor below the soft limit on open files (RLIMIT_NOFILE: it refuses one at or
/// above it, EMFILE), so the handler looks below the limit read now (PostgreSQL 14 and 15 never
/// change it in a backend). Not a fixed bound (it was 1024): with `max_files_per_process` raised,
/// and the limit with it, a backend that touched many relations holds that many files, and libpq's
/// socket takes the lowest free number, above them. Not a guessed margin above the descriptors open
/// now either: what opens between now and libpq's socket (catalog files, libpq's own) is not ours
/// to count. The handler's fstat() of a closed descriptor is quick (about 0.1 s for a limit of a
/// million, once, when a connect outlives its deadline). The sockets open now are listed from
/// /proc/self/fd (else by fstat() below the limit), and their table allocated, here: the handler
/// allocates nothing.
fn watch_new_sockets() {
    let limit = open_files_limit();
    let sockets = open_sockets(limit);
    let words = sockets.iter().max().map_or(0, |&fd| fd / 64 + 1);
    let mut have = BEFORE_WORDS.load(Relaxed);
    if have < words {
        // (Room for 1024 descriptors at least, doubled as needed.)
        let table: Box<[AtomicU64]> = (0..words.next_power_of_two().max(16)).map(|_| AtomicU64::new(0)).collect();
        have = table.len();
        let old = BEFORE.swap(Box::into_raw(table) as *mut AtomicU64, Relaxed);
        let old_words = BEFORE_WORDS.swap(have, Relaxed);
        if !old.is_null() {
            // SAFETY: a boxed slice of old_words, published by an earlier call as this one did;
            // the handler reads it only while `WATCHING` is set, and it is not.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(old, old_words)) });
        }
    }
    // SAFETY: the table published above, of `have` words; nothing frees it meanwhile.
    let table = unsafe { std::slice::from_raw_parts(BEFORE.load(Relaxed), have) };
    for word in table {
        word.store(0, Relaxed);
    }
    for fd in sockets {
        table[fd / 64].fetch_or(1 << (fd % 64), Relaxed);
    }
    SCAN_TO.store(limit, Relaxed);
    WATCHING.store(true, Release);
}

/// The soft limit on this process's open files: every descriptor opened from now on is below it.
fn open_files_limit() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit() writes into the struct given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        // (It cannot fail for RLIMIT_NOFILE; if it did, the most a descriptor can be.)
        return libc::c_int::MAX as usize;
    }
    // (Linux keeps it at or below fs.nr_open, at most 2^30.)
    limit.rlim_cur.min(libc::c_int::MAX as libc::rlim_t) as usize
}

/// The descriptors below `limit` that are open sockets now: those /proc/self/fd lists (its own
/// descriptor while it is read is a directory), else each one below `limit` looked at.
fn open_sockets(limit: usize) -> Vec<usize> {
    let listed: Option<Vec<usize>> = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|dir| dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect());
    let candidates: Box<dyn Iterator<Item = usize>> = match listed {
        Some(fds) => Box::new(fds.into_iter()),
        None => Box::new(0..limit),
    };
    candidates.filter(|&fd| fd < limit && is_socket(fd as i32)).collect()
}

/// At the end of every transaction of this backend (commit, abort, prepare; once the timer was
/// first used): whatever happened in it, nothing of ours stays armed for the next statement, which
/// behind a pooler is another client's.
#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    if matches!(event, XACT_EVENT_COMMIT | XACT_EVENT_ABORT | XACT_EVENT_PREPARE) {
        let id = TIMER_ID.load(Relaxed);
        if id >= 0 {
            disarm(id);
        }
    }
}

/// How much this backend's memory may grow while one answer of a peer is awaited: the answers
/// asked for are one small row.
const MAX_ANSWER_GROWTH: i64 = 64 * 1024;

/// How much this backend may write meanwhile (`wchar` of /proc/self/io): libpq writes each notice
/// a peer sends to the server's log (its stderr), so a flood of them is refused before it fills
/// the log's disk.
const MAX_ANSWER_WRITTEN: i64 = 64 * 1024;

/// How much this backend's address space may grow meanwhile: libpq sizes its input buffer to the
/// length a message declares before any of it is there (a DataRow may claim 1 GB), so an answer
/// is refused as soon as it announces that much, not once it has sent it.
const MAX_ANSWER_RESERVED: i64 = 16 * 1024 * 1024;

/// Refuses the answer awaited (54000): the caller closes the link.
fn refuse(message: String) -> ! {
    ErrorReport::new(PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED, message, "snowflake_internal.dblink_poll")
        .report(PgLogLevel::ERROR);
    unreachable!()
}

/// This backend's memory, in bytes, as /proc/self/status says it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MemoryUse {
    /// `RssAnon`: the anonymous resident memory, what malloc and palloc hold (shared memory aside).
    rss_anon: i64,
    /// `VmData`: the data segments' address space, what malloc reserved whether touched or not.
    vm_data: i64,
}

/// This backend's memory now, None where the kernel does not say.
fn memory_use() -> Option<MemoryUse> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    memory_use_in(&status)
}

/// `RssAnon:   1234 kB` and `VmData:   5678 kB` in the text of /proc/self/status, in bytes.
fn memory_use_in(status: &str) -> Option<MemoryUse> {
    let field = |name: &str| -> Option<i64> {
        let line = status.lines().find_map(|l| l.strip_prefix(name))?;
        let kb: i64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
        kb.checked_mul(1024)
    };
    Some(MemoryUse { rss_anon: field("RssAnon:")?, vm_data: field("VmData:")? })
}

/// The bytes this backend wrote so far (`wchar` of /proc/self/io), None where the kernel does not say.
fn bytes_written() -> Option<i64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    wchar_in(&io)
}

/// `wchar: 1234` in the text of /proc/self/io.
fn wchar_in(io: &str) -> Option<i64> {
    io.lines().find_map(|l| l.strip_prefix("wchar:"))?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{memory_use_in, wchar_in, MemoryUse};

    #[test]
    fn wchar_as_linux_writes_it() {
        assert_eq!(wchar_in("rchar: 10\nwchar: 1234\nsyscr: 3\n"), Some(1234));
        assert_eq!(wchar_in("rchar: 10\n"), None);
    }

    #[test]
    fn memory_use_as_linux_writes_it() {
        assert_eq!(
            memory_use_in("VmData:\t  8000 kB\nVmRSS:\t   9000 kB\nRssAnon:\t    1234 kB\nRssFile:\t 5 kB\n"),
            Some(MemoryUse { rss_anon: 1234 * 1024, vm_data: 8000 * 1024 })
        );
        assert_eq!(memory_use_in("VmRSS:\t 9000 kB\nRssAnon:\t 1 kB\n"), None);
        assert_eq!(memory_use_in("VmData:\t 1 kB\nRssAnon:\t x kB\n"), None);
    }
}

/// The SQL functions, in the schema `snowflake_internal` (not the user's): helpers of
/// `snowflake_check_peers()` (sql/check_peers.sql), not for direct use.
#[pg_schema]
mod snowflake_internal {
    use super::*;

    /// One row: `shown` (the string without its secrets, or a placeholder naming `position` when it
    /// does not parse), `connect` (with `connect_timeout` added unless set; NULL when it does not
    /// parse) and `secrets` (every spelling of its secret values). IMMUTABLE: it reads only its
    /// arguments.
    #[pg_extern(immutable, parallel_safe, strict)]
    fn peer_conninfo(
        conninfo: &str,
        position: i32,
        connect_timeout: i32,
    ) -> TableIterator<'static, (name!(shown, String), name!(connect, Option<String>), name!(secrets, Vec<String>))>
    {
        let shown = conninfo::shown(conninfo, position.max(0) as usize);
        let row = match conninfo::parse(conninfo) {
            Ok(c) => (shown, Some(c.with_connect_timeout(connect_timeout.max(1) as u32)), c.secrets()),
            Err(_) => (shown, None, Vec::new()),
        };
        TableIterator::once(row)
    }

    /// Disarms the deadline of this backend and returns whether it fired since it was armed; then,
    /// if `ms` > 0, arms it to end the connect that follows in `ms` milliseconds: PostgreSQL 16 and
    /// later, by cancelling the running statement; before, by shutting down the sockets opened since
    /// (the peer's). It is disarmed at the end of the transaction in any case. VOLATILE; revoked from
    /// PUBLIC (sql/comments.sql).
    #[pg_extern(volatile, parallel_unsafe, strict)]
    fn peer_deadline(ms: i32) -> bool {
        let mut id = TIMER_ID.load(Relaxed);
        if id < 0 {
            // SAFETY: registering a handler in this backend's timeout table, and a callback at the
            // end of each transaction of this backend, once (ERRORs are guarded).
            id = unsafe { ffi::pg_guard_ffi_boundary(|| RegisterTimeout(USER_TIMEOUT, Some(on_deadline))) };
            unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
            TIMER_ID.store(id, Relaxed);
        }
        let fired = disarm(id);
        if ms > 0 {
            if BEFORE_16 {
                watch_new_sockets();
            }
            // SAFETY: the id was registered above.
            unsafe { ffi::pg_guard_ffi_boundary(|| enable_timeout_after(id, ms)) };
        }
        fired
    }

    /// Waits for the answer to the query sent on the caller's dblink link `link`: calls dblink's own
    /// `dblink_is_busy(link)` (directly, in a memory context reset after each call) until it says
    /// the answer is complete (true), or `timeout_ms` passed (false); spins for 20 ms (a round
    /// trip's worth: the clock offset is measured around this wait), then sleeps 2 ms between
    /// polls; a cancel or statement_timeout ends it. libpq holds a whole answer in this backend's
    /// memory until it is complete: an answer that grows this backend's anonymous resident memory
    /// (`RssAnon` of /proc/self/status, read after each poll) by more than 64 kB, or its address space
    /// (`VmData`: a message that declares a huge length) by more than 16 MB, is refused (54000), and
    /// the caller closes the link, which frees it; so is an answer that makes this backend write more
    /// than 64 kB (`wchar` of /proc/self/io: the notices libpq writes to the log). (A poll reads what
    /// the socket has: a peer can add at most that much past the bound.) The same wait reads the end
    /// of each answer (after its first result): libpq keeps every distinct ParameterStatus a peer
    /// sends, so a flood of them grows memory too. Only a dblink_is_busy() the caller may execute is
    /// called. VOLATILE.
    #[pg_extern(volatile, parallel_unsafe, strict)]
    fn dblink_poll(link: &str, timeout_ms: i32) -> bool {
        let is_busy = Spi::get_one::<pg_sys::Oid>(
            "SELECT p.oid FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND d.deptype = 'e'
             JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
             WHERE e.extname = 'dblink' AND p.proname = 'dblink_is_busy' AND p.pronargs = 1
               AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')",
        );
        let Ok(Some(is_busy)) = is_busy else {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "snowflake_check_peers() needs the dblink extension",
                "snowflake_internal.dblink_poll",
            )
            // (As snowflake_check_peers() says it, a row of the README's Errors table; a role without
            // EXECUTE on dblink_is_busy() is refused by dblink_send_query() before it gets here.)
            .set_hint("Run CREATE EXTENSION dblink; in this database (it ships with PostgreSQL's contrib).")
            .report(PgLogLevel::ERROR);
            unreachable!()
        };
        let started = std::time::Instant::now();
        let link = link.into_datum().expect("a text datum");
        let mut calls = PgMemoryContexts::new("snowflake_internal.dblink_poll");
        // The address space from before the first poll: that poll may be the one that reads a huge
        // declared length and sizes libpq's buffer for it, and the next one would fill it.
        let reserved_at_start = memory_use().map(|m| m.vm_data);
        let written_at_start = bytes_written();
        let mut memory_at_start = None;
        loop {
            // SAFETY: dblink_is_busy(text) found above, called with a text datum (ERRORs are guarded);
            // the context holds only what that call allocated, and nothing of it is kept.
            let busy = unsafe {
                let busy =
                    calls.switch_to(|_| pg_sys::OidFunctionCall1Coll(is_busy, pg_sys::InvalidOid, link)).value() as i32;
                calls.reset();
                busy
            };
            if busy == 0 {
                return true;
            }
            let memory = memory_use();
            if let (Some(start), Some(now)) = (reserved_at_start, memory) {
                if now.vm_data - start > MAX_ANSWER_RESERVED {
                    refuse(format!(
                        "its answer announced a message that made this server reserve more than {} MB of memory (one small row was asked for)",
                        MAX_ANSWER_RESERVED / (1024 * 1024)
                    ));
                }
            }
            if let (Some(start), Some(now)) = (written_at_start, bytes_written()) {
                if now - start > MAX_ANSWER_WRITTEN {
                    refuse(format!(
                        "its answer made this server write more than {} kB to its log before it ended (notices; one small row was asked for)",
                        MAX_ANSWER_WRITTEN / 1024
                    ));
                }
            }
            // (Resident memory from the first poll on: what that first call loads is not the peer's.)
            match (memory_at_start, memory) {
                (None, _) => memory_at_start = memory,
                (Some(start), Some(now)) if now.rss_anon - start.rss_anon > MAX_ANSWER_GROWTH => {
                    refuse(format!(
                        "its answer took more than {} kB of this server's memory before it ended (one small row was asked for)",
                        MAX_ANSWER_GROWTH / 1024
                    ));
                }
                _ => {}
            }
            let elapsed = started.elapsed();
            if elapsed.as_millis() > timeout_ms.max(0) as u128 {
                return false;
            }
            if elapsed.as_millis() > 20 {
                // SAFETY: this process's own latch; the interrupt check below raises a pending cancel.
                unsafe {
                    pg_sys::WaitLatch(
                        pg_sys::MyLatch,
                        (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                        2,
                        pg_sys::PG_WAIT_EXTENSION,
                    );
                    pg_sys::ResetLatch(pg_sys::MyLatch);
                }
            }
            pgrx::check_for_interrupts!();
        }
    }
}
