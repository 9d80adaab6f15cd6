//! A mark write, step by step: what is written, in which order, and what a failed step means. The
//! host does each step's I/O ([`MarkIo`]: a file, a rename, a WAL record, a flush); the order is
//! decided here, so that the lifecycle simulation drives the very order PostgreSQL's processes run.
//!
//! The order: the mark file first (a temporary file, synced, renamed over the mark, the directory
//! synced), then the lease's WAL record (inserted, flushed, and with snowflake.lease_sync
//! confirmed by the synchronous standbys), then the new mark is published. Why the file first
//! (issue 42, finding 3): a base backup copies the file after its checkpoint began, so a record
//! before the checkpoint's redo pointer, which the copy does not replay, had its file in place
//! before the copy; with the record first, a copy could know the lease from neither. A crash
//! between the two leaves the file ahead of the WAL: a higher mark, never a lower one. A failed
//! step ends the write with its error and publishes nothing: the mark in memory stays where it was,
//! so no id is issued under the new mark, and the next call writes again.

use crate::error::Error;
use crate::host::{Clock, Settings, Waiter};
use crate::layout::Layout;
use crate::lease_record::LeaseRecord;
use crate::lifecycle;
use crate::mark_file;
use crate::mark_writer::{MarkWriter, WriteStep};

/// Who writes the mark, as the file and the record say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The machine id ids are issued under: set by hand, or leased (the id held last, -1: none
    /// since the server started).
    pub machine_id: i64,
    /// The id space (etcd prefix) the machine id is leased from, if it is.
    pub leased_from: Option<&'static str>,
    /// The layout configured now (the file is stamped by [`lifecycle::stamp`], the record not).
    pub layout: Layout,
    /// The cluster's system identifier.
    pub system_identifier: u64,
}

/// The I/O of a mark write, one call per step.
pub trait MarkIo {
    /// Who this server is, for the file and the record.
    fn identity(&mut self) -> Result<Identity, Error>;
    /// Step `step` begins (the waiters have been told): a test build's pause there, a simulated
    /// crash. `Err`: the write ends here.
    fn at_step(&mut self, step: WriteStep) -> Result<(), Error>;
    /// Writes `text` into the mark's temporary file and syncs it.
    fn write_temp_file(&mut self, text: &str) -> Result<(), Error>;
    /// Renames the temporary file over the mark and syncs the directory.
    fn replace_mark_file(&mut self) -> Result<(), Error>;
    /// Whether this server logs leases in the WAL (PostgreSQL 15+; 14 has no custom resource
    /// managers): without, a write has no WAL step at all.
    fn logs_leases(&mut self) -> bool;
    /// Inserts the lease's WAL record and says where it ends; `None`: skipped (a test build's
    /// switch).
    fn insert_lease_record(&mut self, record: &[u8; crate::lease_record::LEN]) -> Result<Option<u64>, Error>;
    /// Flushes the WAL up to `end`.
    fn flush_wal(&mut self, end: u64) -> Result<(), Error>;
    /// Whether the synchronous standbys must confirm a lease before it is used (snowflake.lease_sync).
    fn lease_sync(&mut self) -> bool;
    /// Whether the synchronous standbys have flushed the WAL up to `end` (true when none are named).
    fn standbys_confirmed(&mut self, end: u64) -> bool;
    /// synchronous_standby_names, for the message of a wait that ran out.
    fn sync_standby_names(&mut self) -> String;
    /// Test builds only: the order before issue 42's fix (the record first), the negative control
    /// of finding 3. Always false in production.
    fn record_first(&mut self) -> bool {
        false
    }
}

/// Makes `unix_ms` the durable mark, saying each step to `writer` as it begins.
pub fn persist<H: MarkIo + Clock + Waiter + Settings>(
    host: &mut H,
    unix_ms: i64,
    writer: &MarkWriter,
) -> Result<(), Error> {
    let begin = |host: &mut H, step: WriteStep| {
        writer.step(step);
        host.at_step(step)
    };
    begin(host, WriteStep::FlagTaken)?;
    let who = host.identity()?;
    let text = mark_file::render(
        unix_ms,
        mark_file::Writer { machine_id: who.machine_id, leased_from: who.leased_from },
        &lifecycle::stamp(writer.shared(), &who.layout),
        who.system_identifier,
    );
    let record = LeaseRecord {
        machine_id: who.machine_id,
        mark_unix_ms: unix_ms,
        layout: Some((&who.layout).into()),
        leased: who.leased_from.is_some(),
    };
    let record_first = host.record_first();
    if !record_first {
        begin(host, WriteStep::FileWrite)?;
        host.write_temp_file(&text)?;
        begin(host, WriteStep::FileRename)?;
        host.replace_mark_file()?;
    }
    if host.logs_leases() {
        begin(host, WriteStep::WalInsert)?;
        if let Some(end) = host.insert_lease_record(&record.encode())? {
            begin(host, WriteStep::WalFlush)?;
            host.flush_wal(end)?;
            if host.lease_sync() {
                begin(host, WriteStep::StandbyWait)?;
                wait_for_standbys(host, end)?;
            }
        }
    }
    if record_first {
        begin(host, WriteStep::FileWrite)?;
        host.write_temp_file(&text)?;
        begin(host, WriteStep::FileRename)?;
        host.replace_mark_file()?;
    }
    begin(host, WriteStep::Publish)
}

/// Waits until the synchronous standbys have flushed `end`, at most snowflake.max_mark_wait from
/// the wait's start; the host's pauses can be cancelled.
fn wait_for_standbys<H: MarkIo + Clock + Waiter + Settings>(host: &mut H, end: u64) -> Result<(), Error> {
    let started_us = host.monotonic_us();
    let limit_ms = host.limits().max_mark_wait_ms;
    while !host.standbys_confirmed(end) {
        if host.monotonic_us().saturating_sub(started_us) > limit_ms * 1000 {
            let standby_names = host.sync_standby_names();
            return Err(Error::StandbysDidNotConfirm { standby_names, limit_ms: limit_ms as i64 });
        }
        host.sleep_ms(1);
    }
    Ok(())
}

#[cfg(test)]
#[path = "mark_write_tests.rs"]
mod tests;
