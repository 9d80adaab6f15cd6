//! pg_snowflake: Snowflake ids (`0 | timestamp | machine id | sequence` in one bigint) generated
//! inside PostgreSQL. This file only wires: the core (`src/core`, the crate `pg_snowflake_core`)
//! decides which id comes next; the PostgreSQL shell (`src/postgres`) gives it a home.

mod postgres;

use postgres::{claim_worker, lease_worker, server_config, shared_memory};

::pgrx::pg_module_magic!(name = c"pg_snowflake", version = c"0.2.0");

/// Runs in the postmaster when the library is in `shared_preload_libraries`, and in a backend when
/// it is loaded on first use. Only the first may define the PGC_POSTMASTER settings and ask for
/// shared memory; in the second case every function reports that the library is not preloaded.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // SAFETY: a flag PostgreSQL sets while it loads shared_preload_libraries.
    if !unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    server_config::configure();
    postgres::host::install_hold_points();
    shared_memory::install_hooks();
    postgres::wal::register();
    lease_worker::register();
    claim_worker::register();
}

/// Used by `cargo pgrx test`: the test cluster preloads the library with a machine id set, as
/// the pg_regress tests' cluster does: one file says how (`pgrx-tests/regress/regress.conf`).
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        include_str!("../pgrx-tests/regress/regress.conf")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect()
    }
}
