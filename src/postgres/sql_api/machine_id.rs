//! `snowflake_machine_id_status()`: where this server's machine id comes from, which it is now,
//! and, when leased from etcd, the lease: its local deadline and time left, the last renewal, the
//! mark recorded in etcd, the counters and the last error; set by hand with etcd's settings beside,
//! where its id is reserved; and who else is in the id space (holders and reservations, as last
//! read). Reads shared memory only: never etcd.

use super::super::clock::wall_clock_ms;
use super::super::{server_config, shared_memory};
use super::{raise, to_timestamptz};
use pg_snowflake_core::state::grant;
use pg_snowflake_core::Error;
use pgrx::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

/// The machine id in effect: set by hand or read from the pod index, or leased and held now;
/// `None` when there is none.
pub(super) fn machine_id_now() -> Option<i64> {
    let g = server_config::generator().ok()?;
    if server_config::etcd().is_none() {
        // Set by hand and reserved in an id space: only while its reservation is confirmed.
        let refused = server_config::reservation().is_some()
            && shared_memory::shared().is_some_and(|s| s.hot.grant.word() == grant::NOBODY);
        return (!refused).then(|| g.machine_id());
    }
    let word = shared_memory::shared()?.hot.grant.word();
    let now_tick = g.layout().tick_at(wall_clock_ms()).ok()?;
    grant::in_effect(word, g.layout().machine_bits(), now_tick)
}

/// VOLATILE: the lease moves on between two reads. (The result type is written out: pgrx's
/// SQL generator reads it from the signature and cannot follow a type alias.)
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, parallel_safe)]
fn snowflake_machine_id_status() -> TableIterator<
    'static,
    (
        name!(source, String),
        name!(machine_id, Option<i32>),
        name!(leased_from, Option<String>),
        name!(held, bool),
        name!(lease_id, Option<String>),
        name!(deadline, Option<TimestampWithTimeZone>),
        name!(time_left_ms, Option<i64>),
        name!(last_renewal, Option<TimestampWithTimeZone>),
        name!(recorded_mark, Option<TimestampWithTimeZone>),
        name!(claims, i64),
        name!(renewals, i64),
        name!(renewal_failures, i64),
        name!(leases_lost, i64),
        name!(refused_calls, i64),
        name!(last_error, Option<String>),
        name!(last_error_at, Option<TimestampWithTimeZone>),
        name!(holders_at_claim, Option<i64>),
        name!(reserved_in, Option<String>),
        name!(reservations, Option<i64>),
    ),
> {
    let shared = raise(shared_memory::shared().ok_or(Error::NotPreloaded));
    let etcd = server_config::etcd();
    let machine_id = machine_id_now().map(|id| id as i32);
    let c = &shared.claim;
    let at = |ms: i64| (ms >= 0).then(|| to_timestamptz(ms)).flatten();
    let lease = c.lease_id.load(Relaxed);
    let deadline = c.deadline_ms.load(Relaxed);
    let count = |n: &std::sync::atomic::AtomicU64| n.load(Relaxed) as i64;
    let leased = etcd.is_some();
    // A source that could not give a machine id (its settings refused at start): said as the
    // last error, so that the status says why nothing is held.
    let config_error = server_config::generator().err().map(|e| e.message());
    let row = (
        server_config::source_name().to_string(),
        machine_id,
        etcd.map(|e| e.describe()),
        machine_id.is_some(),
        (leased && lease != 0).then(|| format!("{lease:x}")),
        if leased && machine_id.is_some() { at(deadline) } else { None },
        (leased && machine_id.is_some() && deadline >= 0).then(|| (deadline - wall_clock_ms()).max(0)),
        if leased { at(c.renewed_ms.load(Relaxed)) } else { None },
        if leased { at(c.recorded_mark_ms.load(Relaxed)) } else { None },
        count(&c.claims),
        count(&c.renewals),
        count(&c.renewal_failures),
        count(&c.losses),
        count(&c.refusals),
        c.error().or(config_error),
        at(c.error_ms.load(Relaxed)),
        Some(c.holders_at_claim.load(Relaxed)).filter(|&n| leased && n >= 0),
        // Set by hand, its id reserved in an id space: where (once its worker found it reserved).
        server_config::reservation().filter(|_| c.reserved_id.load(Relaxed) >= 0).map(|e| e.describe()),
        Some(c.reservations.load(Relaxed)).filter(|&n| n >= 0),
    );
    TableIterator::once(row)
}
