//! The one process that writes a new mark at a time, and what it is doing. The writer's flag in
//! shared memory holds its process id, never a bare "taken": a process that finds the flag held by
//! a process that no longer exists takes it over, so a writer that died without releasing it
//! (PostgreSQL's FATAL exits do not unwind) cannot stop the server's ids. The PostgreSQL shell also
//! releases the flag from an exit callback; a crash re-initialises shared memory, flag included.

use crate::state::SharedState;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// What the writer is doing, in the order it does it; each is also a fault point of the test
/// builds (`snowflake.fault_hold_at` names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum WriteStep {
    /// The flag is taken; nothing is written yet.
    FlagTaken = 1,
    /// About to write and fsync the mark's temporary file (first: a base backup's copy of the file
    /// must hold every lease whose WAL record comes before its checkpoint; issue 42, finding 3).
    FileWrite = 5,
    /// The temporary file is durable; about to rename it over the mark and fsync the directory.
    FileRename = 6,
    /// The file is in place; about to insert the lease's WAL record (PostgreSQL 15+).
    WalInsert = 2,
    /// The record is inserted; about to flush the WAL up to it.
    WalFlush = 3,
    /// Waiting for the synchronous standbys to confirm the record (snowflake.lease_sync).
    StandbyWait = 4,
    /// The mark is durable; about to publish it to the other processes.
    Publish = 7,
}

pub const WRITE_STEPS: [WriteStep; 7] = [
    WriteStep::FlagTaken,
    WriteStep::FileWrite,
    WriteStep::FileRename,
    WriteStep::WalInsert,
    WriteStep::WalFlush,
    WriteStep::StandbyWait,
    WriteStep::Publish,
];

impl WriteStep {
    /// The step as a fault point's name.
    pub fn name(self) -> &'static str {
        match self {
            WriteStep::FlagTaken => "flag_taken",
            WriteStep::WalInsert => "before_wal_insert",
            WriteStep::WalFlush => "before_wal_flush",
            WriteStep::StandbyWait => "standby_wait",
            WriteStep::FileWrite => "before_file",
            WriteStep::FileRename => "before_rename",
            WriteStep::Publish => "before_publish",
        }
    }

    /// What a writer at this step is doing, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            WriteStep::FlagTaken => "starting a mark write",
            WriteStep::WalInsert => "inserting the lease's WAL record",
            WriteStep::WalFlush => "flushing the WAL",
            WriteStep::StandbyWait => {
                "waiting for the synchronous standbys to confirm the lease (snowflake.lease_sync)"
            }
            WriteStep::FileWrite => "writing and syncing the mark file",
            WriteStep::FileRename => "renaming the mark file into place",
            WriteStep::Publish => "publishing the new mark",
        }
    }

    pub fn from_name(name: &str) -> Option<WriteStep> {
        WRITE_STEPS.into_iter().find(|s| s.name() == name)
    }

    fn from_u8(v: u8) -> Option<WriteStep> {
        WRITE_STEPS.into_iter().find(|s| *s as u8 == v)
    }
}

/// The flag, held by this process until dropped (on every return and every unwinding).
pub struct MarkWriter<'a> {
    shared: &'a SharedState,
    pid: i32,
}

impl<'a> MarkWriter<'a> {
    /// The state whose mark this writer writes.
    pub fn shared(&self) -> &'a SharedState {
        self.shared
    }

    /// Says what the writer does next, for the processes that wait for it.
    pub fn step(&self, step: WriteStep) {
        self.shared.mark.writer_step.store(step as u8, Relaxed);
        if step == WriteStep::StandbyWait {
            self.shared.stats.standby_waits.fetch_add(1, Relaxed);
        }
    }
}

impl Drop for MarkWriter<'_> {
    fn drop(&mut self) {
        release_if_held_by(self.shared, self.pid);
    }
}

/// The flag, or who holds it.
pub enum Taken<'a> {
    /// Taken; `from`: the process it was taken over from, which no longer exists.
    Mine { writer: MarkWriter<'a>, from: Option<i32> },
    /// Another process that still exists is writing; `step`: what it said it is doing.
    Busy { pid: i32, step: Option<WriteStep> },
}

