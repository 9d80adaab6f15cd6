//! The `snowflake.*` settings. The layout and the machine id are PGC_POSTMASTER, so every backend
//! agrees on them and they are read once, at server start ([`super::server_config`]); the bounds
//! of the waits (`max_clock_wait`, `max_clock_jump`, `max_mark_wait`) and `lease_sync` change by
//! reload; `public_key_file` by reload too, its file read by [`super::key_file`].

use pg_snowflake_core::calendar::parse_timestamptz;
use pg_snowflake_core::{Error, Layout};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::pg_sys;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{addr_of_mut, null_mut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

pub const DEFAULT_EPOCH: &CStr = c"2025-01-01 00:00:00+00";

static MACHINE_ID: GucSetting<i32> = GucSetting::<i32>::new(-1);
static MACHINE_BITS: GucSetting<i32> = GucSetting::<i32>::new(10);
static SEQUENCE_BITS: GucSetting<i32> = GucSetting::<i32>::new(12);
static TIME_UNIT: GucSetting<i32> = GucSetting::<i32>::new(1);
static EPOCH: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(DEFAULT_EPOCH));
static MAX_CLOCK_WAIT: GucSetting<i32> = GucSetting::<i32>::new(1000);
static MAX_CLOCK_JUMP: GucSetting<i32> = GucSetting::<i32>::new(0);
static MAX_MARK_WAIT: GucSetting<i32> = GucSetting::<i32>::new(5000);
static LEASE_SYNC: GucSetting<bool> = GucSetting::<bool>::new(false);
static ACCEPT_LAYOUT_CHANGE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
#[cfg(feature = "fault_injection")]
static FAULT_CLOCK_OFFSET: GucSetting<i32> = GucSetting::<i32>::new(0);
#[cfg(feature = "fault_injection")]
static FAULT_SKIP_LEASE_WAL: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_HOLD_AT: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
#[cfg(feature = "fault_injection")]
static FAULT_HOLD_MS: GucSetting<i32> = GucSetting::<i32>::new(60_000);
#[cfg(feature = "fault_injection")]
static FAULT_KEEP_WRITER_FLAG: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_RUN_AS_CALLER: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_PRIVILEGES_RULE: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_CURRENT_USER_RULE: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_STALE_GRANT: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(all(feature = "fault_injection", not(feature = "pg14")))]
static FAULT_RECORD_FIRST: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(all(feature = "fault_injection", not(feature = "pg14")))]
static FAULT_REDO_WRITE_WARNS: GucSetting<bool> = GucSetting::<bool>::new(false);

/// What the settings file said for the integer layout settings, read before they are defined:
/// PostgreSQL replaces a value it cannot parse by the default with only a WARNING, and a layout
/// must never silently fall back to a default.
pub struct RawSettings {
    machine_id: Option<String>,
    machine_bits: Option<String>,
    sequence_bits: Option<String>,
    time_unit: Option<String>,
}

