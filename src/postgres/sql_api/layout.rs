//! `snowflake_layout()`: the running layout as one row. STABLE: see the module note in `mod.rs`.

use super::super::server_config;
use super::{fill_row, new_row, raise, to_timestamptz_or_infinity};
use pgrx::prelude::*;

#[pg_extern(stable, parallel_safe)]
fn snowflake_layout(fcinfo: pg_sys::FunctionCallInfo) -> pgrx::composite_type!('static, "snowflake_layout") {
    let layout = raise(server_config::layout());
    let per_tick = layout.max_sequence() + 1;
    let mut row = new_row(fcinfo, "snowflake_layout");
    let results = [
        row.set_by_name("epoch", to_timestamptz_or_infinity(layout.epoch_ms())),
        row.set_by_name("time_unit_ms", layout.tick_ms() as i32),
        row.set_by_name("timestamp_bits", layout.timestamp_bits() as i32),
        row.set_by_name("machine_bits", layout.machine_bits() as i32),
        row.set_by_name("sequence_bits", layout.sequence_bits() as i32),
        row.set_by_name("max_machine_id", layout.max_machine_id() as i32),
        row.set_by_name("ids_per_tick", per_tick),
        // A float: 60 s ticks with a 1-bit sequence make 2 ids a minute, 0.033 a second. Version
        // 0.1.0's type has a bigint, until ALTER EXTENSION pg_snowflake UPDATE.
        row.set_by_name("ids_per_second", per_tick as f64 * 1000.0 / layout.tick_ms() as f64)
            .or_else(|_| row.set_by_name("ids_per_second", per_tick * 1000 / layout.tick_ms())),
        row.set_by_name("timestamp_field_ends", to_timestamptz_or_infinity(layout.end_unix_ms())),
    ];
    fill_row("snowflake_layout", results);
    row
}
