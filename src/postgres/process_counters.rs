//! How many ids each process issued, for `snowflake_stats()`: one counter per PostgreSQL process
//! slot (PGPROC), each on a cache line of its own and written only by the process in that slot,
//! so counting an id is a plain load and store, not a second atomic read-modify-write beside the
//! generator's compare-and-swap (that one costs about 3 ns, a tenth of the call). The counters
//! are never zeroed: a process that takes over a slot goes on from its predecessor's count, and a
//! reset of the statistics remembers their sum instead. Processes beyond the counted slots
//! (auxiliary ones) count on the shared atomic instead. (PostgreSQL 14's libraries cannot learn
//! MaxBackends in time: `wanted` computes it from the settings there.)

use pg_snowflake_core::state::SharedState;
use pgrx::pg_sys;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize};

#[repr(C, align(64))]
pub struct Slot(AtomicU64);

/// The counters in shared memory and how many there are; set in every process by `attach`.
static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);

/// This process's counter once looked up; `NONE` when it has none.
static MINE: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
const NONE: *mut AtomicU64 = std::ptr::dangling_mut();

/// How many counters to ask for: one per slot of the processes that can run SQL (regular
/// backends, autovacuum, background workers, WAL senders come first in PGPROC's array).
#[cfg(not(feature = "pg14"))]
pub fn wanted() -> usize {
    // SAFETY: read in the shmem request hook, where PostgreSQL has computed it (0 before that).
    (unsafe { pg_sys::MaxBackends }).max(0) as usize
}

/// PostgreSQL 14 computes MaxBackends only after the libraries preload, where the space is asked
/// for: the same sum (`InitializeMaxBackends`) from the settings, which postgresql.conf has set by
/// then. A library loaded after this one that raised one of them only leaves its processes
/// counting on the shared atomic (`look_up` bounds the slot by what was asked for).
#[cfg(feature = "pg14")]
pub fn wanted() -> usize {
    let setting = |name: &std::ffi::CStr| {
        // SAFETY: a setting's value as text (missing_ok false: these exist), in the postmaster.
        let value = unsafe { pg_sys::GetConfigOption(name.as_ptr(), false, false) };
        if value.is_null() {
            return 0;
        }
        // SAFETY: a NUL-terminated string of PostgreSQL's.
        unsafe { std::ffi::CStr::from_ptr(value) }.to_str().ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0)
    };
    // SAFETY: settings read in the postmaster, set before the libraries preload.
    let (connections, workers, senders) =
        unsafe { (pg_sys::MaxConnections, pg_sys::max_worker_processes, pg_sys::max_wal_senders) };
    let (connections, workers, senders) =
        (connections.max(0) as usize, workers.max(0) as usize, senders.max(0) as usize);
    connections + setting(c"autovacuum_max_workers") + 1 + workers + senders
}

pub fn bytes(len: usize) -> usize {
    len * std::mem::size_of::<Slot>() + 64
}

/// Places the counters in the space ShmemInitStruct returned, zeroing them if it is new.
///
/// # Safety
/// `raw` points to at least `bytes(len)` bytes of shared memory, valid for the process's life.
pub unsafe fn attach(raw: *mut u8, len: usize, new: bool) {
    let slots = unsafe { raw.add(raw.align_offset(64)) }.cast::<Slot>();
    if new {
        for i in 0..len {
            unsafe { slots.add(i).write(Slot(AtomicU64::new(0))) };
        }
    }
    LEN.store(len, Relaxed);
    SLOTS.store(slots, Release);
}

/// This process's counter: the one of its PGPROC slot, if that slot is counted.
#[cold]
fn look_up() -> *mut AtomicU64 {
    let slots = SLOTS.load(Acquire);
    // SAFETY: MyProc and ProcGlobal are set before any SQL runs and fixed for the process's life.
    let index = unsafe {
        let (me, global) = (pg_sys::MyProc, pg_sys::ProcGlobal);
        if slots.is_null() || me.is_null() || global.is_null() {
            return NONE;
        }
        me.offset_from((*global).allProcs)
    };
    if index < 0 || index as usize >= LEN.load(Relaxed) {
        return NONE;
    }
    // SAFETY: in bounds, checked above.
    unsafe { &raw mut (*slots.add(index as usize)).0 }
}

/// This process's counter for the raw entry point (`sql_api::generate`): its slot's, written by
/// this process only (`true`), or the shared one, counted with an atomic add (`false`).
pub fn mine(shared: &'static SharedState) -> (&'static AtomicU64, bool) {
    let mut mine = MINE.load(Relaxed);
    if mine.is_null() {
        mine = look_up();
        MINE.store(mine, Relaxed);
    }
    if mine == NONE {
        (&shared.hot.issued, false)
    } else {
        // SAFETY: a counter in shared memory, for the life of the process.
        (unsafe { &*mine }, true)
    }
}

/// Counts one id issued by this process.
#[inline]
pub fn count_one(shared: &SharedState) {
    let mut mine = MINE.load(Relaxed);
    if mine.is_null() {
        mine = look_up();
        MINE.store(mine, Relaxed);
    }
    if mine == NONE {
        shared.hot.issued.fetch_add(1, Relaxed);
    } else {
        // SAFETY: a counter in shared memory that only this process writes.
        let counter = unsafe { &*mine };
        counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
    }
}

/// The sum of every process's counter now.
pub fn total() -> u64 {
    let slots = SLOTS.load(Acquire);
    if slots.is_null() {
        return 0;
    }
    // SAFETY: LEN counters live at `slots` for the life of the process.
    (0..LEN.load(Relaxed)).map(|i| unsafe { (*slots.add(i)).0.load(Relaxed) }).fold(0, u64::wrapping_add)
}
