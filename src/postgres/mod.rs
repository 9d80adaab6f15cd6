//! The PostgreSQL shell around the core: everything that knows PostgreSQL, and nothing that decides
//! which id comes next.
//! - [`settings`]: the `snowflake.*` settings (GUCs);
//! - [`server_config`]: the layout and generator, parsed once in the postmaster at start;
//! - [`shared_memory`]: where the core's shared state lives, set up by the book;
//! - [`process_counters`]: one ids-issued counter per process slot;
//! - [`host`]: the core's clock, waits, mark store and events, for a PostgreSQL process;
//! - [`lease_worker`]: the background worker that renews the high-water mark;
//! - [`errors`]: the core's errors as PostgreSQL errors (SQLSTATE, message, hint);
//! - [`sql_api`]: the SQL functions.

pub mod errors;
pub mod host;
pub mod lease_worker;
pub mod process_counters;
pub mod server_config;
pub mod settings;
pub mod shared_memory;
pub mod sql_api;

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;
