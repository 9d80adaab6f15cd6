//! What the postmaster decides once, while `shared_preload_libraries` load: the layout and the
//! generator. Backends inherit it through fork, so the hot path reads a parsed value and never a
//! setting. A layout that cannot work is reported in the server log at start, and every call that
//! needs it fails with the same error.

use crate::error::Error;
use crate::generator::Generator;
use crate::layout::Layout;
use crate::{gucs, pg_host};
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use std::sync::OnceLock;

struct Config {
    layout: Result<Layout, Error>,
    generator: Result<Generator, Error>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// Reads and checks the settings. Called from `_PG_init` in the postmaster only.
pub fn configure() {
    let raw = gucs::define();
    let layout = gucs::layout(&raw);
    let generator = layout
        .clone()
        .and_then(|l| gucs::machine_id(&raw).and_then(|m| Generator::new(l, m)));
    let verdict = generator
        .clone()
        .and_then(|g| g.layout().check_clock(pg_host::wall_clock_ms()).map(|()| g));
    match verdict {
        Ok(g) => pgrx::log!(
            "pg_snowflake: machine id {}, layout {}",
            g.machine_id(),
            g.layout().describe()
        ),
        Err(e) => ErrorReport::new(
            e.sqlstate(),
            format!("pg_snowflake cannot generate ids: {}", e.message()),
            "pg_snowflake startup",
        )
        .set_hint(e.hint())
        .report(PgLogLevel::WARNING),
    }
    let _ = CONFIG.set(Config { layout, generator });
}

/// The server's layout, for decoding.
#[inline]
pub fn layout() -> Result<&'static Layout, Error> {
    match CONFIG.get() {
        Some(c) => c.layout.as_ref().map_err(Clone::clone),
        None => Err(Error::NotPreloaded),
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
