//! IMMUTABLE forms of the readers, for expression indexes, generated columns and partition keys:
//! the layout is given by the caller, as a preset name or as its four parameters, never read from
//! the server (whose layout can change after a restart; see the module note in `mod.rs`).
//! `snowflake_from_timestamp(ts, layout...)` too, for partition bounds and CHECK constraints.

use super::decode::{parts_row, timestamp};
use super::{raise, unix_ms_of};
use pg_snowflake_core::fixed_layout::{self, FixedLayout};
use pg_snowflake_core::{Error, Parts};
use pgrx::prelude::*;

fn explicit(
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: i32,
) -> Result<FixedLayout, Error> {
    fixed_layout::explicit(unix_ms_of(epoch)?, time_unit_ms, machine_bits, sequence_bits)
}

fn explicit_parts(
    id: i64,
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: i32,
) -> Result<Parts, Error> {
    Ok(explicit(epoch, machine_bits, sequence_bits, time_unit_ms)?.decode(id)?)
}

fn preset_parts(id: i64, preset: &str) -> Result<Parts, Error> {
    Ok(fixed_layout::preset(preset)?.decode(id)?)
}

#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_decode")]
fn snowflake_decode_fixed(
    id: i64,
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: default!(i32, 1),
    fcinfo: pg_sys::FunctionCallInfo,
) -> pgrx::composite_type!('static, "snowflake_parts") {
    parts_row(fcinfo, id, explicit_parts(id, epoch, machine_bits, sequence_bits, time_unit_ms))
}

#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_timestamp")]
fn snowflake_timestamp_fixed(
    id: i64,
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: default!(i32, 1),
) -> TimestampWithTimeZone {
    raise(explicit_parts(id, epoch, machine_bits, sequence_bits, time_unit_ms).and_then(|p| timestamp(id, &p)))
}

#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_machine_id")]
fn snowflake_machine_id_fixed(
    id: i64,
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: default!(i32, 1),
) -> i32 {
    raise(explicit_parts(id, epoch, machine_bits, sequence_bits, time_unit_ms)).machine_id as i32
}

#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_sequence")]
fn snowflake_sequence_fixed(
    id: i64,
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: default!(i32, 1),
) -> i32 {
    raise(explicit_parts(id, epoch, machine_bits, sequence_bits, time_unit_ms)).sequence as i32
}

/// The smallest id of this layout that carries `ts` (machine 0, sequence 0).
#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_from_timestamp")]
fn snowflake_from_timestamp_fixed(
    ts: TimestampWithTimeZone,
    epoch: TimestampWithTimeZone,
    machine_bits: i32,
    sequence_bits: i32,
    time_unit_ms: default!(i32, 1),
) -> i64 {
    let layout = |epoch| fixed_layout::explicit_layout(unix_ms_of(epoch)?, time_unit_ms, machine_bits, sequence_bits);
    raise(layout(epoch).and_then(|l| Ok(l.compose_checked(unix_ms_of(ts)?, 0, 0)?)))
}

/// `preset`: a preset (`presets::PRESETS`, shown by `snowflake_presets()`); not `server`.
#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_timestamp")]
fn snowflake_timestamp_preset(id: i64, preset: &str) -> TimestampWithTimeZone {
    raise(preset_parts(id, preset).and_then(|p| timestamp(id, &p)))
}

#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_machine_id")]
fn snowflake_machine_id_preset(id: i64, preset: &str) -> i32 {
    raise(preset_parts(id, preset)).machine_id as i32
}

#[pg_extern(immutable, parallel_safe, strict, name = "snowflake_sequence")]
fn snowflake_sequence_preset(id: i64, preset: &str) -> i32 {
    raise(preset_parts(id, preset)).sequence as i32
}
