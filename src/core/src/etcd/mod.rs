//! Machine ids leased from etcd: the claim protocol and what it needs, decided here and driven by
//! the shell's background worker (over etcd's JSON gateway) and by the lifecycle simulation (over a
//! model of etcd). Nothing outside this folder, in the core, uses it.
//!
//! Modules, leaves first (each depends only on those above it, and on the core's modules):
//! - [`name_lookup`]: name lookups that may hang, one under way per name;
//! - [`claim`]: the protocol, over any [`claim::Etcd`];
//! - [`etcd_gateway`]: etcd's v3 API through its JSON gateway, as bytes (the shell moves them);
//! - [`etcd_record`]: what a server remembers of its etcd id space, beside its mark;
//! - [`machine_source`]: where the machine id comes from (by hand, etcd, a pod index).

pub mod claim;
pub mod etcd_gateway;
pub mod etcd_record;
pub mod machine_source;
pub mod name_lookup;
