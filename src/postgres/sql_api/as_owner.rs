//! The one way a conversion (sql/convert_column.sql) touches a user's relation: one action out of a
//! closed set, on a relation (and a column), run as the role that owns that relation, inside a
//! security-restricted operation, as PostgreSQL's own maintenance commands (VACUUM, ANALYZE,
//! CREATE INDEX, REINDEX, REFRESH MATERIALIZED VIEW) have run table code since CVE-2022-1552
//! (`analyze.c`, `matview.c`):
//! - the current user is the owner: code reached from the relation (a cast, an operator, an index
//!   expression or predicate, a constraint, a domain, a default, a trigger, a policy, a view's
//!   functions) runs with the owner's rights, as when the owner uses the relation itself;
//! - `SECURITY_RESTRICTED_OPERATION`: that code cannot `SET ROLE`, `RESET ROLE` or `SET SESSION
//!   AUTHORIZATION` back to the caller, nor create temporary objects that outlive it;
//! - a new GUC nest level: settings it changes end with the statement; `search_path` is
//!   `pg_catalog, pg_temp` (PostgreSQL 17's `RestrictSearchPath()`), `row_security` off (a policy
//!   that would hide rows from `max()` is an error, never a smaller maximum).
//!
//! **The rule, the only one**: a statement runs as another role only where `SET ROLE` to that
//! role would be allowed in the same place ([`refusal`], PostgreSQL's own checks): never inside a
//! security-restricted operation nor inside a SECURITY DEFINER function (a superuser's too), and
//! elsewhere only for a session whose user could become that role: on PostgreSQL 16 and later, a
//! membership whose SET option is true (`member_can_set_role`; INHERIT alone gives a role's
//! privileges, not its identity: `GRANT boss TO alice WITH INHERIT TRUE, SET FALSE` must not let
//! alice act as boss, who may be a superuser); on 14 and 15, membership (`is_member_of_role`); a
//! superuser may become anyone. A call that needs no switch (the current user owns the relation)
//! runs anywhere. The switch then never lets code do what `SET ROLE owner` followed by the
//! statement would not let it do in the same place.
//!
//! **No free text crosses the boundary**: the caller names an [`Action`], a relation and a
//! column; the owner is the relation's, read from the catalog here, never taken from the caller;
//! the statement is built here, its identifiers quoted. Whatever a caller passes, the most it can
//! do as the owner is one of these statements on one of that owner's relations.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};
use std::ffi::{CStr, CString};

/// What a conversion does on a relation as its owner, and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// `SELECT max(col)::bigint FROM rel`: the largest value (returned).
    Max,
    /// `SELECT min(col)::bigint FROM rel`: the smallest value (returned).
    Min,
    /// `LOCK TABLE rel IN ACCESS EXCLUSIVE MODE`: no row comes in during the conversion.
    Lock,
    /// `ALTER TABLE rel ALTER COLUMN col DROP IDENTITY`.
    DropIdentity,
    /// `ALTER TABLE rel ALTER COLUMN col DROP DEFAULT`.
    DropDefault,
    /// `DROP SEQUENCE rel`: the column's old sequence.
    DropSequence,
    /// `ALTER SEQUENCE rel OWNED BY NONE`: the old sequence kept, owned by no column.
    DisownSequence,
    /// `DROP VIEW rel`: a view on a widened column, created again after it.
    DropView,
    /// `ALTER TABLE rel ALTER COLUMN col TYPE bigint`.
    Widen,
    /// `ALTER TABLE rel ALTER COLUMN col SET DEFAULT <the extension's schema>.snowflake_nextval()`.
    SetDefault,
}

const ACTIONS: [(&str, Action); 10] = [
    ("max", Action::Max),
    ("min", Action::Min),
    ("lock", Action::Lock),
    ("drop_identity", Action::DropIdentity),
    ("drop_default", Action::DropDefault),
    ("drop_sequence", Action::DropSequence),
    ("disown_sequence", Action::DisownSequence),
    ("drop_view", Action::DropView),
    ("widen", Action::Widen),
    ("set_default", Action::SetDefault),
];

