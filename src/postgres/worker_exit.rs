//! How the extension's background workers end on SIGTERM. The signal comes either from
//! `pg_terminate_backend()` (the hint's way to make a worker read its files again: it must be
//! started again) or from the postmaster shutting down (nothing is started again, and the exit
//! needs no line in the log). The postmaster tells which: before it signals any child at a
//! shutdown it writes "stopping" as the status line of `postmaster.pid`.

use super::mark_store;
use pgrx::prelude::*;
use std::io::Read;

/// The status line of `postmaster.pid` (its 8th, `LOCK_FILE_LINE_PM_STATUS`).
const STATUS_LINE: usize = 8;
/// More than the file ever holds (a few short lines): a larger file is not read further.
const MAX_PID_FILE_BYTES: u64 = 4096;

/// Whether the postmaster's lock file says it is shutting down: its status line is "stopping".
pub fn stopping_in(pid_file: &str) -> bool {
    pid_file.lines().nth(STATUS_LINE - 1).is_some_and(|line| line.trim() == "stopping")
}

/// The exit code after SIGTERM: 0 at a shutdown (the postmaster would start nothing again anyway,
/// and logs no exit of code 0), 1 otherwise, so that the postmaster starts the worker again after
/// its restart interval. A file that cannot be read counts as "not stopping": a restart too many is
/// harmless, a worker never started again is not.
pub fn code_after_sigterm() -> i32 {
    let mut text = String::new();
    let read = std::fs::File::open(mark_store::data_dir().join("postmaster.pid"))
        .and_then(|f| f.take(MAX_PID_FILE_BYTES).read_to_string(&mut text));
    if read.is_ok() && stopping_in(&text) {
        0
    } else {
        1
    }
}

/// Ends this worker after SIGTERM, the way PostgreSQL's own processes end. (It does not return;
/// PostgreSQL 18's headers no longer say so to Rust, hence no `-> !`.)
pub fn exit_after_sigterm() {
    let code = code_after_sigterm();
    // SAFETY: proc_exit runs the exit callbacks and ends the process.
    unsafe { pg_sys::proc_exit(code) };
}

#[cfg(test)]
mod tests {
    use super::stopping_in;

    // postmaster.pid as PostgreSQL writes it: pid, data directory, start time, port, socket
    // directory, listen address, shared memory key, status (padded to 8 characters).
    fn pid_file(status: &str) -> String {
        format!("4242\n/var/lib/pg/data\n1733450000\n5432\n/tmp\n*\n  5432001    131072\n{status}\n")
    }

    #[test]
    fn stopping_is_read_from_the_status_line() {
        assert!(stopping_in(&pid_file("stopping")));
        assert!(!stopping_in(&pid_file("ready   ")));
        assert!(!stopping_in(&pid_file("starting")));
        assert!(!stopping_in(&pid_file("standby ")));
    }

    #[test]
    fn a_short_or_odd_file_is_not_a_shutdown() {
        assert!(!stopping_in(""));
        assert!(!stopping_in("4242\n/var/lib/pg/data\n"));
        // "stopping" elsewhere than the status line (a data directory named so) is not a status.
        assert!(!stopping_in("4242\nstopping\n1733450000\n5432\n/tmp\n*\nkey\nready   \n"));
    }
}