fn raw(name: &CStr) -> Option<String> {
    // SAFETY: called in the postmaster while it loads libraries; the result is copied at once.
    let p = unsafe { pg_sys::GetConfigOption(name.as_ptr(), true, false) };
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Defines every setting. Call only while `shared_preload_libraries` load: defining a
/// PGC_POSTMASTER setting later is FATAL to the backend. `load_key_file` reads the key file: at
/// start and at each reload, in the postmaster. `define_more` defines the settings that other
/// modules read (before the prefix is reserved, which would drop their values).
pub fn define(load_key_file: fn(String), define_more: fn()) -> RawSettings {
    let raw = RawSettings {
        machine_id: raw(c"snowflake.machine_id"),
        machine_bits: raw(c"snowflake.machine_bits"),
        sequence_bits: raw(c"snowflake.sequence_bits"),
        time_unit: raw(c"snowflake.time_unit"),
    };
    // Wide integer ranges on purpose: a value out of a GUC's range would be replaced by the
    // default with a mere WARNING; the layout checks give a real error instead.
    GucRegistry::define_int_guc(
        c"snowflake.machine_id",
        c"This server's machine id, unique among all servers that share an id space.",
        c"No default: -1 means unset, and generation refuses until it is set. 0 to 2^snowflake.machine_bits - 1.",
        &MACHINE_ID,
        -1,
        i32::MAX,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake.machine_bits",
        c"Bits of an id that hold the machine id.",
        c"The timestamp gets 63 - machine_bits - sequence_bits bits. Must match on every server.",
        &MACHINE_BITS,
        0,
        63,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake.sequence_bits",
        c"Bits of an id that count ids within one millisecond.",
        c"2^sequence_bits ids per millisecond per server. Must match on every server.",
        &SEQUENCE_BITS,
        0,
        63,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake.time_unit",
        c"Milliseconds in one tick of an id's timestamp.",
        c"1 by default; 10 gives Sonyflake-like ticks and ten times the lifespan. The sequence then counts ids per tick. Must match on every server.",
        &TIME_UNIT,
        0,
        i32::MAX,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.epoch",
        c"The instant that timestamp 0 of an id stands for, with an explicit UTC offset.",
        c"Must be in the past and match on every server.",
        &EPOCH,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake.max_clock_wait",
        c"How long generation waits for a clock that was stepped back to catch up.",
        c"Past this, snowflake_nextval() raises an error that says how far behind the clock is.",
        &MAX_CLOCK_WAIT,
        0,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"snowflake.max_clock_jump",
        c"How far the wall clock may jump forward, beyond the time that passed, between two leases.",
        c"0 (the default) turns the guard off. Past it, no new lease is taken: a clock stepped years ahead cannot lease ids years ahead.",
        &MAX_CLOCK_JUMP,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"snowflake.max_mark_wait",
        c"How long generation waits for a new high-water mark to become durable.",
        c"Bounds the wait for another process's mark write and, with snowflake.lease_sync, for the synchronous standbys; past it, snowflake_nextval() raises an error that names what it waited for.",
        &MAX_MARK_WAIT,
        1,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_bool_guc(
        c"snowflake.lease_sync",
        c"Use a new lease only once the synchronous standbys have its WAL record.",
        c"PostgreSQL 15 and later, with synchronous_standby_names set: a failover to a synchronous standby then never re-issues an id, even if it lost the last commits.",
        &LEASE_SYNC,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.accept_layout_change",
        c"Accepts a deliberate change of layout: the old layout, as the refusal names it.",
        c"Generation refuses when the high-water mark was written under another layout, until this names that layout.",
        &ACCEPT_LAYOUT_CHANGE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    define_key_file(load_key_file);
    define_more();
    #[cfg(feature = "fault_injection")]
    GucRegistry::define_int_guc(
        c"snowflake.fault_clock_offset",
        c"TEST BUILDS ONLY: milliseconds added to the system clock as the generator reads it.",
        c"Exists only when pg_snowflake is built with the fault_injection feature, to step the clock in tests.",
        &FAULT_CLOCK_OFFSET,
        i32::MIN,
        i32::MAX,
        GucContext::Suset,
        GucFlags::UNIT_MS,
    );
    #[cfg(feature = "fault_injection")]
    GucRegistry::define_bool_guc(
        c"snowflake.fault_skip_lease_wal",
        c"TEST BUILDS ONLY: new leases are not logged in the WAL.",
        c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the failover tests.",
        &FAULT_SKIP_LEASE_WAL,
        GucContext::Sighup,
        GucFlags::default(),
    );
    #[cfg(feature = "fault_injection")]
    {
        GucRegistry::define_string_guc(
            c"snowflake.fault_hold_at",
            c"TEST BUILDS ONLY: the step of a mark write, or of issuing an id, at which this process pauses.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: flag_taken, before_wal_insert, before_wal_flush, standby_wait, before_file, before_rename or before_publish, or grant_loaded (snowflake_nextval() between its load of the machine id's grant and its compare-and-swap); the pause lasts snowflake.fault_hold_ms and can be cancelled.",
            &FAULT_HOLD_AT,
            GucContext::Suset,
            GucFlags::default(),
        );
        GucRegistry::define_int_guc(
            c"snowflake.fault_hold_ms",
            c"TEST BUILDS ONLY: how long a pause of snowflake.fault_hold_at lasts.",
            c"Exists only when pg_snowflake is built with the fault_injection feature.",
            &FAULT_HOLD_MS,
            0,
            i32::MAX,
            GucContext::Suset,
            GucFlags::UNIT_MS,
        );
        GucRegistry::define_bool_guc(
            c"snowflake.fault_keep_writer_flag",
            c"TEST BUILDS ONLY: the mark writer's flag is neither released at process exit nor taken over from a process that is gone.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the fault tests.",
            &FAULT_KEEP_WRITER_FLAG,
            GucContext::Sighup,
            GucFlags::default(),
        );
        #[cfg(not(feature = "pg14"))]
        GucRegistry::define_bool_guc(
            c"snowflake.fault_redo_write_warns",
            c"TEST BUILDS ONLY: a mark that redo cannot write is a WARNING, and recovery goes on with the file behind.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the redo_write_fault scenario (0.2.0's behaviour before the fix).",
            &FAULT_REDO_WRITE_WARNS,
            GucContext::Sighup,
            GucFlags::default(),
        );
        #[cfg(not(feature = "pg14"))]
        GucRegistry::define_bool_guc(
            c"snowflake.fault_record_first",
            c"TEST BUILDS ONLY: a mark write inserts the lease's WAL record before it writes the mark file.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the base_backup_in_write scenario (0.2.0's order before issue 42's fix).",
            &FAULT_RECORD_FIRST,
            GucContext::Sighup,
            GucFlags::default(),
        );
        GucRegistry::define_bool_guc(
            c"snowflake.fault_run_as_caller",
            c"TEST BUILDS ONLY: a conversion's statements run as the caller, not as the owner in a security-restricted operation.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the conversion's attack tests.",
            &FAULT_RUN_AS_CALLER,
            GucContext::Suset,
            GucFlags::default(),
        );
        GucRegistry::define_bool_guc(
            c"snowflake.fault_privileges_rule",
            c"TEST BUILDS ONLY: a conversion runs a statement as an owner for a caller that has the owner's privileges (INHERIT), not only for one that could SET ROLE to it.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the convert_roles scenario (the rule before issue 50).",
            &FAULT_PRIVILEGES_RULE,
            GucContext::Suset,
            GucFlags::default(),
        );
        GucRegistry::define_bool_guc(
            c"snowflake.fault_stale_grant",
            c"TEST BUILDS ONLY: snowflake_nextval() checks the machine id's grant as before issue 56: once, against its clock reading, not at the tick it issues on nor after its compare-and-swap.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the stale_grant scenario (a backend stalled across a switch of machine ids issues under the old one past its grant).",
            &FAULT_STALE_GRANT,
            GucContext::Suset,
            GucFlags::default(),
        );
        GucRegistry::define_bool_guc(
            c"snowflake.fault_current_user_rule",
            c"TEST BUILDS ONLY: a conversion runs a statement as an owner for a current user that could SET ROLE to it, inside a SECURITY DEFINER function too.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the convert_roles scenario (the rule before issue 55).",
            &FAULT_CURRENT_USER_RULE,
            GucContext::Suset,
            GucFlags::default(),
        );
    }
    reserve_prefix();
    raw
}

/// Test builds only: the write step at which this process pauses, and for how long.
#[cfg(feature = "fault_injection")]
pub fn fault_hold() -> Option<(String, u64)> {
    let at = FAULT_HOLD_AT.get().map(|c| c.to_string_lossy().into_owned()).filter(|s| !s.is_empty())?;
    Some((at, FAULT_HOLD_MS.get().max(0) as u64))
}

/// Test builds only: whether the writer's flag outlives its holder (the release switched off);
/// always false in every other build.
#[inline(always)]
pub fn fault_keep_writer_flag() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_KEEP_WRITER_FLAG.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: whether a conversion's statements run as the caller (the mechanism of
/// `sql_api/as_owner.rs` switched off); always false in every other build.
#[inline(always)]
pub fn fault_run_as_caller() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_RUN_AS_CALLER.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: whether a conversion acts as an owner for a caller with the owner's
/// privileges (the rule before issue 50); always false in every other build.
#[inline(always)]
pub fn fault_privileges_rule() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_PRIVILEGES_RULE.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: whether this backend checks the machine id's grant as before issue 56 (the
/// fix switched off); always false in every other build.
#[inline(always)]
pub fn fault_stale_grant() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_STALE_GRANT.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: whether a conversion asks the current user's memberships and ignores a
/// SECURITY DEFINER function (the rule before issue 55); always false in every other build.
#[inline(always)]
pub fn fault_current_user_rule() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_CURRENT_USER_RULE.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: whether redo only warns when it cannot write the mark (the fix of issue 42,
/// finding 1, switched off); always false in every other build.
#[cfg(not(feature = "pg14"))]
#[inline(always)]
pub fn fault_redo_write_warns() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_REDO_WRITE_WARNS.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: whether a mark write puts the lease's WAL record before the file; always
/// false in every other build.
#[cfg(not(feature = "pg14"))]
#[inline(always)]
pub fn fault_record_first() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_RECORD_FIRST.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// snowflake.max_mark_wait.
pub fn max_mark_wait_ms() -> u64 {
    MAX_MARK_WAIT.get().max(1) as u64
}

/// Test builds only: whether new leases skip the WAL; always false in every other build.
#[cfg(not(feature = "pg14"))]
#[inline(always)]
pub fn fault_skip_lease_wal() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_SKIP_LEASE_WAL.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// snowflake.lease_sync.
#[cfg(not(feature = "pg14"))]
pub fn lease_sync() -> bool {
    LEASE_SYNC.get()
}

/// snowflake.max_clock_jump; 0 is off.
pub fn max_clock_jump_ms() -> u64 {
    MAX_CLOCK_JUMP.get().max(0) as u64
}

/// snowflake.accept_layout_change, read once at start.
pub fn accepted_layout_change() -> String {
    ACCEPT_LAYOUT_CHANGE.get().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The test builds' clock shift; 0, and no code at all, in every other build.
#[inline(always)]
pub fn fault_clock_offset_ms() -> i64 {
    #[cfg(feature = "fault_injection")]
    return i64::from(FAULT_CLOCK_OFFSET.get());
    #[cfg(not(feature = "fault_injection"))]
    0
}

/// Warn about `snowflake.*` names that are not settings (a typo would otherwise go unnoticed).
///
/// pgEdge snowflake's `snowflake.node` shares the prefix. From PostgreSQL 15 on, reserving the
/// prefix removes every `snowflake.*` name no loaded library defines: set for a pgEdge library that
/// loads after this one (later in shared_preload_libraries, or on first use), `snowflake.node`
/// would be gone, and pgEdge's nextval() would refuse ("value for snowflake.node is not set"). So
/// while `snowflake.node` is set, the prefix stays open (docs/switching.md).
fn reserve_prefix() {
    #[cfg(feature = "pg14")]
    unsafe {
        pg_sys::EmitWarningsOnPlaceholders(c"snowflake".as_ptr())
    };
    #[cfg(not(feature = "pg14"))]
    {
        // SAFETY: a lookup by name in the postmaster's settings, during _PG_init; missing_ok.
        let pgedge_node = unsafe { pg_sys::GetConfigOption(c"snowflake.node".as_ptr(), true, false) };
        if pgedge_node.is_null() {
            // SAFETY: as PostgreSQL's own extensions do, from _PG_init.
            unsafe { pg_sys::MarkGUCPrefixReserved(c"snowflake".as_ptr()) };
        }
    }
}

fn accepted(setting: &'static str, raw: &Option<String>, value: i32) -> Result<i64, Error> {
    match raw {
        Some(text) if text.trim().parse::<i64>() != Ok(i64::from(value)) => {
            Err(Error::SettingNotAccepted { setting, text: text.clone() })
        }
        _ => Ok(i64::from(value)),
    }
}

/// The layout the settings describe, or why it cannot work.
pub fn layout(raw: &RawSettings) -> Result<Layout, Error> {
    let machine_bits = accepted("snowflake.machine_bits", &raw.machine_bits, MACHINE_BITS.get())?;
    let sequence_bits = accepted("snowflake.sequence_bits", &raw.sequence_bits, SEQUENCE_BITS.get())?;
    let tick_ms = accepted("snowflake.time_unit", &raw.time_unit, TIME_UNIT.get())?;
    let text = EPOCH.get().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    let epoch_ms = parse_timestamptz(&text).map_err(|reason| Error::EpochUnparsable { text, reason })?;
    Ok(Layout::new(epoch_ms, tick_ms, machine_bits as u32, sequence_bits as u32)?)
}

pub fn machine_id(raw: &RawSettings) -> Result<i64, Error> {
    accepted("snowflake.machine_id", &raw.machine_id, MACHINE_ID.get())
}

/// The machine id as set, for display; `None` when unset (-1).
pub fn machine_id_if_set() -> Option<i32> {
    Some(MACHINE_ID.get()).filter(|&id| id >= 0)
}

/// Read on the slow path only, when the clock is found behind: it can change by reload.
pub fn max_clock_wait_ms() -> u64 {
    MAX_CLOCK_WAIT.get().max(0) as u64
}

// --- The key of public ids: `snowflake.public_key_file`, like `ssl_key_file` (PGC_SIGHUP: only the
// configuration file or the command line can set it, never SET, ALTER ROLE or ALTER DATABASE). Its
// assign hook tells the file's reader (`super::key_file`, through the loader that `define` is given)
// and counts the reloads. The inline `snowflake.public_key` and `snowflake.public_key_previous` of
// 0.1.0 are retired: they cannot be made safe (members of pg_read_all_settings read
// `GUC_SUPERUSER_ONLY` settings, `reset_val` included; `ALTER ROLE SET` stores them where everyone
// reads), so they refuse any value, without repeating it.

/// The key file's reader, called by the assign hook in the postmaster.
static KEY_FILE_LOADER: OnceLock<fn(String)> = OnceLock::new();

static mut PUBLIC_KEY_FILE: *mut c_char = null_mut();
static mut RETIRED_PUBLIC_KEY: *mut c_char = null_mut();
static mut RETIRED_PUBLIC_KEY_PREVIOUS: *mut c_char = null_mut();
/// One up at every assignment of snowflake.public_key_file: at start and at each reload
/// (PostgreSQL assigns every setting of the file again on SIGHUP, changed or not).
static KEY_FILE_GENERATION: AtomicU64 = AtomicU64::new(0);

fn define_key_file(on_assign: fn(String)) {
    let _ = KEY_FILE_LOADER.set(on_assign);
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
                c"Refuses every value: a key in a setting can reach pg_settings, pg_db_role_setting or a log.".as_ptr(),
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
    KEY_FILE_GENERATION.fetch_add(1, Relaxed);
    // SAFETY: a flag of PostgreSQL's; the new value is valid during the call.
    if !unsafe { pg_sys::IsUnderPostmaster } {
        // The postmaster reads the file now, at start and at each reload, and says in the
        // log whether it can be used; backends forked later inherit what it read.
        let path = (!newval.is_null()).then(|| unsafe { CStr::from_ptr(newval) }.to_string_lossy().into_owned());
        if let Some(load) = KEY_FILE_LOADER.get() {
            load(path.unwrap_or_default());
        }
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
pub fn key_file_generation() -> u64 {
    KEY_FILE_GENERATION.load(Relaxed)
}

/// snowflake.public_key_file as set; `None` when empty.
pub fn key_file_path() -> Option<String> {
    // SAFETY: PostgreSQL keeps the string until the setting changes, which only happens
    // between statements of this process.
    let p = unsafe { *addr_of_mut!(PUBLIC_KEY_FILE) };
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
}
