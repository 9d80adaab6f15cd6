//! The one place where the core's errors become PostgreSQL errors: each gets its SQLSTATE here,
//! its message and hint from the core (`pg_snowflake_core::error`, where the wording is tested).

use pg_snowflake_core::{Error, LayoutError};
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// The SQLSTATE of an error.
pub fn sqlstate(e: &Error) -> PgSqlErrorCode {
    use PgSqlErrorCode::*;
    match e {
        Error::Layout(e) => match e {
            LayoutError::MachineIdUnset { .. } => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            LayoutError::MachineIdOutOfRange { .. }
            | LayoutError::FieldWidth { .. }
            | LayoutError::TooFewTimestampBits { .. }
            | LayoutError::EpochBefore1970 { .. }
            | LayoutError::ClockBeforeEpoch { .. }
            | LayoutError::TimestampExhausted { .. }
            | LayoutError::TimeUnit { .. }
            | LayoutError::PartOutOfRange { .. }
            | LayoutError::NegativeId { .. } => ERRCODE_INVALID_PARAMETER_VALUE,
            LayoutError::TimeOutsideLayout { .. } | LayoutError::TimeOutOfRange { .. } => {
                ERRCODE_DATETIME_FIELD_OVERFLOW
            }
        },
        Error::NotPreloaded
        | Error::PublicKeyUnset
        | Error::MachineIdNotHeld { .. }
        | Error::HandSetIdRefused { .. } => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        Error::MachineIdSource { .. } => ERRCODE_INVALID_PARAMETER_VALUE,
        Error::SettingNotAccepted { .. }
        | Error::EpochUnparsable { .. }
        | Error::UnknownPreset { .. }
        | Error::NotAFixedLayout { .. }
        | Error::PartitionStep { .. }
        | Error::PartitionRange { .. }
        | Error::TooManyPartitions { .. }
        | Error::LayoutArgument { .. }
        | Error::PublicKeyInvalid { .. } => ERRCODE_INVALID_PARAMETER_VALUE,
        Error::MarkUnreadable => ERRCODE_DATA_CORRUPTED,
        // As PostgreSQL's own complaints about a configuration file.
        Error::KeyFile { .. } => ERRCODE_CONFIG_FILE_ERROR,
        Error::InvalidPublicId { .. } => ERRCODE_INVALID_TEXT_REPRESENTATION,
        Error::MarkWrite { os_error, .. } => file_access(*os_error),
        // Another process holds what this one needs, as lock_timeout does.
        Error::MarkWriterBusy { .. } => ERRCODE_LOCK_NOT_AVAILABLE,
        Error::StandbysDidNotConfirm { .. } => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        Error::MarkWriteTooSlow { .. } => ERRCODE_IO_ERROR,
        // The fault lies outside PostgreSQL, in the system clock.
        Error::ClockBehind { .. } | Error::ClockJumped { .. } | Error::ClockStalled { .. } => ERRCODE_SYSTEM_ERROR,
        Error::LayoutChanged { .. } => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        Error::InfiniteTime { .. } => ERRCODE_DATETIME_FIELD_OVERFLOW,
        // As nextval() on a standby.
        Error::HotStandby | Error::HotStandbyLeased => ERRCODE_READ_ONLY_SQL_TRANSACTION,
    }
}

/// The SQLSTATE of a failed file operation, as PostgreSQL's errcode_for_file_access() gives it
/// (a full disk is 53100, a read-only or forbidden directory 42501); 58030 where the system gave
/// no error number or one that PostgreSQL does not classify.
fn file_access(os_error: Option<i32>) -> PgSqlErrorCode {
    use PgSqlErrorCode::*;
    match os_error {
        Some(libc::EPERM | libc::EACCES | libc::EROFS) => ERRCODE_INSUFFICIENT_PRIVILEGE,
        Some(libc::ENOENT) => ERRCODE_UNDEFINED_FILE,
        Some(libc::EEXIST) => ERRCODE_DUPLICATE_FILE,
        Some(libc::ENOTDIR | libc::EISDIR | libc::ENOTEMPTY) => ERRCODE_WRONG_OBJECT_TYPE,
        Some(libc::ENOSPC) => ERRCODE_DISK_FULL,
        Some(libc::ENOMEM) => ERRCODE_OUT_OF_MEMORY,
        Some(libc::ENFILE | libc::EMFILE) => ERRCODE_INSUFFICIENT_RESOURCES,
        _ => ERRCODE_IO_ERROR,
    }
}

/// Raises this error in the calling backend; never returns.
pub fn raise(e: &Error) -> ! {
    ErrorReport::new(sqlstate(e), e.message(), "pg_snowflake").set_hint(e.hint()).report(PgLogLevel::ERROR);
    unreachable!("an ERROR report does not return")
}

/// The value, or the error raised.
#[inline]
pub fn value_or_raise<T, E: Into<Error>>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => raise(&e.into()),
    }
}

/// Logs, at server start, why no id can be generated (every call then fails with the same error).
pub fn warn_at_start(e: &Error) {
    ErrorReport::new(sqlstate(e), format!("pg_snowflake cannot generate ids: {}", e.message()), "pg_snowflake startup")
        .set_hint(e.hint())
        .report(PgLogLevel::WARNING);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_follow_postgresql_conventions() {
        assert_eq!(
            sqlstate(&LayoutError::NegativeId { id: -1 }.into()),
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE
        );
        assert_eq!(sqlstate(&Error::HotStandby), PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION);
        assert_eq!(
            sqlstate(&LayoutError::MachineIdUnset { max: 1 }.into()),
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
        );
        assert_eq!(
            sqlstate(&LayoutError::TimeOutOfRange { id: 1 }.into()),
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW
        );
    }

    #[test]
    fn a_failed_mark_write_has_the_sqlstate_postgresql_gives_its_own_file_errors() {
        let write = |os_error| sqlstate(&Error::MarkWrite { reason: String::new(), os_error });
        assert_eq!(write(Some(libc::ENOSPC)), PgSqlErrorCode::ERRCODE_DISK_FULL);
        assert_eq!(write(Some(libc::EROFS)), PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE);
        assert_eq!(write(Some(libc::EACCES)), PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE);
        assert_eq!(write(Some(libc::EISDIR)), PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE);
        assert_eq!(write(Some(libc::EIO)), PgSqlErrorCode::ERRCODE_IO_ERROR);
        assert_eq!(write(None), PgSqlErrorCode::ERRCODE_IO_ERROR);
    }
}
