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

fn read(path: &str) -> Result<Keys, Error> {
    let problem = |problem: KeyFileProblem| Error::KeyFile { path: path.to_string(), problem };
    let unreadable = |e: std::io::Error| problem(KeyFileProblem::Unreadable { reason: e.to_string() });
    // A relative path is relative to the data directory, every process's working directory.
    // The postmaster reads it at reload: what is not a regular file (a FIFO, whose open() waits for
    // a writer; a device, whose open() can act) is refused before it is opened, as PostgreSQL
    // checks ssl_key_file with stat() first. (A symbolic link is followed, as there.)
    let before = std::fs::metadata(path).map_err(unreadable)?;
    key_file::check_file_type(before.mode()).map_err(problem)?;
    // Non-blocking, so that a FIFO put there since cannot stall it either; then the opened file's
    // own metadata: what is checked is what is read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    // SAFETY: geteuid() cannot fail.
    key_file::check_permissions(meta.mode(), meta.uid(), unsafe { libc::geteuid() }).map_err(problem)?;
    // Room for all of it at once: a growing buffer would leave copies of the key behind.
    let mut text = Zeroizing::new(String::with_capacity(MAX_BYTES as usize + 1));
    file.take(MAX_BYTES + 1).read_to_string(&mut text).map_err(unreadable)?;
    if text.len() as u64 > MAX_BYTES {
        return Err(problem(KeyFileProblem::TooLarge { max: MAX_BYTES }));
    }
    let (current, previous) =
        key_file::parse(&text, |hex| PublicKey::from_hex(key_file::SETTING, hex).ok()).map_err(problem)?;
    Ok(Keys { current, previous })
}

fn load(path: Option<String>) -> Result<Rc<Keys>, Error> {
    read(&path.ok_or(Error::PublicKeyUnset)?).map(Rc::new)
}

/// The keys, read again if the configuration was reloaded since they were read.
pub fn keys() -> Result<Rc<Keys>, Error> {
    let generation = settings::generation();
    LOADED.with_borrow_mut(|loaded| {
        if loaded.as_ref().map(|l| l.generation) != Some(generation) {
            // The old keys are dropped (and zeroed) here, unless a caller still holds them.
            *loaded = Some(Loaded { generation, keys: load(settings::path()) });
        }
        loaded.as_ref().map(|l| l.keys.clone()).unwrap_or(Err(Error::PublicKeyUnset))
    })
}

