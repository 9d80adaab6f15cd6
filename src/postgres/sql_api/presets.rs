//! `snowflake_presets()`: the layouts of other systems that `snowflake_decode(id, layout)` and the
//! IMMUTABLE readers know, as the core lists them (`presets.rs`, the one list): the manual shows
//! this function's rows, and the tests read the names from it. IMMUTABLE: compiled in.

use super::to_timestamptz_or_infinity;
use pg_snowflake_core::presets::PRESETS;
use pgrx::prelude::*;

/// One row per preset, in the core's order: its name, epoch, tick, field widths, the fields from
/// the top bit down, the publisher's example id (NULL where it shows none) and where the layout is
/// published.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, parallel_safe)]
fn snowflake_presets() -> TableIterator<
    'static,
    (
        name!(name, &'static str),
        name!(epoch, TimestampWithTimeZone),
        name!(time_unit_ms, i32),
        name!(timestamp_bits, i32),
        name!(machine_bits, i32),
        name!(sequence_bits, i32),
        name!(fields, String),
        name!(example, Option<i64>),
        name!(source, &'static str),
    ),
> {
    TableIterator::new(PRESETS.iter().map(|p| {
        (
            p.name,
            to_timestamptz_or_infinity(p.epoch_ms),
            p.tick_ms as i32,
            p.timestamp_bits as i32,
            p.machine_bits as i32,
            p.sequence_bits as i32,
            p.fields(),
            p.example.map(|e| e.id),
            p.source,
        )
    }))
}
