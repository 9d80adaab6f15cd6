//! The machine id's background worker and its exchanges with etcd: the shell's side of the core's
//! `etcd` folder.
//!
//! - [`tls`]: TLS to etcd's `https://` endpoints, through the server's own OpenSSL;
//! - [`etcd_transport`]: the worker's exchanges with etcd, each bounded in time and size;
//! - [`claim_worker`]: the background worker that holds a machine id leased from etcd.

pub mod claim_worker;
pub mod etcd_transport;
pub mod tls;
