//! Lines of history of the lifecycle simulation (tests only), and their promise: on each line (a
//! server, and the servers that continue it: a promoted standby, a copy), every id of a layout is
//! above every id of that layout issued before; an id of another layout than the last one issued
//! needs a change accepted by `snowflake.accept_layout_change`, and is above every id of the old
//! layout unless that acceptance said it could not be. A standby promoted while it lagged
//! continues only what its data directory could know (see [`Lineage::known_to`]).

use crate::lifecycle_sim_node::{layout, LAYOUTS};

/// One line of history: the largest id issued of each layout, the layout issued last, the
/// changes of layout accepted at a start (from, to, whether the start said new ids go below), and
/// every id issued on it (after the first `n` of the line it was copied from, if any), for the
/// servers that continue only what they know of it.
#[derive(Clone, Default)]
pub(crate) struct Lineage {
    pub(crate) floor: [i64; LAYOUTS as usize],
    pub(crate) last_layout: Option<u8>,
    pub(crate) accepted: Vec<(u8, u8, bool)>,
    /// (layout, id), in the order issued.
    pub(crate) issued: Vec<(u8, i64)>,
    pub(crate) from: Option<(usize, usize)>,
}

impl Lineage {
    /// The line a copy of a server on line `line` continues: all of it, so far.
    pub(crate) fn fork(lines: &[Lineage], line: usize) -> Lineage {
        let l = &lines[line];
        Lineage { issued: vec![], from: Some((line, l.issued.len())), accepted: l.accepted.clone(), ..*l }
    }

    /// The first `n` ids issued on line `line`, with those of the lines it continues.
    pub(crate) fn issued(lines: &[Lineage], line: usize, n: usize, into: &mut Vec<(u8, i64)>) {
        if let Some((from, k)) = lines[line].from {
            Lineage::issued(lines, from, k, into);
        }
        into.extend_from_slice(&lines[line].issued[..n]);
    }

    /// What a server that knows the mark `mark_ms` (none: `None`) continues of line `line`: the
    /// ids issued at or below that mark's tick (the mark promises no id above it), whatever else
    /// was issued.
    pub(crate) fn known_to(lines: &[Lineage], line: usize, mark_ms: Option<i64>) -> Lineage {
        let mut issued = vec![];
        Lineage::issued(lines, line, lines[line].issued.len(), &mut issued);
        issued.retain(|&(at, id)| {
            let l = layout(at);
            mark_ms.is_some_and(|ms| id >> (l.machine_bits() + l.sequence_bits()) <= l.tick_of_mark(ms))
        });
        let mut known = Lineage { accepted: lines[line].accepted.clone(), ..Lineage::default() };
        for &(at, id) in &issued {
            known.floor[at as usize] = known.floor[at as usize].max(id);
        }
        known.last_layout = issued.last().map(|&(at, _)| at);
        known.issued = issued;
        known
    }

    /// An id issued on this line by server `node`, of layout `at` (`leased`: under a machine id
    /// leased from etcd): `Err` names the promise it breaks. `delayed`: the id of a word its
    /// backend took before it stalled (`Generator::take`) and confirmed after: it was above every
    /// earlier id when it was taken (the compare-and-swap's order), and ids taken meanwhile are
    /// above it, so it is held to the rest only.
    pub(crate) fn issue(&mut self, node: usize, at: u8, id: i64, leased: bool, delayed: bool) -> Result<(), String> {
        let l = layout(at);
        let floor = if delayed { i64::MIN } else { self.floor[at as usize] };
        // A leased server's ids are ordered on its line by its state word, the machine field
        // aside: a claim of another id can come within the tick of the last id under the one
        // released or lost (the etcd space orders each machine id's ids: `lifecycle_sim_etcd`).
        let state = |id: i64| if leased { id & !(l.max_machine_id() << l.sequence_bits()) } else { id };
        if state(id) <= state(floor) {
            return Err(format!(
                "server {node} issued {id}, not above {floor} issued before under the same layout ({})",
                l.describe()
            ));
        }
        if let Some(last) = self.last_layout.filter(|&last| last != at) {
            match accepted_path(&self.accepted, last, at) {
                None => {
                    return Err(format!(
                        "server {node} issued {id} under {} after ids of {}, a change nobody accepted",
                        l.describe(),
                        layout(last).describe()
                    ))
                }
                Some(false) if id <= self.floor[last as usize] => {
                    return Err(format!(
                        "server {node} issued {id} under an accepted layout, not above the old layout's ids ({}), and the acceptance did not say so",
                        self.floor[last as usize]
                    ))
                }
                Some(_) => {}
            }
        }
        self.floor[at as usize] = self.floor[at as usize].max(id);
        self.last_layout = Some(at);
        self.issued.push((at, id));
        Ok(())
    }
}

/// Whether accepted changes lead from layout `from` to `to` (a crash can come between a change
/// accepted and its first id, and the next change is accepted from the layout the file then
/// records): Some(whether any of them said new ids go below the old).
pub(crate) fn accepted_path(accepted: &[(u8, u8, bool)], from: u8, to: u8) -> Option<bool> {
    let mut reached: Vec<(u8, bool)> = vec![(from, false)];
    let mut at = 0;
    while at < reached.len() {
        let (l, below) = reached[at];
        for &(a, b, b_below) in accepted {
            if a == l && !reached.iter().any(|r| r.0 == b) {
                reached.push((b, below || b_below));
            }
        }
        at += 1;
    }
    reached.into_iter().find(|r| r.0 == to).map(|r| r.1)
}
