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
        Error::NotPreloaded | Error::PublicKeyUnset => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
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
        Error::MarkWrite { .. } => ERRCODE_IO_ERROR,
        // The fault lies outside PostgreSQL, in the system clock.
        Error::ClockBehind { .. } | Error::ClockJumped { .. } => ERRCODE_SYSTEM_ERROR,
        Error::LayoutChanged { .. } => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        Error::InfiniteTime { .. } => ERRCODE_DATETIME_FIELD_OVERFLOW,
        // As nextval() on a standby.
        Error::HotStandby => ERRCODE_READ_ONLY_SQL_TRANSACTION,
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
}
