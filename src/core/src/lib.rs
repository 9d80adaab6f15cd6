//! The core of pg_snowflake: everything that decides which id comes next, and nothing that knows
//! PostgreSQL. It builds and tests without PostgreSQL (`cargo test -p pg_snowflake_core`); the
//! PostgreSQL shell (`src/postgres/`) gives it a clock, a place for the mark and a way to wait.
//!
//! Modules, leaves first (each depends only on those above it):
//! - [`calendar`]: UTC dates for the epoch setting and for messages;
//! - [`layout`]: the bit layout of an id, as arithmetic, with its own errors;
//! - [`presets`]: the layouts of other systems' ids;
//! - [`mark_file`]: the durable high-water mark on disk, and who wrote it;
//! - [`start_check`]: what the mark on disk says at start (a copy, a changed layout);
//! - [`key_file`]: the key file of public ids: its text, its owner and permissions;
//! - [`conninfo`]: libpq connection strings: secrets masked, a connect timeout added;
//! - [`claim_status`]: what the holder of a leased machine id tells every process;
//! - [`state`]: what every process shares: the state word, the mark, the statistics;
//! - [`mark_writer`]: the one process writing a new mark: its flag, what it is doing, takeover;
//! - [`error`]: every error a user can meet, as plain data with its message and hint;
//! - [`fixed_layout`]: layouts that never change (a preset, or given as arguments), for IMMUTABLE functions;
//! - [`json_form`]: the JSON form of an id, its digits in a string;
//! - [`partition`]: range-partition bounds on the id for steps of time;
//! - [`public_id`]: keyed, reversible public ids;
//! - [`host`]: what the generator needs from the world (clock, waits, mark store, events);
//! - [`lease_record`]: the lease as a WAL record, for servers that replay the WAL;
//! - [`lease`]: the lease protocol that keeps the mark ahead of the ids;
//! - [`lifecycle`]: a server's start, clean stop and replayed leases, as the core decides them;
//! - [`mark_write`]: a mark write's steps, their order and what a failed one means;
//! - [`generator`]: the state machine that issues ids;
//! - [`etcd`]: machine ids leased from etcd (a folder: the claim protocol, etcd's JSON gateway, the
//!   record of an id space, the machine id's sources, name lookups).
//!
//! And for the tests only, after all of those: `simulation` (a folder: a fake host, a model of
//! etcd, and the lifecycle simulation over the real core).

#![forbid(unsafe_code)]

pub mod calendar;
pub mod claim_status;
pub mod conninfo;
pub mod error;
pub mod etcd;
pub mod fixed_layout;
pub mod generator;
pub mod host;
pub mod json_form;
pub mod key_file;
pub mod layout;
pub mod lease;
pub mod lease_record;
pub mod lifecycle;
pub mod mark_file;
pub mod mark_write;
pub mod mark_writer;
pub mod partition;
pub mod presets;
pub mod public_id;
/// The tests' world (tests only): a fake host, a model of etcd, the lifecycle simulation.
#[cfg(test)]
mod simulation;
pub mod start_check;
pub mod state;

pub use error::Error;
pub use layout::{Layout, LayoutError, Parts};