impl Action {
    fn parse(name: &str) -> Action {
        ACTIONS.iter().find(|(n, _)| *n == name).map(|(_, a)| *a).unwrap_or_else(|| {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("'{name}' is not an action a conversion runs as a relation's owner"),
                "snowflake_internal.as_owner",
            )
            .set_hint(format!(
                "The actions are {}: snowflake_internal.as_owner() is the conversion's, not a way to run any statement as another role.",
                ACTIONS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ))
            .report(PgLogLevel::ERROR);
            unreachable!()
        })
    }

    /// The relation kinds it applies to, and what the message calls them.
    fn kinds(self) -> (&'static [u8], &'static str) {
        match self {
            Action::DropSequence | Action::DisownSequence => (b"S", "a sequence"),
            Action::DropView => (b"v", "a view"),
            _ => (b"rp", "a table"),
        }
    }

    fn needs_column(self) -> bool {
        !matches!(self, Action::Lock | Action::DropSequence | Action::DisownSequence | Action::DropView)
    }
}

/// The actions that need a column, from ACTIONS: "max, min, ... and set_default".
fn column_actions() -> String {
    let names: Vec<_> = ACTIONS.iter().filter(|(_, a)| a.needs_column()).map(|(n, _)| *n).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

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

/// An identifier quoted as PostgreSQL quotes it (`quote_ident`).
fn quote(ident: &str) -> String {
    let c = CString::new(ident).unwrap_or_else(|_| error!("an identifier with a NUL byte"));
    // SAFETY: a valid C string; the result is the input or a palloc'd copy, NUL-terminated.
    unsafe { CStr::from_ptr(pg_sys::quote_identifier(c.as_ptr())) }.to_string_lossy().into_owned()
}

/// The relation's schema-qualified, quoted name, its owner and its kind; an error if it is gone.
fn relation(rel: pg_sys::Oid) -> (String, pg_sys::Oid, u8) {
    // SAFETY: a syscache lookup by oid, released before returning; NULL when there is no such row.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::RELOID as _, pg_sys::Datum::from(rel));
        if tuple.is_null() {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                format!("relation with OID {} does not exist", rel.to_u32()),
                "snowflake_internal.as_owner",
            )
            .set_hint("Name an existing relation, as a regclass such as 'public.orders'::regclass.")
            .report(PgLogLevel::ERROR);
        }
        let form = pg_sys::GETSTRUCT(tuple).cast::<pg_sys::FormData_pg_class>();
        let name = CStr::from_ptr((*form).relname.data.as_ptr()).to_string_lossy().into_owned();
        let (owner, kind, namespace) = ((*form).relowner, (*form).relkind as u8, (*form).relnamespace);
        pg_sys::ReleaseSysCache(tuple);
        let schema = pg_sys::get_namespace_name(namespace);
        let schema =
            if schema.is_null() { String::new() } else { CStr::from_ptr(schema).to_string_lossy().into_owned() };
        (format!("{}.{}", quote(&schema), quote(&name)), owner, kind)
    }
}

/// The extension's schema, quoted (where `snowflake_nextval()` is).
fn extension_schema() -> String {
    Spi::get_one::<String>(
        "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e \
         JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_snowflake'",
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| error!("the extension pg_snowflake is not installed in this database"))
}

/// The statement of `action` on the relation `rel` (its quoted name) and column `col`.
fn statement(action: Action, rel: &str, col: Option<&str>) -> String {
    let col = || {
        quote(col.unwrap_or_else(|| {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "this action of a conversion needs a column",
                "snowflake_internal.as_owner",
            )
            .set_hint(format!("Name the column: {} act on one column of a table.", column_actions()))
            .report(PgLogLevel::ERROR);
            unreachable!()
        }))
    };
    match action {
        Action::Max => format!("SELECT max({})::bigint FROM {rel}", col()),
        Action::Min => format!("SELECT min({})::bigint FROM {rel}", col()),
        Action::Lock => format!("LOCK TABLE {rel} IN ACCESS EXCLUSIVE MODE"),
        Action::DropIdentity => format!("ALTER TABLE {rel} ALTER COLUMN {} DROP IDENTITY", col()),
        Action::DropDefault => format!("ALTER TABLE {rel} ALTER COLUMN {} DROP DEFAULT", col()),
        Action::DropSequence => format!("DROP SEQUENCE {rel}"),
        Action::DisownSequence => format!("ALTER SEQUENCE {rel} OWNED BY NONE"),
        Action::DropView => format!("DROP VIEW {rel}"),
        Action::Widen => format!("ALTER TABLE {rel} ALTER COLUMN {} TYPE bigint", col()),
        Action::SetDefault => {
            format!("ALTER TABLE {rel} ALTER COLUMN {} SET DEFAULT {}.snowflake_nextval()", col(), extension_schema())
        }
    }
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
    .unwrap_or_else(|e| error!("snowflake_internal.as_owner: {e}"))
}

