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
//! - [`claim`]: machine ids leased from etcd: the protocol, over any [`claim::Etcd`];
//! - [`etcd_gateway`]: etcd's v3 API through its JSON gateway, as bytes (the shell moves them);
//! - [`etcd_record`]: what a server remembers of its etcd id space, beside its mark;
//! - [`error`]: every error a user can meet, as plain data with its message and hint;
//! - [`machine_source`]: where the machine id comes from (by hand, etcd, a pod index);
//! - [`name_lookup`]: name lookups that may hang, one under way per name;
//! - [`fixed_layout`]: layouts that never change (a preset, or given as arguments), for IMMUTABLE functions;
//! - [`json_form`]: the JSON form of an id, its digits in a string;
//! - [`partition`]: range-partition bounds on the id for steps of time;
//! - [`public_id`]: keyed, reversible public ids;
//! - [`host`]: what the generator needs from the world (clock, waits, mark store, events);
//! - [`lease_record`]: the lease as a WAL record, for servers that replay the WAL;
//! - [`lease`]: the lease protocol that keeps the mark ahead of the ids;
//! - [`lifecycle`]: a server's start, clean stop and replayed leases, as the core decides them;
//! - [`mark_write`]: a mark write's steps, their order and what a failed one means;
//! - [`generator`]: the state machine that issues ids.
//!
//! And for the tests only, after all of those, each using only those before it: `test_host` (a
//! fake host), `etcd_model` (a model of etcd), and the lifecycle simulation in four:
//! `lifecycle_sim_etcd` (leased servers' claims, etcd's faults, the id space's promises),
//! `lifecycle_sim_node` (a server: its data directory, clocks and host), `lifecycle_sim_lines`
//! (lines of history and their promise), `lifecycle_sim` (the world, its steps, the search).

#![forbid(unsafe_code)]

pub mod calendar;
pub mod claim;
pub mod claim_status;
pub mod conninfo;
pub mod error;
pub mod etcd_gateway;
/// A model of etcd (tests only): linearizable keys, leases that expire late, clients cut off.
#[cfg(test)]
mod etcd_model;
pub mod etcd_record;
pub mod fixed_layout;
pub mod generator;
pub mod host;
pub mod json_form;
pub mod key_file;
pub mod layout;
pub mod lease;
pub mod lease_record;
pub mod lifecycle;
/// The lifecycle simulation (tests only): servers' whole lives over the real core, seeded, their
/// machine id set by hand or leased from a model of etcd.
#[cfg(test)]
mod lifecycle_sim;
/// The etcd part of the lifecycle simulation (tests only): leased servers' claims, etcd's faults,
/// the promises of the id space.
#[cfg(test)]
mod lifecycle_sim_etcd;
/// Lines of history of the lifecycle simulation (tests only), and the promise each keeps.
#[cfg(test)]
mod lifecycle_sim_lines;
/// A server of the lifecycle simulation (tests only): its data directory, clocks and host.
#[cfg(test)]
mod lifecycle_sim_node;
pub mod machine_source;
pub mod mark_file;
pub mod mark_write;
pub mod mark_writer;
pub mod name_lookup;
pub mod partition;
pub mod presets;
pub mod public_id;
pub mod start_check;
pub mod state;
/// The test host (tests only): a fake clock, mark store and processes, with switches.
#[cfg(test)]
mod test_host;

pub use error::Error;
pub use layout::{Layout, LayoutError, Parts};
