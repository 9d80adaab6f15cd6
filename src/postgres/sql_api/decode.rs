//! Reading ids: `snowflake_decode()` into all fields, under this server's layout or another
//! system's, and one extractor per field. STABLE: see the module note in `mod.rs`; the preset
//! form is STABLE too, since one of its layouts is the server's.

use super::super::server_config;
use super::{fill_row, new_row, raise, to_timestamptz};
use pg_snowflake_core::{presets, Error, LayoutError, Parts};
use pgrx::prelude::*;

fn server_parts(id: i64) -> Result<Parts, Error> {
    Ok(server_config::layout()?.decode(id)?)
}

pub(super) fn timestamp(id: i64, parts: &Parts) -> Result<TimestampWithTimeZone, Error> {
    match to_timestamptz(parts.unix_ms) {
        Some(ts) => Ok(ts),
        None => Err(LayoutError::TimeOutOfRange { id }.into()),
    }
}

fn preset_parts(id: i64, name: &str) -> Result<Parts, Error> {
    let preset = presets::find(name).ok_or_else(|| Error::UnknownPreset { name: name.to_string() })?;
    Ok(preset.decode(id)?)
}

pub(super) fn parts_row(
    fcinfo: pg_sys::FunctionCallInfo,
    id: i64,
    parts: Result<Parts, Error>,
) -> pgrx::composite_type!('static, "snowflake_parts") {
    let parts = raise(parts);
    let ts = raise(timestamp(id, &parts));
    let mut row = new_row(fcinfo, "snowflake_parts");
    // Fields are at most MAX_FIELD_BITS (24) wide, a preset's too (presets.rs's tests), so they fit an integer.
    fill_row(
        "snowflake_parts",
        [
            row.set_by_name("ts", ts),
            row.set_by_name("machine_id", parts.machine_id as i32),
            row.set_by_name("sequence", parts.sequence as i32),
        ],
    );
    row
}

#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_decode(id: i64, fcinfo: pg_sys::FunctionCallInfo) -> pgrx::composite_type!('static, "snowflake_parts") {
    parts_row(fcinfo, id, server_parts(id))
}

/// `layout`: a preset (`presets::PRESETS`, shown by `snowflake_presets()`), or server (this server's own).
#[pg_extern(stable, parallel_safe, strict, name = "snowflake_decode")]
fn snowflake_decode_as(
    id: i64,
    layout: &str,
    fcinfo: pg_sys::FunctionCallInfo,
) -> pgrx::composite_type!('static, "snowflake_parts") {
    if layout.trim().eq_ignore_ascii_case(presets::SERVER) {
        return parts_row(fcinfo, id, server_parts(id));
    }
    parts_row(fcinfo, id, preset_parts(id, layout))
}

#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_timestamp(id: i64) -> TimestampWithTimeZone {
    raise(server_parts(id).and_then(|p| timestamp(id, &p)))
}

#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_machine_id(id: i64) -> i32 {
    raise(server_parts(id)).machine_id as i32
}

#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_sequence(id: i64) -> i32 {
    raise(server_parts(id)).sequence as i32
}
