//! A server's life as the core decides it, at the moments the shell reports: the state a server
//! starts from (the mark on disk, checked against this server), the layout every mark written is
//! stamped with, the mark left at a clean stop, and a lease replayed from the WAL. The shell only
//! reads and writes what these say; the lifecycle simulation (`lifecycle_sim.rs`) drives the same
//! functions through every order of starts, stops, crashes, changes and failovers.
//!
//! The rule that keeps a refused change of layout refused: while it is refused, every mark this
//! server writes (a clean stop writes none, a replayed lease does) is stamped with the *old*
//! layout, the one the ids on record were issued under, so the next start refuses again until
//! `snowflake.accept_layout_change` names it.

use crate::error::Error;
use crate::host::MarkFile;
use crate::layout::Layout;
use crate::lease;
use crate::lease_record::LeaseRecord;
use crate::mark_file::MarkRecord;
use crate::start_check::{self, Facts, Reservation};
use crate::state::{grant, SharedState};
use std::sync::atomic::Ordering::Relaxed;

/// A mechanism of this file switched off, for the lifecycle simulation's negative controls (in
/// tests only, one thread at a time; production builds never switch anything off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Off {
    /// The bug of issue 31: while a change is refused, the clean stop lowers the mark and every
    /// mark written is stamped with the new layout, so the next start accepts it unasked.
    RefusalKept,
    /// A replayed lease's layout is not compared with this server's.
    ReplayedLayout,
    /// The bug of issue 42 (finding 1): a replayed mark that cannot be made durable is only
    /// warned about, and recovery goes on past its record with the file behind.
    ReplayWriteChecked,
    /// The bug of issue 42 (finding 2): a replayed lease of the layout this start accepted
    /// refuses again.
    ReplayAcceptance,
    /// The bug of issue 42 (finding 3): a mark write inserts the lease's WAL record before it
    /// writes the file (`mark_write::persist`; the simulation's switch).
    #[cfg_attr(not(test), allow(dead_code))]
    FileFirst,
    /// The bug of issue 51 (finding 1): a leased server that finds a mark file starts with the
    /// grant word of a mark's state, held for ever under machine id 0, not held by nobody.
    #[cfg_attr(not(test), allow(dead_code))]
    StartGrant,
}

