//! The tests' world (tests only): a fake host, a model of etcd, and the lifecycle simulation over
//! the real core. Nothing of it is built into the library.
//!
//! Modules, each using only those above it: [`test_host`] (a fake clock, mark store and processes,
//! with switches), [`etcd_model`] (linearizable keys, leases that expire late, clients cut off),
//! and the lifecycle simulation in four: [`lifecycle_sim_etcd`] (leased servers' claims, etcd's
//! faults, the id space's promises), [`lifecycle_sim_node`] (a server: its data directory, clocks
//! and host), [`lifecycle_sim_lines`] (lines of history and their promise), [`lifecycle_sim`] (the
//! world, its steps, the search).

pub(crate) mod etcd_model;
pub(crate) mod lifecycle_sim;
pub(crate) mod lifecycle_sim_etcd;
pub(crate) mod lifecycle_sim_lines;
pub(crate) mod lifecycle_sim_node;
pub(crate) mod test_host;
