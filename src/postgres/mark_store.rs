//! Where this server keeps its high-water mark: the file `pg_snowflake.mark` in the data directory,
//! written with this server's machine id (leased: the one it held last, and the id space), layout
//! and system identifier (the core's `mark_file` says how).

use super::server_config;
use pg_snowflake_core::lifecycle;
use pg_snowflake_core::mark_file::{self, MarkRecord};
use pg_snowflake_core::mark_write::Identity;
use pg_snowflake_core::state::SharedState;
use pg_snowflake_core::{Error, Layout};
use pgrx::pg_sys;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The cluster's system identifier, read once in the postmaster when shared memory is set up and
/// inherited by every process it forks.
static SYSTEM_IDENTIFIER: AtomicU64 = AtomicU64::new(0);

pub fn learn_system_identifier() {
    // SAFETY: the control file has been read before shared memory is set up.
    SYSTEM_IDENTIFIER.store(unsafe { pg_sys::GetSystemIdentifier() }, Relaxed);
}

pub fn system_identifier() -> u64 {
    SYSTEM_IDENTIFIER.load(Relaxed)
}

/// The data directory; PostgreSQL processes also run in it.
pub fn data_dir() -> PathBuf {
    // SAFETY: DataDir is set before libraries load and never freed.
    unsafe { pg_sys::DataDir.as_ref() }
        .map(|p| PathBuf::from(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The mark on disk, if any.
pub fn read() -> Result<Option<MarkRecord>, String> {
    mark_file::read(&data_dir())
}

/// Makes `unix_ms` this server's durable mark, stamped with the layout the core says
/// (`lifecycle::stamp`: the old one while a change of layout is refused): the clean stop's write.
pub fn write(shared: &SharedState, unix_ms: i64) -> Result<(), Error> {
    write_stamped(shared, unix_ms, &lifecycle::stamp(shared, server_config::layout()?))
}

/// The machine id this server's marks name: set by hand (or read from a pod index), or leased:
/// the one it held last by `shared` (-1: none since shared memory was set up), and the id space.
fn writer(shared: Option<&SharedState>) -> mark_file::Writer<'static> {
    match server_config::etcd() {
        Some(etcd) => mark_file::Writer {
            machine_id: shared.map_or(-1, |s| s.claim.last_held.load(Relaxed)),
            leased_from: Some(etcd.prefix.as_str()),
        },
        None => mark_file::Writer { machine_id: server_config::machine_id_or_unset(), leased_from: None },
    }
}

/// Who this server is, as its mark file and lease records say it (`shared`: its shared state).
pub fn identity(shared: Option<&SharedState>) -> Result<Identity, Error> {
    let writer = writer(shared);
    Ok(Identity {
        machine_id: writer.machine_id,
        leased_from: writer.leased_from,
        layout: *server_config::layout()?,
        system_identifier: system_identifier(),
    })
}

/// A mark write's first file step: `text` in the temporary file, synced.
pub fn write_temp(text: &str) -> Result<(), Error> {
    mark_file::write_temp(&data_dir(), text).map_err(write_error)
}

/// Its second: the temporary file renamed over the mark, the directory synced.
pub fn replace() -> Result<(), Error> {
    mark_file::replace(&data_dir()).map_err(write_error)
}

fn write_error(e: std::io::Error) -> Error {
    Error::MarkWrite { reason: e.to_string(), os_error: e.raw_os_error() }
}

/// The mark file replaced by `unix_ms`, stamped with `stamped`, with this server's identity.
fn write_stamped(shared: &SharedState, unix_ms: i64, stamped: &Layout) -> Result<(), Error> {
    mark_file::write(&data_dir(), unix_ms, writer(Some(shared)), stamped, system_identifier(), || {})
        .map_err(write_error)
}

/// The mark file as redo writes it (`lifecycle::replay` decides when, and what a failure means);
/// 15+, where the lease is in the WAL.
#[cfg(not(feature = "pg14"))]
pub struct RedoFile<'a>(pub &'a SharedState);

#[cfg(not(feature = "pg14"))]
impl pg_snowflake_core::host::MarkFile for RedoFile<'_> {
    fn write_mark_file(&mut self, unix_ms: i64, stamped: &Layout) -> Result<(), Error> {
        write_stamped(self.0, unix_ms, stamped)
    }
}

/// The file's path, for messages.
pub fn path() -> PathBuf {
    data_dir().join(mark_file::FILE_NAME)
}
