//! The clocks a PostgreSQL process reads: the wall clock (through the vDSO, no system call; shifted
//! by the test builds' snowflake.fault_clock_offset) and the machine's boot-time clock.

use super::settings;

/// The system clock. One vDSO call, no system call; read straight from the `timespec` (through
/// `SystemTime` it costs a checked subtraction more, a tenth of `snowflake_nextval()`'s time).
#[inline]
fn wall_clock() -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own; CLOCK_REALTIME cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts
}

/// Milliseconds since 1970-01-01 UTC by the system clock, negative before it (tv_nsec is in
/// 0..1e9, so this rounds down before 1970 too).
#[inline]
pub fn wall_clock_ms() -> i64 {
    let ts = wall_clock();
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000 + settings::fault_clock_offset_ms()
}

/// The same clock in microseconds.
pub fn wall_clock_us() -> i64 {
    let ts = wall_clock();
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000 + settings::fault_clock_offset_ms() * 1000
}

/// Microseconds since the machine booted (CLOCK_BOOTTIME): never goes backwards, reads the same in
/// every process, and, unlike CLOCK_MONOTONIC, goes on while a VM is suspended, so that the time
/// a suspended server missed is not taken for a wall clock jumping forward.
pub fn monotonic_us() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1000
}
