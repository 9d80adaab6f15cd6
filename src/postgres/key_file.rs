//! The key of public ids, from the file named by `snowflake.public_key_file`, as PostgreSQL reads
//! `ssl_key_file`: the postmaster reads it at start and at each reload (and says in the log if it
//! cannot be used), backends forked later inherit what it read, and a running backend reads it
//! again at its first use after a reload. What the file may hold, and who may own it, is the
//! core's (`pg_snowflake_core::key_file`); this opens it and keeps the keys.
//!
//! The key never leaves this process's memory: it is not a setting (so not in pg_settings,
//! pg_db_role_setting or a `SET` that a log could catch), messages name the file and a line, never
//! its text, and the text read, the key bytes and the AES key schedules are zeroed when dropped
//! (at a reload that replaces them, or when the process ends).

use super::settings;
use pg_snowflake_core::key_file::{self, KeyFileProblem};
use pg_snowflake_core::public_id::PublicKey;
use pg_snowflake_core::Error;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};
use std::cell::RefCell;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::rc::Rc;
use zeroize::Zeroizing;

/// A key file is a few lines; anything longer is not one.
const MAX_BYTES: u64 = 64 * 1024;

pub struct Keys {
    pub current: PublicKey,
    pub previous: Option<PublicKey>,
}

struct Loaded {
    generation: u64,
    keys: Result<Rc<Keys>, Error>,
}

thread_local! {
    /// The keys of this process and the configuration generation they were read under.
    static LOADED: RefCell<Option<Loaded>> = const { RefCell::new(None) };
}

/// The text of a file that holds a secret (this key file, `snowflake.etcd_credentials_file`), read
/// as PostgreSQL reads `ssl_key_file`: what is not a regular file (a FIFO, whose open() waits for a
/// writer; a device, whose open() can act) is refused before it is opened, with stat() first (a
/// symbolic link is followed, as there); then opened non-blocking, so that a FIFO put there since
/// cannot stall it either, and the opened file's own metadata checked (the server's OS user's,
/// 0600 or stricter): what is checked is what is read. At most `max` bytes; zeroed when dropped.
pub fn read_private(path: &str, max: u64) -> Result<Zeroizing<String>, KeyFileProblem> {
    let unreadable = |e: std::io::Error| KeyFileProblem::Unreadable { reason: e.to_string() };
    let before = std::fs::metadata(path).map_err(unreadable)?;
    key_file::check_file_type(before.mode())?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    // SAFETY: geteuid() cannot fail.
    key_file::check_permissions(meta.mode(), meta.uid(), unsafe { libc::geteuid() })?;
    // Room for all of it at once: a growing buffer would leave copies of the secret behind.
    let mut text = Zeroizing::new(String::with_capacity(max as usize + 1));
    file.take(max + 1).read_to_string(&mut text).map_err(unreadable)?;
    if text.len() as u64 > max {
        return Err(KeyFileProblem::TooLarge { max });
    }
    Ok(text)
}

/// The server's OS user by name, for the hints (`chown NAME`); its user id where the system has
/// no name for it (a container's arbitrary user id), which `chown` takes as well. Asked only when a
/// problem is reported.
fn server_os_user() -> String {
    // SAFETY: geteuid() cannot fail; getpwuid_r writes only into `entry` and `buf`, whose size it is
    // given, and `found` points into them or is null.
    unsafe {
        let uid = libc::geteuid();
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        if libc::getpwuid_r(uid, &mut entry, buf.as_mut_ptr(), buf.len(), &mut found) == 0 && !found.is_null() {
            let name = std::ffi::CStr::from_ptr(entry.pw_name).to_string_lossy().into_owned();
            if !name.is_empty() {
                return name;
            }
        }
        uid.to_string()
    }
}

fn read(path: &str) -> Result<Keys, Error> {
    let problem =
        |problem: KeyFileProblem| Error::KeyFile { path: path.to_string(), problem, server_user: server_os_user() };
    // A relative path is relative to the data directory, every process's working directory.
    let text = read_private(path, MAX_BYTES).map_err(problem)?;
    let (current, previous) =
        key_file::parse(&text, |hex| PublicKey::from_hex(key_file::SETTING, hex).ok()).map_err(problem)?;
    Ok(Keys { current, previous })
}

fn load(path: Option<String>) -> Result<Rc<Keys>, Error> {
    read(&path.ok_or(Error::PublicKeyUnset)?).map(Rc::new)
}

/// The keys, read again if the configuration was reloaded since they were read.
pub fn keys() -> Result<Rc<Keys>, Error> {
    let generation = settings::key_file_generation();
    LOADED.with_borrow_mut(|loaded| {
        if loaded.as_ref().map(|l| l.generation) != Some(generation) {
            // The old keys are dropped (and zeroed) here, unless a caller still holds them.
            *loaded = Some(Loaded { generation, keys: load(settings::key_file_path()) });
        }
        loaded.as_ref().map(|l| l.keys.clone()).unwrap_or(Err(Error::PublicKeyUnset))
    })
}

/// In the postmaster, at start and at each reload (the setting's assign hook, which
/// `super::server_config` points here): reads the file and logs whether it can be used.
pub fn load_in_postmaster(path: String) {
    let generation = settings::key_file_generation();
    let shown = path.clone();
    let keys = load((!path.is_empty()).then_some(path));
    match &keys {
        Ok(k) => ErrorReport::new(
            PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            format!(
                "pg_snowflake: the key of public ids was read from {} \"{shown}\"{}",
                key_file::SETTING,
                if k.previous.is_some() { ", with a previous key" } else { "" }
            ),
            "pg_snowflake key file",
        )
        .report(PgLogLevel::LOG),
        Err(Error::PublicKeyUnset) => {}
        Err(e) => ErrorReport::new(
            super::errors::sqlstate(e),
            format!("pg_snowflake: public ids are refused until the key file is fixed: {}", e.message()),
            "pg_snowflake key file",
        )
        .set_hint(e.hint())
        .report(PgLogLevel::WARNING),
    }
    LOADED.with_borrow_mut(|loaded| *loaded = Some(Loaded { generation, keys }));
}
