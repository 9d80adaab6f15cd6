//! Who this server is in an etcd id space (`claim::Holder`), and what it remembers of that space:
//! the file `pg_snowflake.etcd` beside the mark in the data directory (the core's `etcd_record`
//! says what it holds and how it is written). Read by the postmaster when shared memory is set up
//! (whether a hand-set id's reservation was confirmed before) and by the machine id's worker.

use super::id_source::{hostname, EtcdConfig};
use super::mark_store;
use pg_snowflake_core::claim::Holder;
use pg_snowflake_core::etcd_record::{self, EtcdRecord};
use pg_snowflake_core::start_check::Reservation;
use pgrx::pg_sys;

/// This server as a holder of a machine id: its cluster, host, port, data directory and
/// postmaster (its pid and start time: the same across a crash-restart).
pub fn me() -> Holder {
    // SAFETY: settings and globals set before libraries load (the postmaster's pid and start time
    // before it forks), read-only since.
    let (port, pid, started) = unsafe { (pg_sys::PostPortNumber, pg_sys::PostmasterPid, pg_sys::PgStartTime) };
    Holder {
        system_identifier: mark_store::system_identifier().to_string(),
        host: hostname().unwrap_or_default(),
        port,
        data_directory: mark_store::data_dir().to_string_lossy().into_owned(),
        postmaster: format!("{pid}@{started}"),
    }
}

/// The record in the data directory, or why it cannot be read.
pub fn read() -> Result<Option<EtcdRecord>, String> {
    etcd_record::read(&mark_store::data_dir())
}

/// The record replaced by `record`, durably.
pub fn write(record: &EtcdRecord) -> Result<(), String> {
    etcd_record::write(&mark_store::data_dir(), record)
        .map_err(|e| format!("could not write {:?}: {e}", mark_store::data_dir().join(etcd_record::FILE_NAME)))
}

/// At start, for a machine id `id` set by hand and reserved in `config`'s id space, of `layout`:
/// whether this data directory saw that reservation confirmed before (a record that cannot be read
/// is none).
pub fn reservation_at_start(config: &EtcdConfig, id: i64, layout: &str) -> Reservation {
    let found = read().unwrap_or_else(|e| {
        pgrx::log!("pg_snowflake: {} is not used: {e}", etcd_record::FILE_NAME);
        None
    });
    EtcdRecord::reservation(found.as_ref(), &config.prefix, &me(), id, layout)
}
