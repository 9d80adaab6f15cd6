//! `snowflake_stats()` and `snowflake_stats_reset()`: the generator's health. VOLATILE: the
//! counters move between two reads in one statement.

use super::super::clock::wall_clock_ms;
use super::super::process_counters as counters;
use super::super::{server_config, shared_memory};
use super::{fill_row, new_row, raise, to_timestamptz};
use pg_snowflake_core::{Error, LayoutError};
use pgrx::prelude::*;

#[pg_extern(volatile, parallel_safe)]
fn snowflake_stats(fcinfo: pg_sys::FunctionCallInfo) -> pgrx::composite_type!('static, "snowflake_stats") {
    let shared = raise(shared_memory::shared().ok_or(Error::NotPreloaded));
    let stats = shared.stats_with(counters::total());
    let generator = server_config::generator().ok();
    let layout = server_config::layout().ok();
    let mark_ms = shared.mark.unix_ms.load(std::sync::atomic::Ordering::Relaxed);
    let mut row = new_row(fcinfo, "snowflake_stats");
    let results = [
        row.set_by_name("ids_issued", stats.issued as i64),
        row.set_by_name("sequence_waits", stats.sequence_waits as i64),
        row.set_by_name("clock_rollbacks", stats.clock_rollbacks as i64),
        row.set_by_name("largest_rollback_ms", stats.largest_rollback_ms),
        row.set_by_name("wait_time_ms", stats.wait_us as f64 / 1000.0),
        row.set_by_name(
            "last_issued",
            generator.and_then(|g| shared.last_issued_ms(g.layout())).and_then(to_timestamptz),
        ),
        row.set_by_name("high_water_mark", (mark_ms >= 0).then(|| to_timestamptz(mark_ms)).flatten()),
        row.set_by_name("mark_writes", stats.mark_writes as i64),
        row.set_by_name("mark_waits", stats.mark_waits as i64),
        row.set_by_name("machine_id", super::machine_id::machine_id_now().map(|id| id as i32)),
        row.set_by_name("layout", layout.map(|l| l.describe())),
        row.set_by_name("stats_reset", to_timestamptz(stats.reset_unix_ms)),
    ];
    fill_row("snowflake_stats", results);
    // Fields added in 0.2.0: between a package upgrade and ALTER EXTENSION ... UPDATE the type is
    // still 0.1.0's, without them; the other fields are still filled.
    let ahead = (mark_ms >= 0).then(|| mark_ms - wall_clock_ms());
    let added = [
        row.set_by_name("mark_ahead_ms", ahead),
        row.set_by_name("writer_waits", stats.writer_waits as i64),
        row.set_by_name("mark_wait_timeouts", stats.mark_wait_timeouts as i64),
        row.set_by_name("writer_takeovers", stats.writer_takeovers as i64),
        row.set_by_name("standby_waits", stats.standby_waits as i64),
        row.set_by_name("standby_wait_timeouts", stats.standby_wait_timeouts as i64),
        row.set_by_name("clock_waits", stats.clock_waits as i64),
        row.set_by_name("clock_wait_timeouts", stats.clock_wait_timeouts as i64),
    ];
    for result in added {
        match result {
            Ok(()) | Err(pgrx::datum::TryFromDatumError::NoSuchAttributeName(_)) => {}
            Err(e) => error!("type snowflake_stats has changed: {e}"),
        }
    }
    row
}

/// The time as the generator reads it now: how `snowflake_check_peers()` measures clock offsets.
#[pg_extern(volatile, parallel_safe)]
fn snowflake_clock() -> TimestampWithTimeZone {
    raise(to_timestamptz(wall_clock_ms()).ok_or(LayoutError::TimeOutOfRange { id: 0 }))
}

/// Zeroes the counters. Revoked from PUBLIC by the extension script: superusers only, unless granted.
#[pg_extern(volatile, parallel_unsafe)]
fn snowflake_stats_reset() {
    let shared = raise(shared_memory::shared().ok_or(Error::NotPreloaded));
    shared.reset_stats(wall_clock_ms(), counters::total());
}
