//! The one way a conversion (sql/convert_column.sql) touches a user's relation: each statement runs
//! as the role that owns what it touches, inside a security-restricted operation, as PostgreSQL's
//! own maintenance commands (VACUUM, ANALYZE, CREATE INDEX, REINDEX, REFRESH MATERIALIZED VIEW)
//! have run table code since CVE-2022-1552 (`analyze.c`, `matview.c`):
//! - the current user is the owner: code reached from the relation (a cast, an operator, an index
//!   expression or predicate, a constraint, a domain, a default, a trigger, a policy, a view's
//!   functions) runs with the owner's rights, as when the owner uses the relation itself;
//! - `SECURITY_RESTRICTED_OPERATION`: that code cannot `SET ROLE`, `RESET ROLE` or `SET SESSION
//!   AUTHORIZATION` back to the caller, nor create temporary objects that outlive it;
//! - a new GUC nest level: settings it changes end with the statement; `search_path` is
//!   `pg_catalog, pg_temp` (PostgreSQL 17's `RestrictSearchPath()`), `row_security` off (a policy
//!   that would hide rows from `max()` is an error, never a smaller maximum).
//!
//! The caller must have the owner's privileges (be it, inherit from it, or be a superuser): the
//! switch then only ever narrows what the caller could do. That rule is the one ownership rule of
//! the conversion; the SQL checks it first to refuse before anything runs (`owners` of its plan).

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};
use std::ffi::CStr;

/// The role's name, or its number when it no longer exists.
fn role_name(role: pg_sys::Oid) -> String {
    // SAFETY: GetUserNameFromId with noerr returns NULL or a palloc'd name.
    let name = unsafe { pg_sys::GetUserNameFromId(role, true) };
    if name.is_null() {
        return format!("role {}", role.to_u32());
    }
    // SAFETY: a NUL-terminated string of PostgreSQL's.
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// Sets a setting for the current GUC nest level only (undone by `AtEOXact_GUC`).
fn set_local(name: &CStr, value: &CStr) {
    // SAFETY: valid C strings; GUC_ACTION_SAVE keeps the old value for AtEOXact_GUC.
    unsafe {
        pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
    }
}

/// The statement's first column of its first row, as a bigint (the `max()` read), or NULL.
fn execute(statement: &str) -> Option<i64> {
    Spi::connect_mut(|client| {
        let table = client.update(statement, None, &[])?;
        if table.is_empty() {
            return Ok(None);
        }
        table.first().get::<i64>(1)
    })
    .unwrap_or_else(|e| error!("snowflake_internal.run_as_owner: {e}"))
}

/// Test builds only: the mechanism switched off (statements run as the caller, unrestricted), the
/// negative control of the convert_attacks scenario; always false in every other build.
#[inline(always)]
fn switched_off() -> bool {
    super::super::settings::fault_run_as_caller()
}

/// Runs `statement` as `owner` in a security-restricted operation (see the top of this file) and
/// returns its first column of its first row as a bigint, if any. Refuses (42501) a caller who
/// does not have the owner's privileges.
#[pg_schema]
mod snowflake_internal {
    use super::*;

    #[pg_extern(volatile, parallel_unsafe, strict)]
    fn run_as_owner(owner: pg_sys::Oid, statement: &str) -> Option<i64> {
        if switched_off() {
            return execute(statement);
        }
        let mut caller = pg_sys::InvalidOid;
        let mut context: i32 = 0;
        // SAFETY: reads this backend's current user and security context.
        unsafe { pg_sys::GetUserIdAndSecContext(&mut caller, &mut context) };
        // SAFETY: a catalog lookup; false for a role that does not exist.
        if !unsafe { pg_sys::has_privs_of_role(caller, owner) } {
            let (caller, owner) = (role_name(caller), role_name(owner));
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("permission denied: {caller} cannot run a conversion's statement as {owner}, whose privileges it does not have"),
                "snowflake_internal.run_as_owner",
            )
            .set_hint(format!(
                "A conversion runs each statement as the owner of what it alters, and only for a caller that has that owner's privileges (the owner, a role that inherits from it, or a superuser): convert as {owner}, or have {owner} widen its own columns first (ALTER TABLE ... ALTER COLUMN ... TYPE bigint)."
            ))
            .report(PgLogLevel::ERROR);
        }
        // SAFETY: as analyze.c: the owner, restricted, until the statement ends. An error on the
        // way unwinds to the caller's (sub)transaction, whose abort restores both the user id and
        // the settings, as it does for VACUUM and ANALYZE.
        let nest = unsafe {
            pg_sys::SetUserIdAndSecContext(owner, context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32);
            pg_sys::NewGUCNestLevel()
        };
        set_local(c"search_path", c"pg_catalog, pg_temp");
        set_local(c"row_security", c"off");
        let result = execute(statement);
        // SAFETY: the nest level and the user id saved above. false: what the statement's code
        // set is undone too, as after ANALYZE.
        unsafe {
            pg_sys::AtEOXact_GUC(false, nest);
            pg_sys::SetUserIdAndSecContext(caller, context);
        }
        result
    }
}
