//! How the extension's background workers end on SIGTERM. The signal comes either from
//! `pg_terminate_backend()` (the hint's way to make a worker read its files again: it must be
//! started again) or from the postmaster shutting down (nothing is started again, and the exit
//! needs no line in the log). Two things tell which. The postmaster writes "stopping" as the
//! status line of `postmaster.pid` as soon as a shutdown is asked for, before it signals any
//! child; but a smart shutdown then waits for the clients to disconnect, and the workers run on
//! meanwhile (the clients still connected need ids): a `pg_terminate_backend()` in that wait
//! reads "stopping" too (issue 57, item 6). So the sender of the signal is noted as well (the
//! handler pgrx installed is wrapped by one that reads `si_pid` first): only a SIGTERM from the
//! postmaster while it is stopping ends a worker for good. Any other is a restart: outside a
//! shutdown the worker exits with code 1 and the postmaster starts it again a second later; while a
//! smart shutdown waits, the postmaster starts no worker until something else wakes it (its sleep
//! ignores workers once a shutdown began: PostgreSQL's `DetermineSleepTime`), so the worker starts
//! over in place, at once.

use super::{id_source, mark_store};
use pgrx::prelude::*;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::Relaxed};

/// Who sent the last SIGTERM (its process id), 0: not known (none yet, or one that came before
/// the handler was wrapped).
static SENDER: AtomicI32 = AtomicI32::new(0);
/// The handler pgrx installed, and whether it takes siginfo (PostgreSQL's own wrapper may).
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);
static PREVIOUS_SIGINFO: AtomicBool = AtomicBool::new(false);

/// Wraps the worker's SIGTERM handler (after `attach_signal_handlers`) with one that notes the
/// sender's process id, then runs it as before.
pub fn note_sigterm_sender() {
    // SAFETY: sigaction on this process's own SIGTERM, with the handler it had kept and run after
    // ours; the mask and flags are kept (SA_SIGINFO added, which our handler needs).
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old) != 0 || old.sa_sigaction <= libc::SIG_IGN {
            return;
        }
        PREVIOUS.store(old.sa_sigaction, Relaxed);
        PREVIOUS_SIGINFO.store(old.sa_flags & libc::SA_SIGINFO != 0, Relaxed);
        let mut new = old;
        new.sa_sigaction = note_and_forward as *const () as usize;
        new.sa_flags = old.sa_flags | libc::SA_SIGINFO;
        libc::sigaction(libc::SIGTERM, &new, std::ptr::null_mut());
    }
}

/// The wrapper: notes the sender (async-signal-safe: an atomic store), then the handler before.
extern "C" fn note_and_forward(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo for this signal; the previous handler as it was installed.
    unsafe {
        if !info.is_null() {
            SENDER.store((*info).si_pid(), Relaxed);
        }
        let previous = PREVIOUS.load(Relaxed);
        if PREVIOUS_SIGINFO.load(Relaxed) {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(previous);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(previous);
            f(signal);
        }
    }
}

/// The status line of `postmaster.pid` (its 8th, `LOCK_FILE_LINE_PM_STATUS`).
const STATUS_LINE: usize = 8;
/// More than the file ever holds (a few short lines): a larger file is not read further.
const MAX_PID_FILE_BYTES: u64 = 4096;

/// Whether the postmaster's lock file says it is shutting down: its status line is "stopping".
pub fn stopping_in(pid_file: &str) -> bool {
    pid_file.lines().nth(STATUS_LINE - 1).is_some_and(|line| line.trim() == "stopping")
}

/// Whether a SIGTERM from `sender` (0: not known) while the lock file says `stopping` is the stop
/// that ends the worker for good: the postmaster's (or one whose sender is not known) at a
/// shutdown. Any other (`pg_terminate_backend()`, a `kill` by hand), also while a smart shutdown
/// waits for its clients, asks for the worker to be started again.
pub fn final_stop(sender: i32, postmaster: i32, stopping: bool) -> bool {
    stopping && (sender == 0 || sender == postmaster)
}

/// What a worker does after a SIGTERM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Exit with this code: 0 at the stop that ends the worker for good (the postmaster would start
    /// nothing again anyway, and logs no exit of code 0), 1 otherwise, so that the postmaster starts
    /// it again after its restart interval.
    Exit(i32),
    /// Start over in place: a restart asked while a smart shutdown waits for its clients.
    StartOver,
}

/// What a SIGTERM from `sender` (0: not known) asks, the lock file saying `stopping` or not.
pub fn next(sender: i32, postmaster: i32, stopping: bool) -> Next {
    match (final_stop(sender, postmaster, stopping), stopping) {
        (true, _) => Next::Exit(0),
        (false, true) => Next::StartOver,
        (false, false) => Next::Exit(1),
    }
}

/// After a SIGTERM: the stop flags cleared first (a SIGTERM that comes after sets them again and
/// ends the next loop: the postmaster's own is never lost), then what the last one asked. A lock
/// file that cannot be read counts as "not stopping": a restart too many is harmless, a worker
/// never started again is not.
pub fn after_sigterm() -> Next {
    // SAFETY: a sig_atomic_t of this process, set by its SIGTERM handler (pgrx's).
    unsafe { std::ptr::write_volatile(&raw mut pg_sys::ShutdownRequestPending, 0) };
    let _ = pgrx::bgworkers::BackgroundWorker::sigterm_received();
    let sender = SENDER.swap(0, Relaxed);
    let mut text = String::new();
    let read = std::fs::File::open(mark_store::data_dir().join("postmaster.pid"))
        .and_then(|f| f.take(MAX_PID_FILE_BYTES).read_to_string(&mut text));
    // SAFETY: set by the postmaster before it forks, read-only since.
    let postmaster = unsafe { pg_sys::PostmasterPid };
    // (Test builds: the sender ignored, as before issue 57.)
    let sender = if id_source::fault_sigterm_sender_ignored() { 0 } else { sender };
    next(sender, postmaster, read.is_ok() && stopping_in(&text))
}

/// Ends this worker with `code`, the way PostgreSQL's own processes end. (It does not return;
/// PostgreSQL 18's headers no longer say so to Rust, hence no `-> !`.)
pub fn exit(code: i32) {
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
    fn only_the_postmaster_s_sigterm_at_a_shutdown_is_the_last() {
        use super::{next, Next};
        assert_eq!(next(100, 100, true), Next::Exit(0), "the postmaster's, stopping: for good");
        assert_eq!(next(0, 100, true), Next::Exit(0), "a sender not known, stopping: as before, for good");
        assert_eq!(next(4242, 100, true), Next::StartOver, "pg_terminate_backend() while a smart shutdown waits");
        assert_eq!(next(4242, 100, false), Next::Exit(1), "pg_terminate_backend(): started again");
        assert_eq!(next(100, 100, false), Next::Exit(1), "not stopping: started again");
    }

    #[test]
    fn a_short_or_odd_file_is_not_a_shutdown() {
        assert!(!stopping_in(""));
        assert!(!stopping_in("4242\n/var/lib/pg/data\n"));
        // "stopping" elsewhere than the status line (a data directory named so) is not a status.
        assert!(!stopping_in("4242\nstopping\n1733450000\n5432\n/tmp\n*\nkey\nready   \n"));
    }
}