/// Test builds only: the mechanism switched off (statements run as the caller, unrestricted), the
/// negative control of the convert_attacks scenario; always false in every other build.
#[inline(always)]
fn switched_off() -> bool {
    super::super::settings::fault_run_as_caller()
}

/// Whether `session` (the session's user, as `check_role` asks) could `SET ROLE` to `role` (see
/// the top of this file): on 16 and later the SET option of its memberships, before 16
/// membership; a superuser may become anyone.
fn can_set_role(session: pg_sys::Oid, role: pg_sys::Oid) -> bool {
    if session == role {
        return true;
    }
    // SAFETY: catalog lookups; false for a role that does not exist. Both count a superuser in.
    #[cfg(any(feature = "pg14", feature = "pg15"))]
    return unsafe { pg_sys::is_member_of_role(session, role) };
    #[cfg(not(any(feature = "pg14", feature = "pg15")))]
    return unsafe { pg_sys::member_can_set_role(session, role) };
}

/// Test builds only: the rules before issue 55, the negative controls of the convert_roles
/// scenario: `privileges` (before issue 50: the current user's privileges of the owner, INHERIT),
/// `current_user` (before issue 55: the current user's SET option, and a SECURITY DEFINER
/// function not looked at). `None` in every other build, and when neither is switched on.
fn old_rule(caller: pg_sys::Oid, role: pg_sys::Oid) -> Option<bool> {
    if super::super::settings::fault_privileges_rule() {
        // SAFETY: a catalog lookup; false for a role that does not exist.
        return Some(unsafe { pg_sys::has_privs_of_role(caller, role) });
    }
    if super::super::settings::fault_current_user_rule() {
        return Some(can_set_role(caller, role));
    }
    None
}

/// `None` when the current user may act as `role`, else why not and what would let it: the one
/// rule of this file, also asked by the conversion before anything runs. It is PostgreSQL's own
/// for `SET ROLE role` in the same place:
/// - no switch is needed when the current user is `role`: the statement runs as it is, anywhere;
/// - inside a security-restricted operation nobody switches (`InSecurityRestrictedOperation()`:
///   `set_config_option` refuses the `role` setting there, `GUC_NOT_WHILE_SEC_REST`);
/// - inside a SECURITY DEFINER function nobody switches either, a superuser's function included
///   (`InLocalUserIdChange()`, the same check: "cannot set parameter \"role\" within
///   security-definer function");
/// - elsewhere the **session's** user must be able to become `role` (`check_role`:
///   `member_can_set_role(GetSessionUserId(), roleid)` on 16 and later, `is_member_of_role` on 14
///   and 15), not the current user: a role reached with SET ROLE lends its identity, never its
///   memberships.
fn refusal(role: pg_sys::Oid) -> Option<(String, String)> {
    let mut caller = pg_sys::InvalidOid;
    let mut context: i32 = 0;
    // SAFETY: reads this backend's current user, security context and session user.
    let session = unsafe {
        pg_sys::GetUserIdAndSecContext(&mut caller, &mut context);
        pg_sys::GetSessionUserId()
    };
    if caller == role {
        return None;
    }
    let whom = role_name(role);
    if context & pg_sys::SECURITY_RESTRICTED_OPERATION as i32 != 0 {
        return Some((
            format!("{} cannot become {whom} inside a security-restricted operation", role_name(caller)),
            "convert from a session of its own, not from code that runs as a table's owner".into(),
        ));
    }
    if let Some(allowed) = old_rule(caller, role) {
        let who = role_name(caller);
        return (!allowed)
            .then(|| (format!("{who} may not SET ROLE {whom}"), format!("GRANT {} TO {}", quote(&whom), quote(&who))));
    }
    if context & pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32 != 0 {
        return Some((
            format!(
                "{} cannot become {whom} inside a SECURITY DEFINER function (PostgreSQL refuses SET ROLE there, in a superuser's function too)",
                role_name(caller)
            ),
            "convert outside any SECURITY DEFINER function, in a session whose user may SET ROLE to the owner".into(),
        ));
    }
    if can_set_role(session, role) {
        return None;
    }
    let who = role_name(session);
    let set_option = if cfg!(any(feature = "pg14", feature = "pg15")) { "" } else { " WITH SET TRUE" };
    Some((format!("{who} may not SET ROLE {whom}"), format!("GRANT {} TO {}{set_option}", quote(&whom), quote(&who))))
}

