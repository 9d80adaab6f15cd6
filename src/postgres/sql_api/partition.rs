//! `snowflake_partition_bounds()`: range-partition bounds on the id for steps of time (monthly,
//! daily...), under the server's layout. STABLE: see the module note in `mod.rs`.

use super::super::server_config;
use super::{raise, to_timestamptz_or_infinity, unix_ms_of};
use pg_snowflake_core::partition::{self, Bounds, Step};
use pg_snowflake_core::Error;
use pgrx::prelude::*;

fn bounds(from: TimestampWithTimeZone, to: TimestampWithTimeZone, step: Interval) -> Result<Vec<Bounds>, Error> {
    let layout = server_config::layout()?;
    let step = Step { months: step.months(), days: step.days(), micros: step.micros() };
    partition::bounds(layout, unix_ms_of(from)?, unix_ms_of(to)?, step)
}

/// One row per partition from `from` to (at least) `to`: `FOR VALUES FROM (from_id) TO (to_id)`
/// holds the ids that carry the times `from_ts <= t < to_ts`; steps are added in UTC.
#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_partition_bounds(
    from: TimestampWithTimeZone,
    to: TimestampWithTimeZone,
    step: Interval,
) -> TableIterator<
    'static,
    (
        name!(from_id, i64),
        name!(to_id, i64),
        name!(suffix, String),
        name!(from_ts, TimestampWithTimeZone),
        name!(to_ts, TimestampWithTimeZone),
    ),
> {
    let rows = raise(bounds(from, to, step));
    TableIterator::new(rows.into_iter().map(|b| {
        (b.from_id, b.to_id, b.suffix, to_timestamptz_or_infinity(b.from_ms), to_timestamptz_or_infinity(b.to_ms))
    }))
}
