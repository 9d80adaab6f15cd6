//! The PostgreSQL shell around the core: everything that knows PostgreSQL, and nothing that decides
//! which id comes next.
//! - [`settings`]: the `snowflake.*` settings (GUCs);
//! - [`clock`]: the wall clock and the boot-time clock;
//! - [`key_file`]: the key of public ids, read from `snowflake.public_key_file`;
//! - [`id_source`]: where the machine id comes from (by hand, etcd, a pod index): its settings;
//! - [`server_config`]: the layout and generator, parsed once in the postmaster at start;
//! - [`shared_memory`]: where the core's shared state lives, set up by the book;
//! - [`process_counters`]: one ids-issued counter per process slot;
//! - [`host`]: the core's clock, waits, mark store, events and limits, for a PostgreSQL process;
//! - [`mark_store`]: the mark file in the data directory;
//! - [`wal`]: the lease as a WAL record (resource manager, insert, redo), PostgreSQL 15+;
//! - [`tls`]: TLS to etcd's `https://` endpoints, through the server's own OpenSSL;
//! - [`etcd_transport`]: the worker's exchanges with etcd, each bounded in time and size;
//! - [`etcd_record`]: who this server is in an etcd id space, and what it remembers of it;
//! - [`claim_worker`]: the background worker that holds a machine id leased from etcd;
//! - [`lease_worker`]: the background worker that renews the high-water mark;
//! - [`worker_exit`]: how those workers end on SIGTERM (started again, or not at a shutdown);
//! - [`errors`]: the core's errors as PostgreSQL errors (SQLSTATE, message, hint);
//! - [`sql_api`]: the SQL functions.

pub mod claim_worker;
pub mod clock;
pub mod errors;
pub mod etcd_record;
pub mod etcd_transport;
pub mod host;
pub mod id_source;
pub mod key_file;
pub mod lease_worker;
pub mod mark_store;
pub mod process_counters;
pub mod server_config;
pub mod settings;
pub mod shared_memory;
pub mod sql_api;
pub mod tls;
pub mod wal;
pub mod worker_exit;

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;