#[cfg(test)]
thread_local! {
    pub(crate) static OFF: std::cell::Cell<Option<Off>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
pub(crate) fn off(what: Off) -> bool {
    OFF.with(|o| o.get() == Some(what))
}
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn off(_: Off) -> bool {
    false
}

/// What a start found and decided.
pub struct Started {
    pub shared: SharedState,
    /// Lines for the server log.
    pub notes: Vec<String>,
    /// Why nothing can be issued, said once at start as a WARNING (the same error every call gets).
    pub refused: Option<Error>,
    /// An accepted layout change whose new ids are not all above the old: (first new id, last old
    /// id), said as a WARNING.
    pub accepted_below: Option<(i64, i64)>,
}

/// The grant word every start begins with, whatever it found on disk and however the server
/// came to start (first start, clean restart, crash-restart, a standby or a copy restored from a
/// base backup, all of which promote through a start of shared memory): a machine id set by hand
/// or read from a pod index is the generator's own, held for ever; a leased one is held by nobody,
/// and no id is issued until the worker has claimed it in etcd and published its deadline. So is
/// a machine id set by hand and reserved in an id space whose reservation this server has not
/// seen confirmed (a first reservation; a copy, whose record names its original): held by nobody
/// until the worker has confirmed it (`claim::Claimer::hold_reserved`).
pub fn initial_grant(facts: &Facts) -> u64 {
    if facts.leased && !off(Off::StartGrant) || facts.reservation == Reservation::Awaiting {
        grant::NOBODY
    } else {
        grant::FOREVER
    }
}

/// The shared state of a server starting with `found` on disk (`Err`: a file that is not a mark),
/// at wall-clock `now_ms`. Its grant word is [`initial_grant`]'s, set once, last. A hand-set
/// server whose reservation is recorded takes every tick up to the mark it took as used at that
/// confirmation as used again (its mark file may be below it, if it issued nothing since).
pub fn start(found: Result<Option<MarkRecord>, String>, facts: &Facts, now_ms: i64) -> Started {
    let started = start_above_mark(found, facts, now_ms);
    if let Reservation::Confirmed { taken_ms } = facts.reservation {
        if taken_ms >= 0 {
            started.shared.use_up_to(facts.layout.tick_of_mark(taken_ms), facts.layout.sequence_bits());
        }
    }
    started.shared.hot.grant.publish(initial_grant(facts));
    started
}

fn start_above_mark(found: Result<Option<MarkRecord>, String>, facts: &Facts, now_ms: i64) -> Started {
    let layout = facts.layout;
    let mut started = Started {
        shared: SharedState::starting_at(None, layout.sequence_bits(), now_ms),
        notes: vec![],
        refused: None,
        accepted_below: None,
    };
    match found {
        Ok(None) => {}
        Ok(Some(found)) => {
            let ms = found.mark_unix_ms;
            started.shared =
                SharedState::starting_at(Some((layout.tick_of_mark(ms), ms)), layout.sequence_bits(), now_ms);
            let verdict = start_check::assess(&found, facts);
            started.notes = verdict.notes;
            started.accepted_below = verdict.accepted_below;
            started.shared.accepted.set(verdict.accepted_layout.as_ref());
            if let Some(old) = verdict.refused_layout {
                started.refused = Some(Error::LayoutChanged { old, new: *layout });
                started.shared.refused.set(Some(&old));
            }
        }
        // The shell says why, naming the file.
        Err(_) => {
            started.refused = Some(Error::MarkUnreadable);
            started.shared.mark.unreadable.store(true, Relaxed);
        }
    }
    started
}

/// The layout a mark written now is stamped with: the server's, or while a change of layout is
/// refused the old one, so that the refusal holds at the next start.
pub fn stamp(shared: &SharedState, layout: &Layout) -> Layout {
    if off(Off::RefusalKept) {
        return *layout;
    }
    shared.refused.layout().unwrap_or(*layout)
}

/// The mark to leave on disk at a clean stop, if it should change (see [`lease::final_mark`]).
/// None while a layout change is refused: the state word then holds the mark in the new layout's
/// ticks, not a last issued id, and the file must keep the mark as the old layout left it.
pub fn at_clean_stop(shared: &SharedState, layout: &Layout) -> Option<i64> {
    if shared.refused.layout().is_some() && !off(Off::RefusalKept) {
        return None;
    }
    lease::final_mark(shared, layout)
}

/// A lease record replayed from the WAL: the mark rises (never falls), and a mark that rose is
/// made durable in the file at once. The latest layout on record decides: a record written under
/// another layout than this server's refuses generation (a promoted standby would issue ids that
/// do not compare with its primary's), unless it is the change this start accepted (crash recovery
/// of the leases written before the change), and the mark made durable records that layout, so
/// that a change is accepted only at a start, by `snowflake.accept_layout_change` naming it, as any
/// other; a record of this server's layout lifts a refusal (its primary changed to it).
///
/// `Err`: the mark could not be made durable. Recovery must stop at this record, not go on: the
/// record is replayed again at the next start, since no checkpoint or restartpoint can pass it.
/// Going on would leave the file behind memory, and a server restarted before it issues an id
/// (whose clean stop then writes nothing), or crashed after the end-of-recovery checkpoint moved
/// past the record, would start below ids its primary issued. A warning and a flag "the file is
/// behind" cannot cover that crash: only the WAL can, and only while redo has not passed it.
pub fn replay(
    shared: &SharedState,
    layout: &Layout,
    lease: &LeaseRecord,
    file: &mut impl MarkFile,
) -> Result<(), Error> {
    if let Some(Ok(theirs)) = lease.layout.map(|r| r.layout()).filter(|_| !off(Off::ReplayedLayout)) {
        let accepted = shared.accepted.layout() == Some(theirs) && !off(Off::ReplayAcceptance);
        shared.refused.set((theirs != *layout && !accepted).then_some(&theirs));
    }
    let ms = lease.mark_unix_ms;
    if !shared.raise_to_mark(layout.tick_of_mark(ms), ms, layout.sequence_bits()) {
        return Ok(());
    }
    match file.write_mark_file(ms, &stamp(shared, layout)) {
        Err(_) if off(Off::ReplayWriteChecked) => Ok(()),
        result => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::EPOCH_2025;
    use crate::mark_file::LayoutRecord;

    fn facts<'a>(layout: &'a Layout, accepted: &'a str) -> Facts<'a> {
        Facts {
            layout,
            machine_id: Some(3),
            leased: false,
            system_identifier: 1,
            reservation: Reservation::None,
            accepted_layout: accepted,
        }
    }

    fn found(layout: &Layout, ms: i64) -> Result<Option<MarkRecord>, String> {
        Ok(Some(MarkRecord {
            mark_unix_ms: ms,
            machine_id: Some(3),
            layout: Some(LayoutRecord::from(layout)),
            system_identifier: Some(1),
            leased_from: None,
        }))
    }

    #[test]
    fn a_refused_layout_writes_no_final_mark_and_stamps_the_old_layout() {
        let old = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let new = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        let s = start(found(&old, EPOCH_2025 + 123_456), &facts(&new, ""), EPOCH_2025 + 200_000);
        assert!(matches!(s.refused, Some(Error::LayoutChanged { .. })));
        assert_eq!(at_clean_stop(&s.shared, &new), None, "the clean stop leaves the file as it is");
        assert_eq!(stamp(&s.shared, &new), old, "a replayed lease is stamped with the old layout");
        // The same start accepted: the final mark is written, stamped with the new layout.
        let text = old.describe();
        let a = start(found(&old, EPOCH_2025 + 123_456), &facts(&new, &text), EPOCH_2025 + 200_000);
        assert!(a.refused.is_none());
        assert_eq!(stamp(&a.shared, &new), new);
        assert_eq!(at_clean_stop(&a.shared, &new), None, "nothing issued since start: nothing to lower");
    }

    #[test]
    fn a_clean_stop_with_nothing_issued_since_start_leaves_the_mark_as_it_was() {
        // Accepted 1 ms -> 10 ms ticks, stopped before any id: lowering the mark to the start of
        // its 10 ms tick would let the 1 ms layout, accepted back, issue again up to 9 ms of ids.
        let fine = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let coarse = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        let mark = EPOCH_2025 + 123_457;
        let text = fine.describe();
        let s = start(found(&fine, mark), &facts(&coarse, &text), mark + 50);
        assert_eq!(at_clean_stop(&s.shared, &coarse), None);
        let s = start(found(&fine, mark), &facts(&fine, ""), mark + 50);
        assert_eq!(at_clean_stop(&s.shared, &fine), None, "nothing issued: nothing to lower");
    }

    #[test]
    fn an_accepted_change_says_when_new_ids_go_below_the_old() {
        let old = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let text = old.describe();
        let coarser = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        let s = start(found(&old, EPOCH_2025 + 5_000_000), &facts(&coarser, &text), EPOCH_2025 + 5_000_000);
        let (first, last) = s.accepted_below.expect("10 ms ticks make ids ten times smaller");
        assert!(first <= last && first < last / 5, "{first} {last}");
        let finer_sequence = Layout::new(EPOCH_2025, 1, 8, 14).unwrap();
        let s = start(found(&old, EPOCH_2025 + 5_000_000), &facts(&finer_sequence, &text), EPOCH_2025 + 5_000_000);
        assert_eq!(s.accepted_below, None, "the same timestamp field: new ids continue above");
    }

    #[test]
    fn a_lease_replayed_from_a_primary_of_another_layout_refuses_until_accepted() {
        let mine = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let theirs = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        let record = LeaseRecord {
            machine_id: 1,
            mark_unix_ms: EPOCH_2025 + 9_000,
            layout: Some((&theirs).into()),
            leased: false,
        };
        let s = start(Ok(None), &facts(&mine, ""), EPOCH_2025);
        let mut file = Files::default();
        replay(&s.shared, &mine, &record, &mut file).unwrap();
        assert_eq!(file.written, vec![(EPOCH_2025 + 9_000, theirs)], "the mark still rises, stamped with theirs");
        assert_eq!(s.shared.refused.layout(), Some(theirs));
        assert_eq!(stamp(&s.shared, &mine), theirs, "its file records the layout the ids were issued under");
        let v1 = LeaseRecord { layout: None, ..record };
        replay(&s.shared, &mine, &v1, &mut file).unwrap();
        assert_eq!(s.shared.refused.layout(), Some(theirs), "a record that does not say changes nothing");
        let same = LeaseRecord { layout: Some((&mine).into()), ..record };
        replay(&s.shared, &mine, &same, &mut file).unwrap();
        assert_eq!(s.shared.refused.layout(), None, "its primary now writes under this server's layout");
        // Accepted at the next start, as any change: the file records the primary's layout.
        let text = theirs.describe();
        let file = found(&theirs, EPOCH_2025 + 9_000);
        assert!(start(file.clone(), &facts(&mine, ""), EPOCH_2025).refused.is_some());
        assert!(start(file, &facts(&mine, &text), EPOCH_2025).refused.is_none());
    }

    /// The mark files written, or a write that fails.
    #[derive(Default)]
    struct Files {
        written: Vec<(i64, Layout)>,
        fail: bool,
    }
    impl MarkFile for Files {
        fn write_mark_file(&mut self, unix_ms: i64, stamped: &Layout) -> Result<(), Error> {
            if self.fail {
                return Err(Error::MarkWrite { reason: "No space left on device".into(), os_error: Some(28) });
            }
            self.written.push((unix_ms, *stamped));
            Ok(())
        }
    }

    #[test]
    fn a_replayed_mark_that_cannot_be_made_durable_stops_recovery() {
        let l = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let s = start(Ok(None), &facts(&l, ""), EPOCH_2025);
        let record =
            LeaseRecord { machine_id: 1, mark_unix_ms: EPOCH_2025 + 9_000, layout: Some((&l).into()), leased: false };
        let mut file = Files { fail: true, ..Files::default() };
        assert!(matches!(replay(&s.shared, &l, &record, &mut file), Err(Error::MarkWrite { .. })));
        // A mark that does not rise writes nothing, and cannot fail.
        let lower = LeaseRecord { mark_unix_ms: EPOCH_2025 + 8_000, ..record };
        assert!(replay(&s.shared, &l, &lower, &mut file).is_ok());
    }

    #[test]
    fn crash_recovery_after_an_accepted_change_does_not_refuse_it_again() {
        // Ids issued under 1 ms ticks, a crash, restarted with 10 ms ticks and the change accepted:
        // the leases replayed after the start were written under the old layout (issue 42).
        let old = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let new = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        let text = old.describe();
        let s = start(found(&old, EPOCH_2025 + 5_000), &facts(&new, &text), EPOCH_2025 + 6_000);
        assert!(s.refused.is_none());
        let record =
            LeaseRecord { machine_id: 3, mark_unix_ms: EPOCH_2025 + 6_000, layout: Some((&old).into()), leased: false };
        replay(&s.shared, &new, &record, &mut Files::default()).unwrap();
        assert_eq!(s.shared.refused.layout(), None, "the change this start accepted");
        // Another layout than the accepted one still refuses.
        let other = Layout::new(EPOCH_2025, 1, 8, 14).unwrap();
        let record = LeaseRecord { layout: Some((&other).into()), ..record };
        replay(&s.shared, &new, &record, &mut Files::default()).unwrap();
        assert_eq!(s.shared.refused.layout(), Some(other));
    }

    #[test]
    fn a_leased_server_holds_no_id_at_any_start_whatever_it_finds_on_disk() {
        use crate::generator::{Blocked, Generator};
        let l = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let leased = Facts { machine_id: None, leased: true, ..facts(&l, "") };
        let g = Generator::new(l, 0).unwrap();
        // A first start, and every start that finds a mark (a restart, a crash, a copy, a
        // standby restored from a base backup): no id before the worker's claim.
        for file in [Ok(None), found(&l, EPOCH_2025 + 5_000)] {
            let s = start(file, &leased, EPOCH_2025 + 6_000);
            s.shared.mark.tick.store(i64::MAX, Relaxed);
            assert_eq!(s.shared.hot.grant.word(), grant::NOBODY);
            assert_eq!(g.try_issue(&s.shared, EPOCH_2025 + 7_000), Err(Ok(Blocked::NotHeld)));
        }
        // Set by hand: held for ever, its own machine id.
        let s = start(found(&l, EPOCH_2025 + 5_000), &facts(&l, ""), EPOCH_2025 + 6_000);
        assert_eq!(s.shared.hot.grant.word(), grant::FOREVER);
        // The control: the start of issue 51's finding 1 issues under machine id 0.
        OFF.with(|o| o.set(Some(Off::StartGrant)));
        let s = start(found(&l, EPOCH_2025 + 5_000), &leased, EPOCH_2025 + 6_000);
        OFF.with(|o| o.set(None));
        s.shared.mark.tick.store(i64::MAX, Relaxed);
        let (id, _) = g.try_issue(&s.shared, EPOCH_2025 + 7_000).expect("the bug: an id under machine id 0");
        assert_eq!(l.decode(id).unwrap().machine_id, 0);
    }

    #[test]
    fn an_unreadable_mark_refuses() {
        let l = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let s = start(Err("damaged".into()), &facts(&l, ""), EPOCH_2025);
        assert_eq!(s.refused, Some(Error::MarkUnreadable));
        assert!(s.shared.mark.unreadable.load(Relaxed));
    }
}
