//! The lease in the WAL (PostgreSQL 15 and later): every new high-water mark a primary writes is
//! also a WAL record of pg_snowflake's own resource manager, inserted and flushed before any id
//! under it is handed out. A server that replays the WAL (a streaming standby, a restored base
//! backup with archived WAL, crash recovery) raises its own mark from the records, so once
//! promoted it issues nothing at or below the last mark it replayed, whatever its clock says.
//!
//! PostgreSQL 14 has no custom resource managers: there the mark is the file alone (see the
//! README's Failover section).

#[cfg(not(feature = "pg14"))]
pub use imp::*;

/// The resource manager id: from the custom range (128 to 255); 128 is reserved for
/// experiments. The PostgreSQL wiki keeps the registry of custom resource managers.
#[cfg(not(feature = "pg14"))]
pub const RMGR_ID: u8 = 171;
#[cfg(not(feature = "pg14"))]
pub const RMGR_NAME: &std::ffi::CStr = c"pg_snowflake";

/// What PostgreSQL 14 lacks, said once in the server log at start.
#[cfg(feature = "pg14")]
pub fn register() {
    pgrx::log!(
        "pg_snowflake: PostgreSQL 14 has no custom WAL resource managers: the high-water mark is not logged in the WAL, so a promoted standby can re-issue ids its primary issued (snowflake.lease_sync has no effect); failover safety needs PostgreSQL 15 or later"
    );
}

#[cfg(not(feature = "pg14"))]
mod imp {
    use super::super::{errors, mark_store, server_config, settings, shared_memory};
    use super::{RMGR_ID, RMGR_NAME};
    use pg_snowflake_core::calendar::format_utc;
    use pg_snowflake_core::lease_record::LeaseRecord;
    use pg_snowflake_core::lifecycle;
    use pgrx::pg_sys;
    use pgrx::PANIC;
    use std::ffi::CString;
    use std::sync::Mutex;

    /// The lease record's only kind (the high four bits of xl_info are the resource manager's).
    const XLOG_SNOWFLAKE_LEASE: u8 = 0x00;

    /// The last lease record replayed by this (startup) process, for the line logged when
    /// recovery ends.
    static LAST_REPLAYED: Mutex<Option<LeaseRecord>> = Mutex::new(None);

    /// Registers the resource manager. Call from `_PG_init` while libraries preload.
    pub fn register() {
        let rmgr = pg_sys::RmgrData {
            rm_name: RMGR_NAME.as_ptr(),
            rm_redo: Some(redo),
            rm_desc: Some(desc),
            rm_identify: Some(identify),
            rm_startup: None,
            rm_cleanup: Some(cleanup),
            rm_mask: None,
            rm_decode: None,
        };
        // SAFETY: in the postmaster while libraries preload; PostgreSQL copies the struct, and
        // the name is a static string.
        unsafe { pg_sys::RegisterCustomRmgr(RMGR_ID, &rmgr as *const _ as *mut _) };
    }

    /// Inserts the record of a new mark (the core's `mark_write` encodes it), before the mark is
    /// used; returns where it ends, or `None` when the test builds' switch skips the record. An
    /// error here is raised (and unwinds to the caller, which publishes no mark).
    pub fn insert_lease(bytes: &[u8; pg_snowflake_core::lease_record::LEN]) -> Option<pg_sys::XLogRecPtr> {
        if settings::fault_skip_lease_wal() {
            return None; // test builds only: the negative control of the failover scenarios
        }
        // SAFETY: a server in recovery raises an ERROR here ("cannot make new WAL entries during
        // recovery"; ids are refused there before); the data outlives the insert.
        unsafe {
            pg_sys::XLogBeginInsert();
            #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
            pg_sys::XLogRegisterData(bytes.as_ptr() as *mut std::ffi::c_char, bytes.len() as _);
            #[cfg(feature = "pg18")]
            pg_sys::XLogRegisterData(bytes.as_ptr().cast(), bytes.len() as _);
            Some(pg_sys::XLogInsert(RMGR_ID, XLOG_SNOWFLAKE_LEASE))
        }
    }

    /// Flushes the WAL up to `lsn`.
    pub fn flush(lsn: pg_sys::XLogRecPtr) {
        // SAFETY: a position this process inserted.
        unsafe { pg_sys::XLogFlush(lsn) };
    }

    /// synchronous_standby_names as set now ("" when none).
    pub fn sync_standby_names() -> String {
        // SAFETY: reads a setting's current value; the string is copied at once.
        let names = unsafe { pg_sys::GetConfigOption(c"synchronous_standby_names".as_ptr(), true, false) };
        if names.is_null() {
            return String::new();
        }
        unsafe { std::ffi::CStr::from_ptr(names) }.to_string_lossy().into_owned()
    }

