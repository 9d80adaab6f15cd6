//! `snowflake_nextval()`, the column DEFAULT: a raw entry point (`snowflake_nextval_fast`) that
//! issues the plain case, and pgrx's guarded function for every other, both through the core's one
//! issuing function (`Generator::issue_plain` and `Generator::try_issue` run the same steps).
//!
//! **Why the fast path is safe** (issue 61; `pgrx-tests/packaging/fast_path_code.py` checks the built
//! library): it holds nothing that needs a destructor, allocates nothing, indexes nothing and calls
//! nothing but the vDSO clock, so it can neither panic nor raise; every case but the plain one
//! declines before any compare-and-swap (nothing used up) and is handed whole to the guarded
//! function, which may raise an ERROR through this frame (a plain old frame: nothing to unwind);
//! what it reads once per process cannot go stale: the configuration is fixed at start, recovery
//! ending is one-way, the shared state's place and this process's counter slot live as long as
//! the process. An `extern "C"` function turns a panic into an abort, never an unwind into
//! PostgreSQL.

use super::super::clock::wall_clock_ms;
use super::super::host::PgHost;
use super::super::{process_counters, server_config, settings, shared_memory};
use super::raise;
use pg_snowflake_core::generator::{Generator, GrantCheck};
use pg_snowflake_core::host::Recovery;
use pg_snowflake_core::state::SharedState;
use pg_snowflake_core::Error;
use pgrx::prelude::*;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

/// What the raw entry point needs, found by this process's first guarded call that issued an id
/// with everything in place (see the top of this file): none of it changes for the life of the
/// process.
struct Ready {
    generator: Generator,
    shared: &'static SharedState,
    counter: &'static AtomicU64,
    /// The counter is this process's slot's (a plain load and store), not the shared one.
    own: bool,
}

static READY: OnceLock<Ready> = OnceLock::new();

/// The next id of this server: strictly greater than every id it issued before, in any backend.
#[inline]
fn nextval() -> Result<i64, Error> {
    let generator = server_config::generator()?;
    // `let-else`, not `ok_or(Error)`: that builds an `Error` and drops it on every call.
    let Some(shared) = shared_memory::shared() else { return Err(Error::NotPreloaded) };
    // Test builds only: the negative control of issue 56's fix.
    #[cfg(feature = "fault_injection")]
    if settings::fault_stale_grant() {
        return generator.with_grant_check(GrantCheck::Stale).nextval(shared, &mut PgHost).map_err(name_the_source);
    }
    let id = generator.nextval(shared, &mut PgHost).map_err(name_the_source)?;
    // An id issued, so the library is preloaded, its configuration valid, shared memory attached
    // and recovery over (one-way): the raw entry point may issue from now on.
    if READY.get().is_none() && !PgHost.in_recovery() {
        let (counter, own) = process_counters::mine(shared);
        let _ = READY.set(Ready { generator: *generator, shared, counter, own });
    }
    Ok(id)
}

/// A refusal for want of a leased id names where it is leased from (the core does not know), a
/// refusal of a hand-set id the id and where it is reserved; a clock behind the mark another
/// holder recorded in etcd names that holder; a standby's refusal says that a leased id is
/// claimed at its promotion.
#[cold]
fn name_the_source(e: Error) -> Error {
    match (e, server_config::etcd()) {
        (Error::MachineIdNotHeld { last_error, lapsed, trouble, .. }, Some(etcd)) => {
            Error::MachineIdNotHeld { source: etcd.describe(), last_error, lapsed, trouble }
        }
        // Set by hand and reserved in an id space: refused while the reservation is not confirmed.
        (Error::MachineIdNotHeld { last_error, trouble, .. }, None) => match server_config::reservation() {
            Some(config) => Error::HandSetIdRefused {
                id: server_config::generator().map_or(-1, |g| g.machine_id()),
                source: config.describe(),
                last_error,
                trouble,
            },
            None => Error::MachineIdNotHeld { source: String::new(), last_error, lapsed: None, trouble },
        },
        (Error::ClockBehind { behind_ms, waited_ms, .. }, Some(_)) => {
            // The mark waited for is etcd's when it is at least where the clock must get to
            // (else it is this server's own, from its mark file or its WAL), give or take a tick and
            // the time since the refusal was measured.
            let inherited = shared_memory::shared().and_then(|s| s.claim.inherited());
            let unit = server_config::layout().map_or(1, |l| l.tick_ms());
            let mark_from = inherited
                .filter(|(mark_ms, _)| *mark_ms + unit + 1_000 >= wall_clock_ms() + behind_ms)
                .map(|(_, from)| from);
            Error::ClockBehind { behind_ms, waited_ms, mark_from }
        }
        (Error::HotStandby, Some(_)) => Error::HotStandbyLeased,
        (e, _) => e,
    }
}

/// VOLATILE: every call returns a new value. PARALLEL SAFE: the state lives in shared memory, so a
/// parallel worker issues from the same generator as its leader. The SQL binds it to the raw entry
/// point below, which calls this one (its symbol, `snowflake_nextval_wrapper`, is also what
/// databases still on 0.1.0 call).
#[pg_extern(
    volatile,
    parallel_safe,
    sql = r#"
CREATE FUNCTION "snowflake_nextval"() RETURNS bigint
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_nextval_fast';
"#
)]
fn snowflake_nextval() -> i64 {
    raise(nextval())
}

/// Whether the plain case may be tried: always in a real build; in a test build, not while a
/// setting of the fault injection changes what a call does (the clock's offset, the stale grant).
#[inline(always)]
fn plain_settings() -> bool {
    settings::fault_clock_offset_ms() == 0 && !settings::fault_stale_grant()
}

/// The raw entry's clock: milliseconds since 1970 by the vDSO, in wrapping arithmetic (no overflow
/// check, no panic path).
#[inline(always)]
fn plain_clock_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own; CLOCK_REALTIME cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec.wrapping_mul(1000).wrapping_add(ts.tv_nsec / 1_000_000)
}

#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_snowflake_nextval_fast() -> &'static pg_sys::Pg_finfo_record {
    const V1_API: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1_API
}

/// `snowflake_nextval()`'s entry point, without pgrx's frames: the plain case issued here, every
/// other handed to the guarded function (see the top of this file).
///
/// # Safety
/// Called by PostgreSQL's function manager, with its `fcinfo`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn snowflake_nextval_fast(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    if let Some(r) = READY.get() {
        if plain_settings() {
            if let Some(id) = r.generator.issue_plain(r.shared, plain_clock_ms()) {
                if r.own {
                    r.counter.store(r.counter.load(Relaxed).wrapping_add(1), Relaxed);
                } else {
                    r.counter.fetch_add(1, Relaxed);
                }
                return pg_sys::Datum::from(id);
            }
        }
    }
    // SAFETY: the fcinfo PostgreSQL gave.
    unsafe { pg_snowflake_nextval_guarded(fcinfo) }
}

/// Every case but the plain one: pgrx's guarded function, kept out of line so that the raw entry's
/// machine code is the fast path and one jump here (what `fast_path_code.py` checks). Exported
/// under its own name, so that the check can name it in a stripped library (the packages'); it has
/// no `pg_finfo_` record, so no SQL function can be bound to it.
///
/// # Safety
/// Called with PostgreSQL's `fcinfo`.
#[cold]
#[inline(never)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pg_snowflake_nextval_guarded(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: pgrx's guarded function, with the fcinfo PostgreSQL gave.
    unsafe { snowflake_nextval_wrapper(fcinfo) }
}