#[pg_schema]
mod snowflake_internal {
    use super::*;

    /// NULL when the current user may act as `role` (is it, or `SET ROLE` to it would be allowed
    /// here), else what would let it (the GRANT, or a call outside a SECURITY DEFINER function).
    /// The conversion asks this first, to refuse before anything runs.
    #[pg_extern(stable, parallel_safe, strict)]
    fn missing_grant(role: pg_sys::Oid) -> Option<String> {
        if switched_off() {
            return None;
        }
        refusal(role).map(|(_, grant)| grant)
    }

    /// The statement `action` runs on `rel` (and `col`), as the conversion shows it in its plan.
    #[pg_extern(stable, parallel_safe)]
    fn owner_statement(action: &str, rel: pg_sys::Oid, col: default!(Option<&str>, "NULL")) -> String {
        let action = Action::parse(action);
        let (name, _, _) = relation(rel);
        statement(action, &name, col)
    }

    /// Runs `action` on `rel` (and `col`) as the relation's owner, in a security-restricted
    /// operation (see the top of this file), and returns the value read (max, min) or NULL.
    /// Refuses (42501) where `SET ROLE` to the owner would be refused ([`refusal`]).
    #[pg_extern(volatile, parallel_unsafe)]
    fn as_owner(action: &str, rel: pg_sys::Oid, col: default!(Option<&str>, "NULL")) -> Option<i64> {
        let action = Action::parse(action);
        let (name, owner, kind) = relation(rel);
        let (kinds, what) = action.kinds();
        if !kinds.contains(&kind) {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                format!("{name} is not {what}"),
                "snowflake_internal.as_owner",
            )
            .set_hint("Each action of a conversion applies to one kind of relation: drop_sequence and disown_sequence to a sequence, drop_view to a view, the others to a table.")
            .report(PgLogLevel::ERROR);
        }
        if action.needs_column() && col.is_none() {
            statement(action, &name, None); // raises: the action needs a column
        }
        let statement = statement(action, &name, col);
        if switched_off() {
            return execute(&statement);
        }
        if let Some((why, grant)) = refusal(owner) {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("permission denied: {why} (the owner of {name}), as whom a conversion would run: {statement}"),
                "snowflake_internal.as_owner",
            )
            .set_hint(format!(
                "A conversion runs each statement as the owner of what it alters, only where SET ROLE to that owner would be allowed (the session user's right to SET ROLE, never inside a SECURITY DEFINER function or a security-restricted operation; privileges alone, INHERIT, are not enough): convert as that owner or as a superuser, or {grant}."
            ))
            .report(PgLogLevel::ERROR);
        }
        let mut caller = pg_sys::InvalidOid;
        let mut context: i32 = 0;
        // SAFETY: as analyze.c: the owner, restricted, until the statement ends. An error on the
        // way unwinds to the caller's (sub)transaction, whose abort restores both the user id and
        // the settings, as it does for VACUUM and ANALYZE.
        let nest = unsafe {
            pg_sys::GetUserIdAndSecContext(&mut caller, &mut context);
            pg_sys::SetUserIdAndSecContext(owner, context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32);
            pg_sys::NewGUCNestLevel()
        };
        set_local(c"search_path", c"pg_catalog, pg_temp");
        set_local(c"row_security", c"off");
        let result = execute(&statement);
        // SAFETY: the nest level and the user id saved above. false: what the statement's code
        // set is undone too, as after ANALYZE.
        unsafe {
            pg_sys::AtEOXact_GUC(false, nest);
            pg_sys::SetUserIdAndSecContext(caller, context);
        }
        result
    }
}