/// Takes the writer's flag for process `me`, taking it over from a holder that no longer exists
/// (`exists` says whether a process does).
pub fn try_take(shared: &SharedState, me: i32, mut exists: impl FnMut(i32) -> bool) -> Taken<'_> {
    let flag = &shared.mark.writer;
    let mut expected = 0;
    loop {
        match flag.compare_exchange(expected, me, Acquire, Acquire) {
            Ok(_) => {
                let from = (expected != 0 && expected != me).then_some(expected);
                if from.is_some() {
                    shared.stats.writer_takeovers.fetch_add(1, Relaxed);
                }
                let writer = MarkWriter { shared, pid: me };
                writer.step(WriteStep::FlagTaken);
                return Taken::Mine { writer, from };
            }
            // This process's own stale flag (it cannot be writing now: a write is never re-entered),
            // or a holder that is gone: take it over.
            Err(holder) if holder == me || !exists(holder) => expected = holder,
            Err(holder) => {
                let step = WriteStep::from_u8(shared.mark.writer_step.load(Relaxed));
                // The holder may have let go meanwhile: then try for a free flag once more.
                if flag.load(Acquire) == 0 {
                    expected = 0;
                    continue;
                }
                return Taken::Busy { pid: holder, step };
            }
        }
    }
}

/// Releases the flag if `pid` holds it: when the writer is done, and from the exit callback of a
/// process that ends while writing.
pub fn release_if_held_by(shared: &SharedState, pid: i32) {
    if shared.mark.writer.load(Relaxed) == pid {
        shared.mark.writer_step.store(0, Relaxed);
        let _ = shared.mark.writer.compare_exchange(pid, 0, Release, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        pid != 13
    }

    #[test]
    fn one_writer_at_a_time_and_waiters_see_who_and_what() {
        let s = SharedState::starting_at(None, 12, 0);
        let Taken::Mine { writer, from: None } = try_take(&s, 3, alive) else { panic!("the flag was free") };
        writer.step(WriteStep::WalFlush);
        match try_take(&s, 4, alive) {
            Taken::Busy { pid, step } => assert_eq!((pid, step), (3, Some(WriteStep::WalFlush))),
            Taken::Mine { .. } => panic!("two writers"),
        }
        drop(writer);
        assert_eq!(s.mark.writer.load(Relaxed), 0, "released when dropped");
        assert!(matches!(try_take(&s, 4, alive), Taken::Mine { from: None, .. }));
    }

    #[test]
    fn a_flag_whose_holder_is_gone_is_taken_over_once() {
        let s = SharedState::starting_at(None, 12, 0);
        let Taken::Mine { writer, .. } = try_take(&s, 13, alive) else { panic!() };
        std::mem::forget(writer); // process 13 ends without unwinding (a FATAL exit) and is gone
        assert!(matches!(try_take(&s, 4, |_| true), Taken::Busy { pid: 13, .. }), "while 13 exists");
        let Taken::Mine { writer, from } = try_take(&s, 4, alive) else { panic!("not taken over") };
        assert_eq!((s.mark.writer.load(Relaxed), from), (4, Some(13)));
        assert_eq!(s.stats.writer_takeovers.load(Relaxed), 1);
        assert!(matches!(try_take(&s, 5, alive), Taken::Busy { pid: 4, .. }), "the new holder exists");
        drop(writer);
        assert_eq!(s.mark.writer.load(Relaxed), 0);
    }

    #[test]
    fn the_exit_callback_releases_only_its_own_flag() {
        let s = SharedState::starting_at(None, 12, 0);
        let Taken::Mine { writer, .. } = try_take(&s, 3, alive) else { panic!() };
        release_if_held_by(&s, 5);
        assert_eq!(s.mark.writer.load(Relaxed), 3, "another process's flag is left alone");
        std::mem::forget(writer);
        release_if_held_by(&s, 3);
        assert_eq!((s.mark.writer.load(Relaxed), s.mark.writer_step.load(Relaxed)), (0, 0));
    }

    #[test]
    fn a_stale_flag_of_this_very_process_is_taken_back_without_a_takeover() {
        let s = SharedState::starting_at(None, 12, 0);
        s.mark.writer.store(3, Relaxed);
        assert!(matches!(try_take(&s, 3, alive), Taken::Mine { from: None, .. }));
        assert_eq!(s.stats.writer_takeovers.load(Relaxed), 0);
    }

    #[test]
    fn steps_are_named_and_described() {
        for step in WRITE_STEPS {
            assert_eq!(WriteStep::from_name(step.name()), Some(step));
            assert_eq!(WriteStep::from_u8(step as u8), Some(step));
            assert!(!step.describe().is_empty());
        }
        assert_eq!(WriteStep::from_name("nowhere"), None);
        assert_eq!(WriteStep::from_u8(0), None);
    }
}
