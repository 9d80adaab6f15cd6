//! What the postmaster decides once, while `shared_preload_libraries` load: the layout and the
//! generator. Backends inherit it through fork, so the hot path reads a parsed value and never a
//! setting. A layout that cannot work is reported in the server log at start, and every call that
//! needs it fails with the same error.

use super::id_source::{self, EtcdConfig};
use super::{clock, errors, key_file, settings};
use pg_snowflake_core::generator::Generator;
use pg_snowflake_core::machine_source::Source;
use pg_snowflake_core::{Error, Layout};
use std::sync::OnceLock;

struct Config {
    layout: Result<Layout, Error>,
    generator: Result<Generator, Error>,
    /// snowflake.machine_id_source as written (see `id_source::configured_source`).
    source_name: String,
    /// The id space: where the id is leased from (source etcd), or where the id set by hand is
    /// reserved (source manual, with etcd's settings beside).
    etcd: Option<EtcdConfig>,
    source: Source,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// Reads and checks the settings. Called from `_PG_init` in the postmaster only.
pub fn configure() {
    let raw = settings::define(key_file::load_in_postmaster, id_source::define);
    let layout = settings::layout(&raw);
    let resolved = layout.clone().and_then(|l| id_source::resolve(&raw, &l));
    let (source, etcd) = match &resolved {
        Ok((source, _, etcd)) => (*source, etcd.clone()),
        Err(_) => (Source::Manual, None),
    };
    let source_name = match &resolved {
        Ok((source, _, _)) => source.name().to_string(),
        Err(_) => id_source::configured_source(),
    };
    let generator = resolved.map(|(_, g, _)| g);
    let verdict =
        generator.clone().and_then(|g| g.layout().check_clock(clock::wall_clock_ms()).map(|()| g).map_err(Error::from));
    match (verdict, &etcd) {
        // By hand, reserved in an id space: the line as before (log watchers match it), and where.
        (Ok(g), Some(etcd)) if source == Source::Manual => {
            pgrx::log!("pg_snowflake: machine id {}, layout {}", g.machine_id(), g.layout().describe());
            pgrx::log!(
                "pg_snowflake: machine id {} (set by hand) is to be reserved in {} by the worker \"pg_snowflake machine id\", so that no leasing server of the id space takes it",
                g.machine_id(),
                etcd.describe()
            );
        }
        // The id space's settings in effect (a value PostgreSQL refused left its default: said here).
        (Ok(g), Some(etcd)) => pgrx::log!(
            "pg_snowflake: machine id leased from {}, layout {}; lease TTL {} s (snowflake.etcd_lease_ttl): renewed every {} ms, ids stop {} ms before it could end",
            etcd.describe(),
            g.layout().describe(),
            etcd.ttl_s,
            etcd.space_of(g.layout()).renew_every_ms(),
            etcd.space_of(g.layout()).margin_ms()
        ),
        // By hand: the line as before (log watchers match it); from a pod index: said so.
        (Ok(g), None) if source == Source::Manual => {
            pgrx::log!("pg_snowflake: machine id {}, layout {}", g.machine_id(), g.layout().describe())
        }
        (Ok(g), None) => pgrx::log!(
            "pg_snowflake: machine id {} (snowflake.machine_id_source = '{}'), layout {}",
            g.machine_id(),
            source.name(),
            g.layout().describe()
        ),
        (Err(e), _) => errors::warn_at_start(&e),
    }
    let _ = CONFIG.set(Config { layout, generator, source_name, etcd, source });
}

/// Where the machine id comes from, as configured: the source's name, also when it could not give
/// one (an etcd source with a bad endpoint is still `etcd`; a source that does not exist is named
/// as written).
pub fn source_name() -> &'static str {
    CONFIG.get().map_or("manual", |c| c.source_name.as_str())
}

/// The etcd id space, when the machine id is leased.
pub fn etcd() -> Option<&'static EtcdConfig> {
    CONFIG.get().filter(|c| c.source == Source::Etcd).and_then(|c| c.etcd.as_ref())
}

/// The etcd id space where the machine id set by hand is reserved, if etcd's settings are given
/// beside it.
pub fn reservation() -> Option<&'static EtcdConfig> {
    CONFIG.get().filter(|c| c.source == Source::Manual).and_then(|c| c.etcd.as_ref())
}

/// The server's layout, for decoding.
#[inline]
pub fn layout() -> Result<&'static Layout, Error> {
    match CONFIG.get() {
        Some(c) => c.layout.as_ref().map_err(Clone::clone),
        None => Err(Error::NotPreloaded),
    }
}

/// This server's machine id, -1 when no generator could be made (unset, or a layout that cannot
/// work), or leased (the mark file and the lease record name the id held last: `mark_store`).
pub fn machine_id_or_unset() -> i64 {
    match (generator(), etcd()) {
        (Ok(g), None) => g.machine_id(),
        _ => -1,
    }
}

/// The server's generator, for issuing ids.
#[inline]
pub fn generator() -> Result<&'static Generator, Error> {
    match CONFIG.get() {
        Some(c) => c.generator.as_ref().map_err(Clone::clone),
        None => Err(Error::NotPreloaded),
    }
}
