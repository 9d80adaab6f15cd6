//! What the postmaster decides once, while `shared_preload_libraries` load: the layout and the
//! generator. Backends inherit it through fork, so the hot path reads a parsed value and never a
//! setting. A layout that cannot work is reported in the server log at start, and every call that
//! needs it fails with the same error.

use super::{clock, errors, key_file, settings};
use pg_snowflake_core::generator::Generator;
use pg_snowflake_core::{Error, Layout};
use std::sync::OnceLock;

struct Config {
    layout: Result<Layout, Error>,
    generator: Result<Generator, Error>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// Reads and checks the settings. Called from `_PG_init` in the postmaster only.
pub fn configure() {
    let raw = settings::define(key_file::load_in_postmaster);
    let layout = settings::layout(&raw);
    let generator = layout.clone().and_then(|l| settings::machine_id(&raw).and_then(|m| Ok(Generator::new(l, m)?)));
    let verdict =
        generator.clone().and_then(|g| g.layout().check_clock(clock::wall_clock_ms()).map(|()| g).map_err(Error::from));
    match verdict {
        Ok(g) => pgrx::log!("pg_snowflake: machine id {}, layout {}", g.machine_id(), g.layout().describe()),
        Err(e) => errors::warn_at_start(&e),
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

/// This server's machine id, -1 when no generator could be made (unset, or a layout that cannot
/// work): what the mark file and the lease record say of their writer.
pub fn machine_id_or_unset() -> i64 {
    generator().map(|g| g.machine_id()).unwrap_or(-1)
}

/// The server's generator, for issuing ids.
#[inline]
pub fn generator() -> Result<&'static Generator, Error> {
    match CONFIG.get() {
        Some(c) => c.generator.as_ref().map_err(Clone::clone),
        None => Err(Error::NotPreloaded),
    }
}
