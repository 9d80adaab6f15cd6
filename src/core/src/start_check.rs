//! What the mark on disk says about this server at start: a data directory copied from another
//! cluster, a machine id changed, or a layout changed since the mark was written. Pure: the shell
//! reads the file and the server's facts, logs the notes and refuses generation if told to.

use crate::layout::Layout;
use crate::mark_file::MarkRecord;

/// The server as it starts.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    pub layout: &'a Layout,
    /// `None` when unset (nothing can be issued then anyway), or leased.
    pub machine_id: Option<i64>,
    /// The machine id is leased (`snowflake.machine_id_source = 'etcd'`): held by nobody until the
    /// lease is claimed.
    pub leased: bool,
    pub system_identifier: u64,
    /// Whether the machine id, set by hand, is reserved in an etcd id space, and what this server
    /// recorded of that reservation.
    pub reservation: Reservation,
    /// snowflake.accept_layout_change: the old layout, as [`Layout::describe`] says it, when a
    /// change of layout is deliberate.
    pub accepted_layout: &'a str,
}

/// A machine id set by hand, reserved in an etcd id space (etcd's settings beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// None to make: no id space beside the machine id (or it is leased, or a pod index).
    None,
    /// This server has no record of its reservation of this id confirmed: no id is issued under
    /// it until it is.
    Awaiting,
    /// Its record says it saw this id's reservation confirmed (this data directory on this host,
    /// this id and id space), and took every tick up to `taken_ms` as used then (-1: none).
    Confirmed { taken_ms: i64 },
}

/// What to do at start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The layout the mark was written under, when it differs from this server's and the change
    /// was not accepted: generation refuses until it is.
    pub refused_layout: Option<Layout>,
    /// Lines for the server log.
    pub notes: Vec<String>,
    /// The old layout of a change of layout accepted by `snowflake.accept_layout_change`.
    pub accepted_layout: Option<Layout>,
    /// An accepted change of layout after which new ids are not all above the old layout's:
    /// (the first id the new layout can issue above the mark, the last the old one could have
    /// issued under it). The shell says so in a WARNING; the change stands, as accepted.
    pub accepted_below: Option<(i64, i64)>,
}

pub fn assess(found: &MarkRecord, facts: &Facts) -> Verdict {
    let mut verdict = Verdict::default();
    match (found.machine_id, found.leased_from.as_deref(), facts.machine_id) {
        // A hand-set (or pod-index) id on a data directory whose machine id was leased.
        (Some(old), Some(space), Some(new)) => verdict.notes.push(format!(
            "pg_snowflake: the machine id is {new}; the high-water mark was written while the machine id was leased from etcd (id space {space}){}. Ids continue above the mark.",
            if old >= 0 { format!(", machine id {old} held last") } else { ", none held then".into() }
        )),
        // (A leased server's file of 0.2.0's betas says -1, and no id space.)
        (Some(-1), None, Some(new)) => verdict.notes.push(format!(
            "pg_snowflake: the machine id is {new}; the high-water mark was written while the machine id was leased from etcd (a file of 0.2.0's betas: which id, it does not say). Ids continue above the mark."
        )),
        (Some(old), None, Some(new)) if old != new => verdict.notes.push(format!(
            "pg_snowflake: the machine id is {new}; the high-water mark was written under machine id {old}. Ids continue above the mark."
        )),
        // A server moved from a machine id set by hand to a leased one (a fleet moved to etcd).
        (Some(old), None, None) if facts.leased && old >= 0 => verdict.notes.push(format!(
            "pg_snowflake: the machine id is leased from etcd now; the high-water mark was written under machine id {old}, set by hand. Ids continue above the mark, under the id the worker claims (the id {old} if this server reserved it while set by hand)."
        )),
        _ => {}
    }
    if let Some(theirs) = found.system_identifier {
        if theirs != facts.system_identifier {
            verdict.notes.push(format!(
                "pg_snowflake: the high-water mark file was written by another cluster (system identifier {theirs}; this cluster's is {}): a copied data directory, a pg_upgrade or a restored file. The mark still counts: ids start above it. A copy that runs as a primary beside the original must have its own snowflake.machine_id.",
                facts.system_identifier
            ));
        }
    }
    // A recorded layout that no longer parses is a layout that differs from this server's.
    let old = found.layout.map(|r| r.layout().map_err(|_| r));
    match old {
        Some(Ok(old)) if old != *facts.layout => {
            if facts.accepted_layout.trim() == old.describe() {
                verdict.accepted_layout = Some(old);
                verdict.notes.push(format!(
                    "pg_snowflake: the layout changed from {} to {}, accepted by snowflake.accept_layout_change. The next mark records the new layout.",
                    old.describe(),
                    facts.layout.describe()
                ));
                let machine_id = facts.machine_id.unwrap_or(0);
                let (first_new, last_old) =
                    first_and_last(found.mark_unix_ms, &old, found.machine_id.unwrap_or(machine_id), facts.layout, machine_id);
                if first_new <= last_old {
                    verdict.accepted_below = Some((first_new, last_old));
                }
            } else {
                verdict.refused_layout = Some(old);
            }
        }
        Some(Err(record)) => verdict.notes.push(format!(
            "pg_snowflake: the high-water mark records a layout that is no longer valid ({record:?}); ignored, the mark still counts."
        )),
        _ => {}
    }
    verdict
}