/// In the postmaster, at start and at each reload: reads the file and logs whether it can be used.
pub fn load_in_postmaster(path: String) {
    let generation = settings::generation();
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

/// Defines `snowflake.public_key_file` (and the two retired settings that refuse every value); called
/// once by `super::settings::define` with the other settings.
pub fn define_settings() {
    settings::define();
}

/// The settings of the key: `snowflake.public_key_file`, like `ssl_key_file` (PGC_SIGHUP: only the
/// configuration file or the command line can set it, never SET, ALTER ROLE or ALTER DATABASE).
/// This block defines them and tells the file's reader above when the configuration was reloaded. The inline `snowflake.public_key` and
/// `snowflake.public_key_previous` of 0.1.0 are retired: they cannot be made safe (members of
/// pg_read_all_settings read `GUC_SUPERUSER_ONLY` settings, `reset_val` included; `ALTER ROLE SET`
/// stores them where everyone reads), so they refuse any value, without repeating it.
mod settings {
    use pgrx::pg_sys;
    use std::ffi::{c_char, c_void, CStr};
    use std::ptr::{addr_of_mut, null_mut};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    static mut PUBLIC_KEY_FILE: *mut c_char = null_mut();
    static mut RETIRED_PUBLIC_KEY: *mut c_char = null_mut();
    static mut RETIRED_PUBLIC_KEY_PREVIOUS: *mut c_char = null_mut();
    /// One up at every assignment of snowflake.public_key_file: at start and at each reload
    /// (PostgreSQL assigns every setting of the file again on SIGHUP, changed or not).
    static GENERATION: AtomicU64 = AtomicU64::new(0);

    pub(super) fn define() {
        // SAFETY: called once, in the postmaster, while shared_preload_libraries load; the
        // storage is static and PostgreSQL owns the strings it points to.
        unsafe {
            pg_sys::DefineCustomStringVariable(
                c"snowflake.public_key_file".as_ptr(),
                c"A file holding the key of public ids: the current key, and optionally the previous one on a second line.".as_ptr(),
                c"Read at start and at each reload. It must be owned by the server's OS user, with permissions u=rw (0600) or less. Keys are 32 or 64 hexadecimal characters (openssl rand -hex 32).".as_ptr(),
                addr_of_mut!(PUBLIC_KEY_FILE),
                c"".as_ptr(),
                pg_sys::GucContext::PGC_SIGHUP,
                0,
                None,
                Some(assign_key_file),
                None,
            );
            for (name, storage) in [
                (c"snowflake.public_key", addr_of_mut!(RETIRED_PUBLIC_KEY)),
                (c"snowflake.public_key_previous", addr_of_mut!(RETIRED_PUBLIC_KEY_PREVIOUS)),
            ] {
                pg_sys::DefineCustomStringVariable(
                    name.as_ptr(),
                    c"Retired: use snowflake.public_key_file.".as_ptr(),
                    c"Refuses every value: a key in a setting can reach pg_settings, pg_db_role_setting or a log."
                        .as_ptr(),
                    storage,
                    c"".as_ptr(),
                    pg_sys::GucContext::PGC_SIGHUP,
                    (pg_sys::GUC_NO_SHOW_ALL | pg_sys::GUC_NOT_IN_SAMPLE | pg_sys::GUC_SUPERUSER_ONLY) as i32,
                    Some(refuse_retired),
                    None,
                    None,
                );
            }
        }
    }

    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn assign_key_file(newval: *const c_char, _extra: *mut c_void) {
        GENERATION.fetch_add(1, Relaxed);
        // SAFETY: a flag of PostgreSQL's; the new value is valid during the call.
        if !unsafe { pg_sys::IsUnderPostmaster } {
            // The postmaster reads the file now, at start and at each reload, and says in the
            // log whether it can be used; backends forked later inherit what it read.
            let path = (!newval.is_null()).then(|| unsafe { CStr::from_ptr(newval) }.to_string_lossy().into_owned());
            super::load_in_postmaster(path.unwrap_or_default());
        }
    }

    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn refuse_retired(
        newval: *mut *mut c_char,
        _extra: *mut *mut c_void,
        _source: pg_sys::GucSource::Type,
    ) -> bool {
        // SAFETY: PostgreSQL passes a valid pointer to the candidate value.
        let value = unsafe { *newval };
        if value.is_null() || unsafe { *value } == 0 {
            return true;
        }
        // Our own message, so that PostgreSQL's ("invalid value for parameter ...: <value>")
        // never repeats the value.
        unsafe {
            pg_sys::GUC_check_errmsg_string = pg_sys::pstrdup(
                c"snowflake.public_key and snowflake.public_key_previous are retired: a key in a setting can reach pg_settings, pg_db_role_setting or the server log".as_ptr(),
            );
            pg_sys::GUC_check_errhint_string = pg_sys::pstrdup(
                c"Put the key in a file owned by the server's OS user with chmod 600 (the current key, then optionally the previous one, one per line), name it with snowflake.public_key_file, and reload.".as_ptr(),
            );
        }
        false
    }

    /// The configuration's generation: it changes at every reload.
    pub(super) fn generation() -> u64 {
        GENERATION.load(Relaxed)
    }

    /// snowflake.public_key_file as set; `None` when empty.
    pub(super) fn path() -> Option<String> {
        // SAFETY: PostgreSQL keeps the string until the setting changes, which only happens
        // between statements of this process.
        let p = unsafe { *addr_of_mut!(PUBLIC_KEY_FILE) };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
    }
}