    /// Whether the synchronous standbys have flushed `lsn` (true when none are configured). Read
    /// from the position the walsenders of synchronous standbys advance as they reply, so it does
    /// not depend on this session's synchronous_commit.
    pub fn confirmed_by_sync_standbys(lsn: pg_sys::XLogRecPtr) -> bool {
        // SAFETY: WalSndCtl lives in shared memory for the server's life; an aligned 8-byte read.
        sync_standby_names().is_empty()
            || unsafe { std::ptr::read_volatile(&(*pg_sys::WalSndCtl).lsn[pg_sys::SYNC_REP_WAIT_FLUSH as usize]) }
                >= lsn
    }

    /// The record's data, read from the decoded record (XLogRecGetData has no binding).
    unsafe fn record_of(record: *mut pg_sys::XLogReaderState) -> Result<LeaseRecord, String> {
        let decoded = unsafe { (*record).record };
        let data =
            unsafe { std::slice::from_raw_parts((*decoded).main_data as *const u8, (*decoded).main_data_len as usize) };
        LeaseRecord::decode(data)
    }

    /// Redo: raises this server's mark (never lowers it) and makes it durable at once, so that a
    /// standby that crashes or is promoted later still starts above it.
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn redo(record: *mut pg_sys::XLogReaderState) {
        let lease = match unsafe { record_of(record) } {
            Ok(lease) => lease,
            Err(why) => PANIC!("pg_snowflake redo: {why}"),
        };
        *LAST_REPLAYED.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease);
        let (Some(shared), Ok(layout)) = (shared_memory::shared(), server_config::layout()) else {
            return; // nothing can be issued with this configuration; the file is left as it is
        };
        let refused_before = shared.refused.layout().is_some();
        if let Err(e) = lifecycle::replay(shared, layout, &lease, &mut mark_store::RedoFile(shared)) {
            // The core's decision: recovery stops at this record (the startup process exits, and
            // the server with it), so that it is replayed again once the file can be written.
            let report = pgrx::pg_sys::panic::ErrorReport::new(
                errors::sqlstate(&e),
                format!(
                    "pg_snowflake: could not make the replayed high-water mark durable in {:?}: {}",
                    mark_store::path(),
                    e.message()
                ),
                "pg_snowflake redo",
            )
            .set_hint("Recovery stops here and replays this lease again at the next start: free space or fix the file's permissions, then start the server.");
            // Test builds only: the negative control, redo going on with the file behind.
            let level =
                if settings::fault_redo_write_warns() { pgrx::PgLogLevel::WARNING } else { pgrx::PgLogLevel::FATAL };
            report.report(level);
        }
        if let (false, Some(old)) = (refused_before, shared.refused.layout()) {
            errors::warn_at_start(&pg_snowflake_core::Error::LayoutChanged { old, new: *layout });
        }
    }

    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, record: *mut pg_sys::XLogReaderState) {
        let text = match unsafe { record_of(record) } {
            Ok(lease) => lease.describe(),
            Err(why) => why,
        };
        let text = CString::new(text).unwrap_or_default();
        // SAFETY: PostgreSQL's buffer; the text is copied.
        unsafe { pg_sys::appendStringInfoString(buf, text.as_ptr()) };
    }

    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn identify(info: u8) -> *const std::ffi::c_char {
        match info & pg_sys::XLR_RMGR_INFO_MASK as u8 {
            XLOG_SNOWFLAKE_LEASE => c"LEASE".as_ptr(),
            _ => std::ptr::null(),
        }
    }

    /// The end of recovery: one line saying which mark this server now starts above.
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn cleanup() {
        let Some(lease) = *LAST_REPLAYED.lock().unwrap_or_else(|e| e.into_inner()) else { return };
        // SAFETY: flags of the startup process, which runs this.
        let kind = unsafe {
            if pg_sys::StandbyMode {
                "a standby promoted"
            } else if pg_sys::ArchiveRecoveryRequested {
                "archive recovery ended (a restored backup or point-in-time recovery)"
            } else {
                "crash recovery ended"
            }
        };
        // (A leased server's generator says 0: its id comes from its worker's claim, after this.)
        let mine = match (server_config::generator(), server_config::etcd()) {
            (Ok(_), Some(etcd)) => format!("leased from {}, claimed by its worker now", etcd.describe()),
            (Ok(g), None) => g.machine_id().to_string(),
            (Err(_), _) => "unset".into(),
        };
        let mark = shared_memory::shared().map(|s| s.mark.unix_ms.load(std::sync::atomic::Ordering::Relaxed));
        pgrx::log!(
            "pg_snowflake: {kind}: this server's machine id is {mine}; its ids start above the high-water mark {} (the last lease replayed from the WAL was written by {})",
            mark.map(format_utc).unwrap_or_default(),
            lease.writer()
        );
    }
}
