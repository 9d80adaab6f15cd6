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
use crate::layout::Layout;
use crate::lease;
use crate::lease_record::LeaseRecord;
use crate::mark_file::MarkRecord;
use crate::start_check::{self, Facts};
use crate::state::SharedState;
use std::sync::atomic::Ordering::Relaxed;

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

/// The shared state of a server starting with `found` on disk (`Err`: a file that is not a mark),
/// at wall-clock `now_ms`.
pub fn start(found: Result<Option<MarkRecord>, String>, facts: &Facts, now_ms: i64) -> Started {
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
            if let Some(old) = verdict.refused_layout {
                started.refused = Some(Error::LayoutChanged { old, new: *layout });
                started.shared.refused_layout = Some(old);
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
    shared.refused_layout.unwrap_or(*layout)
}

/// The mark to leave on disk at a clean stop, if it should change (see [`lease::final_mark`]).
/// None while a layout change is refused: the state word then holds the mark in the new layout's
/// ticks, not a last issued id, and the file must keep the mark as the old layout left it.
pub fn at_clean_stop(shared: &SharedState, layout: &Layout) -> Option<i64> {
    if shared.refused_layout.is_some() {
        return None;
    }
    lease::final_mark(shared, layout)
}

/// A lease record replayed from the WAL: the mark rises (never falls); returns the mark to make
/// durable at once, if it rose.
pub fn replay(shared: &SharedState, layout: &Layout, lease: &LeaseRecord) -> Option<i64> {
    let ms = lease.mark_unix_ms;
    shared.raise_to_mark(layout.tick_of_mark(ms), ms, layout.sequence_bits()).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::EPOCH_2025;
    use crate::mark_file::LayoutRecord;

    fn facts<'a>(layout: &'a Layout, accepted: &'a str) -> Facts<'a> {
        Facts { layout, machine_id: Some(3), system_identifier: 1, accepted_layout: accepted }
    }

    fn found(layout: &Layout, ms: i64) -> Result<Option<MarkRecord>, String> {
        Ok(Some(MarkRecord {
            mark_unix_ms: ms,
            machine_id: Some(3),
            layout: Some(LayoutRecord::from(layout)),
            system_identifier: Some(1),
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
        assert!(at_clean_stop(&a.shared, &new).is_some());
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
    fn an_unreadable_mark_refuses() {
        let l = Layout::new(EPOCH_2025, 1, 10, 12).unwrap();
        let s = start(Err("damaged".into()), &facts(&l, ""), EPOCH_2025);
        assert_eq!(s.refused, Some(Error::MarkUnreadable));
        assert!(s.shared.mark.unreadable.load(Relaxed));
    }
}