/// Across a change of layout at the mark `mark_ms`: the smallest id the new layout issues above
/// it, and the largest the old layout could have issued at or below it.
fn first_and_last(mark_ms: i64, old: &Layout, old_machine: i64, new: &Layout, new_machine: i64) -> (i64, i64) {
    let old_machine = old_machine.clamp(0, old.max_machine_id());
    let last_old = old.compose(old.tick_of_mark(mark_ms), old_machine, old.max_sequence());
    let first_tick = (new.tick_of_mark(mark_ms) + 1).min(new.max_tick());
    let first_new = new.compose(first_tick, new_machine.clamp(0, new.max_machine_id()), 0);
    (first_new, last_old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::{seed_layout, EPOCH_2025};

    fn record(machine_id: i64, layout: &Layout, system_identifier: u64) -> MarkRecord {
        MarkRecord {
            mark_unix_ms: EPOCH_2025 + 1000,
            machine_id: Some(machine_id),
            layout: Some(layout.into()),
            system_identifier: Some(system_identifier),
            leased_from: None,
        }
    }

    fn facts(layout: &Layout, machine_id: i64, accepted: &'static str) -> Facts<'static> {
        Facts {
            leased: false,
            layout: Box::leak(Box::new(*layout)),
            machine_id: Some(machine_id),
            system_identifier: 42,
            reservation: Reservation::None,
            accepted_layout: accepted,
        }
    }

    #[test]
    fn the_same_server_says_nothing() {
        let l = seed_layout(0);
        assert_eq!(assess(&record(7, &l, 42), &facts(&l, 7, "")), Verdict::default());
        let v1 =
            MarkRecord { mark_unix_ms: 5, machine_id: None, layout: None, system_identifier: None, leased_from: None };
        assert_eq!(assess(&v1, &facts(&l, 7, "")), Verdict::default(), "a version 1 file says nothing to compare");
    }

    #[test]
    fn another_cluster_and_another_machine_id_are_logged_not_refused() {
        let l = seed_layout(0);
        let v = assess(&record(7, &l, 99), &facts(&l, 8, ""));
        assert_eq!(v.refused_layout, None);
        assert_eq!(v.notes.len(), 2);
        assert!(v.notes[0].contains("machine id is 8") && v.notes[0].contains("machine id 7"), "{}", v.notes[0]);
        assert!(v.notes[1].contains("system identifier 99") && v.notes[1].contains("is 42"), "{}", v.notes[1]);
        assert!(v.notes[1].contains("must have its own snowflake.machine_id"));
    }

    #[test]
    fn a_server_moved_from_a_hand_set_id_to_etcd_is_logged() {
        let l = seed_layout(0);
        let leased = Facts { leased: true, machine_id: None, ..facts(&l, 0, "") };
        let v = assess(&record(7, &l, 42), &leased);
        assert_eq!(v.notes.len(), 1);
        assert!(
            v.notes[0].contains("leased from etcd now") && v.notes[0].contains("machine id 7, set by hand"),
            "{}",
            v.notes[0]
        );
        assert_eq!(assess(&record(-1, &l, 42), &leased), Verdict::default(), "a leased server's own file says nothing");
        let own = MarkRecord { leased_from: Some("/p".into()), ..record(3, &l, 42) };
        assert_eq!(assess(&own, &leased), Verdict::default(), "nor one that names the id it held");
    }

    #[test]
    fn a_hand_set_server_on_a_once_leased_data_directory_names_the_id_held() {
        let l = seed_layout(0);
        let leased = MarkRecord { leased_from: Some("/pg_snowflake/prod".into()), ..record(3, &l, 42) };
        let v = assess(&leased, &facts(&l, 7, ""));
        assert_eq!(
            v.notes,
            ["pg_snowflake: the machine id is 7; the high-water mark was written while the machine id was leased from etcd (id space /pg_snowflake/prod), machine id 3 held last. Ids continue above the mark."]
        );
        let none = MarkRecord { machine_id: Some(-1), ..leased };
        assert!(assess(&none, &facts(&l, 7, "")).notes[0].contains("(id space /pg_snowflake/prod), none held then."));
        let beta = assess(&record(-1, &l, 42), &facts(&l, 7, ""));
        assert!(beta.notes[0].contains("leased from etcd (a file of 0.2.0's betas: which id, it does not say)"));
        assert!(!beta.notes[0].contains("machine id -1"), "{}", beta.notes[0]);
    }

    #[test]
    fn a_changed_layout_is_refused_until_accepted_by_its_old_description() {
        let (old, new) = (seed_layout(0), seed_layout(1));
        let refused = assess(&record(7, &old, 42), &facts(&new, 7, ""));
        assert_eq!(refused.refused_layout, Some(old));
        let wrong = assess(&record(7, &old, 42), &facts(&new, 7, "on"));
        assert_eq!(wrong.refused_layout, Some(old), "only the old layout's own description accepts it");
        let text: &'static str = Box::leak(old.describe().into_boxed_str());
        let accepted = assess(&record(7, &old, 42), &facts(&new, 7, text));
        assert_eq!(accepted.refused_layout, None);
        assert!(accepted.notes[0].contains("accepted by snowflake.accept_layout_change"));
        let epoch_moved = Layout::new(EPOCH_2025 + 1, 1, 10, 12).unwrap();
        assert_eq!(assess(&record(7, &old, 42), &facts(&epoch_moved, 7, "")).refused_layout, Some(old));
    }
}
