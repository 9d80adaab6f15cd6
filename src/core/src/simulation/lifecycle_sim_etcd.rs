//! The etcd part of the lifecycle simulation (tests only): a leased server's side of the claim
//! protocol as the shell's worker runs it (`claim::Claimer`: `step` at the server's clock, `release`
//! at a clean stop or when the postmaster is gone, `resume` when the worker starts again), over the
//! model of etcd (`etcd_model`) with the faults a real etcd and network add to its calls (armed for
//! the nth call of a kind, of any server), and the promises of the id space, checked at every id,
//! at every claim and after every step of the world.
//!
//! The promises of the space (one etcd prefix, whose machine ids the protocol hands out):
//! - no id is issued twice in it, whichever servers issued them;
//! - every server holding a machine id of it is of the space's layout (its first claim's), and
//!   every id of it reads, under that layout, as the machine id and the time it was issued under:
//!   ids of another layout could equal its ids;
//! - per machine id, every id issued under a claim (one lease of one server) is above every id
//!   issued under an earlier claim of that id, and below every id of a later one, whenever each
//!   was issued: a server stopped past its lease, or whose clock was stepped back, may issue late,
//!   but only below what its successor issues (the mark it recorded covers them);
//! - every claim leaves its server unable to issue again an id issued under that machine id
//!   before, whatever its clock reads: its state word at or above them (the recorded mark taken as
//!   used). The promise above, for every clock rather than the clocks a history drew;
//! - a server issues under a machine id only under a claim of its own; whenever its grant is in
//!   effect (its clock before the deadline: its backends may issue under it), and when it issues,
//!   etcd holds that claim for its lease; but on a clock stepped back since the grant was
//!   published, which moves the local deadline later in real time (the mark still covers its ids);
//!   a backend that read its clock before its server was stopped is held to the moment it read it;
//! - the mark recorded in etcd for a machine id is never below the deadline of a grant of it
//!   published on any running server, nor below the tick of any id issued under it.
//!
//! Liveness, once a history settles, is the world's (`World::settle`).
//!
//! The ids of servers whose machine id is set by hand are no part of the space: an operator gives
//! those (the world gives a copy a retired server's machine id, as an operator may), and the world
//! holds them to their lines of history only. Checking them against the space's ids would find
//! equal ids that no deployment makes: an id space and machine ids set by hand serve different
//! tables. But where they reserve their ids in the space (a fleet moved to etcd): there their ids
//! are the space's, each confirmation of a reservation a holding of its machine id as a claim is,
//! and none is issued while etcd holds a leasing server's claim of it (issue 56, item 4).
//!
//! etcd restored from a snapshot (issue 56, item 5) loses the claims and marks written since: until
//! the recovery, the promises of etcd's keys are not asked (they are what a restore breaks), those
//! of the ids are, and servers that saw etcd past the snapshot must refuse it.

use crate::claim_status::Trouble;
use crate::etcd::claim::{
    ClaimError, Claimer, Etcd, Guard, Holder, Kv, MarkRecord, Put, Seen, Space, SpaceLayout, Step, Switches, Txn,
};
use crate::etcd::etcd_record::{EtcdRecord, ReservedRecord};
use crate::generator::GrantCheck;
use crate::layout::Layout;
use crate::simulation::etcd_model::{EtcdModel, Fault, Snapshot};
use crate::state::{grant, SharedState};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::Ordering::Relaxed;

/// The id space every leased server of the world shares.
pub(crate) const PREFIX: &str = "/pg_snowflake/sim";
/// Its leases' TTL: renewed every 5 s, a local deadline 12 s after a renewal is sent.
pub(crate) const TTL_S: i64 = 15;

/// The space as a server of `layout` sees it (the shell sizes it by the server's machine bits).
pub(crate) fn space(layout: &Layout) -> Space {
    Space { prefix: PREFIX.into(), ttl_s: TTL_S, size: 1 << layout.machine_bits() }
}

/// The mechanisms of the claim protocol and of the gateway, all on but in negative controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Controls {
    pub(crate) switches: Switches,
    /// etcd's error answers to reads misread as empty answers (see `EtcdModel::misread_errors`).
    pub(crate) misread_errors: bool,
    /// How the generator checks its grant: `Generation` but in the negative controls of issue 56
    /// (`Generator::with_grant_check`).
    pub(crate) grant_check: GrantCheck,
}

impl Controls {
    pub(crate) const ALL_ON: Controls =
        Controls { switches: Switches::ALL_ON, misread_errors: false, grant_check: GrantCheck::Generation };
}

/// Why a leased server's next claim is counted: it starts a server that was promoted, or a copy
/// of a leased primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Becomes {
    Promoted,
    Copied,
}

/// A leased server's side of the protocol: its worker's claimer while the worker runs (none while
/// the server is down or in recovery: the worker starts at the end of recovery), and its runs.
pub(crate) struct Lease {
    pub(crate) claimer: Option<Claimer>,
    node: usize,
    /// The postmaster's run: the same across a crash-restart (shared memory re-initialised by the
    /// same postmaster), a new one at every other start.
    run: u32,
    new_run: bool,
    /// Cut off from etcd (a partition), whatever else reaches it.
    pub(crate) cut: bool,
    /// A claim was refused because an earlier run of this server still held its id, and none
    /// succeeded since.
    waited_own: bool,
    pub(crate) becomes: Option<Becomes>,
    /// The clock's offset when the grant was last published: a clock stepped back since moves
    /// the local deadline later in real time (see the module's promises).
    pub(crate) published_offset_ms: i64,
}

impl Lease {
    pub(crate) fn new(node: usize) -> Lease {
        Lease {
            claimer: None,
            node,
            run: 0,
            new_run: true,
            cut: false,
            waited_own: false,
            becomes: None,
            published_offset_ms: 0,
        }
    }

    /// Who this server is, with the system identifier of the data directory it runs now (a copy
    /// keeps its original's) and its host (a copy's own).
    fn holder(&self, system_identifier: u64) -> Holder {
        holder(self.node, system_identifier, self.run)
    }

    /// The server starts: its postmaster is the one before if it re-initialised shared memory
    /// after a crash, a new one otherwise.
    pub(crate) fn server_starts(&mut self) {
        if std::mem::take(&mut self.new_run) {
            self.run += 1;
        }
    }

    /// The server is down, its worker with it (whatever it held stays in etcd until its lease
    /// expires); `crash_restart`: its postmaster starts it again, else the next start is another's.
    pub(crate) fn server_down(&mut self, crash_restart: bool) {
        self.claimer = None;
        self.new_run |= !crash_restart;
    }

    /// The data directory was replaced (a copy, a base backup, a rewind): its next start is a
    /// new server's.
    pub(crate) fn replaced(&mut self, becomes: Option<Becomes>) {
        self.new_run = true;
        self.becomes = becomes;
    }

    /// The worker starts (at the end of recovery, or again after it ended): its claimer takes
    /// over what shared memory holds, and what the data directory's record says it saw of etcd,
    /// as the shell's does.
    pub(crate) fn start_worker(
        &mut self,
        shared: &SharedState,
        layout: &Layout,
        system_identifier: u64,
        record: Option<&EtcdRecord>,
        c: &Controls,
    ) {
        let mut claimer = Claimer::new(space(layout), self.holder(system_identifier), *layout, c.switches);
        claimer.resume(shared);
        claimer.seen = record.filter(|r| r.prefix == PREFIX).and_then(EtcdRecord::seen);
        self.claimer = Some(claimer);
    }

    /// What the worker saw of etcd, written to the data directory's record as the shell does
    /// after each step (when it changed).
    pub(crate) fn keep_seen(&self, record: &mut Option<EtcdRecord>) {
        let Some(seen) = self.claimer.as_ref().and_then(|c| c.seen) else { return };
        let r = record.get_or_insert_with(|| EtcdRecord::new(PREFIX));
        if r.prefix != PREFIX {
            *r = EtcdRecord::new(PREFIX);
        }
        if r.seen() != Some(seen) {
            r.set_seen(seen);
        }
    }
}

/// Server `node` with the system identifier of the data directory it runs, in its postmaster's
/// run `run`.
pub(crate) fn holder(node: usize, system_identifier: u64, run: u32) -> Holder {
    Holder {
        system_identifier: format!("74{system_identifier:017}"),
        host: format!("db{node}"),
        port: 5432,
        data_directory: "/var/lib/postgresql/17/main".into(),
        postmaster: format!("{}@{}", 1000 * (node + 1) as u32 + run, 1_750_000_000_000_000 + run as u64),
    }
}

/// A call of etcd's API, as a fault is armed for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    Grant,
    KeepAlive,
    Revoke,
    Range,
    Txn,
}

/// The faults armed, one for each kind of call at most: the `nth` call of that kind, from when it
/// was armed and of any server, meets it.
type Armed = [Option<(Fault, u8)>; 5];

/// The calls of one client of the model, which may meet the faults armed.
struct Calls<'a> {
    etcd: &'a mut EtcdModel,
    cut: bool,
    armed: &'a mut Armed,
    /// The header of the last answer to a range or a transaction.
    seen: Option<Seen>,
}

impl Calls<'_> {
    fn call<T>(&mut self, kind: Call, call: impl FnOnce(&mut dyn Etcd) -> Result<T, String>) -> Result<T, String> {
        let armed = &mut self.armed[kind as usize];
        if let Some((fault, n)) = armed.as_mut() {
            *n -= 1;
            if *n == 0 {
                self.etcd.fault = Some(*fault);
                *armed = None;
            }
        }
        let mut client = self.etcd.client(self.cut);
        let result = call(&mut client);
        self.seen = client.seen().or(self.seen);
        // A call that never reached etcd (cut off, etcd down) met no fault: none is left over.
        self.etcd.fault = None;
        result
    }
}

impl Etcd for Calls<'_> {
    fn grant(&mut self, ttl_s: i64) -> Result<i64, String> {
        self.call(Call::Grant, |e| e.grant(ttl_s))
    }
    fn keep_alive(&mut self, lease: i64) -> Result<i64, String> {
        self.call(Call::KeepAlive, |e| e.keep_alive(lease))
    }
    fn revoke(&mut self, lease: i64) -> Result<(), String> {
        self.call(Call::Revoke, |e| e.revoke(lease))
    }
    fn range(&mut self, prefix: &str) -> Result<Vec<Kv>, String> {
        self.call(Call::Range, |e| e.range(prefix))
    }
    fn txn_and_delete(&mut self, guards: &[Guard], puts: &[Put], deletes: &[String]) -> Result<Txn, String> {
        self.call(Call::Txn, |e| e.txn_and_delete(guards, puts, deletes))
    }
    fn seen(&self) -> Option<Seen> {
        self.seen
    }
}

/// One claim of a machine id (one lease of one server), and the ids issued under it.
struct Holding {
    lease: i64,
    node: usize,
    low: i64,
    high: i64,
}

/// What the etcd part of the histories reached, summed over a search: each must be reached by the
/// histories a CI run does.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EtcdReached {
    /// Ids issued by leased servers, and those a backend issued on a clock read before its server
    /// was paused.
    pub(crate) leased_ids: u64,
    pub(crate) ids_after_pause: u64,
    pub(crate) claims: u64,
    pub(crate) renewals: u64,
    pub(crate) leases_lost: u64,
    /// Claims that took back the claim of the same run after a crash-restart, and claims after an
    /// earlier run's claim was waited out.
    pub(crate) crash_takeovers: u64,
    pub(crate) own_earlier_waited: u64,
    /// Claims of an id whose mark the same run recorded (a crash-restart, a lost lease, a worker
    /// restarted): only the mark the run inherited taken as used (issue 57).
    pub(crate) own_run_marks: u64,
    /// Requests applied after their client gave up, answers lost, error answers, leader changes,
    /// auth tokens renewed.
    pub(crate) held_applied: u64,
    pub(crate) answers_lost: u64,
    pub(crate) error_answers: u64,
    pub(crate) leader_changes: u64,
    pub(crate) tokens_renewed: u64,
    /// First claims of promoted leased standbys, and of copies of leased primaries.
    pub(crate) leased_promotions: u64,
    pub(crate) leased_copies: u64,
    /// Leased primaries found holding an id after a history settled.
    pub(crate) held_after_settling: u64,
    /// Hand-set servers' ids reserved in the space, and reservations refused (the id held by a
    /// leasing server, or etcd unreachable).
    pub(crate) reservations: u64,
    pub(crate) reservations_refused: u64,
    /// Ids of hand-set servers that reserve, and calls they refused while a leasing server held
    /// their id or another server reserved it; hand-set servers that issued after such a
    /// conflict was resolved.
    pub(crate) hand_set_ids: u64,
    pub(crate) hand_set_refused: u64,
    pub(crate) conflicts_resolved: u64,
    /// Restores of etcd from a snapshot, and claims or renewals refused for one.
    pub(crate) restores: u64,
    pub(crate) restores_refused: u64,
}

impl EtcdReached {
    pub(crate) fn add(&mut self, o: &EtcdReached) {
        let pairs = [
            (&mut self.leased_ids, o.leased_ids),
            (&mut self.ids_after_pause, o.ids_after_pause),
            (&mut self.claims, o.claims),
            (&mut self.renewals, o.renewals),
            (&mut self.leases_lost, o.leases_lost),
            (&mut self.crash_takeovers, o.crash_takeovers),
            (&mut self.own_earlier_waited, o.own_earlier_waited),
            (&mut self.own_run_marks, o.own_run_marks),
            (&mut self.held_applied, o.held_applied),
            (&mut self.answers_lost, o.answers_lost),
            (&mut self.error_answers, o.error_answers),
            (&mut self.leader_changes, o.leader_changes),
            (&mut self.tokens_renewed, o.tokens_renewed),
            (&mut self.leased_promotions, o.leased_promotions),
            (&mut self.leased_copies, o.leased_copies),
            (&mut self.held_after_settling, o.held_after_settling),
            (&mut self.reservations, o.reservations),
            (&mut self.reservations_refused, o.reservations_refused),
            (&mut self.hand_set_ids, o.hand_set_ids),
            (&mut self.hand_set_refused, o.hand_set_refused),
            (&mut self.conflicts_resolved, o.conflicts_resolved),
            (&mut self.restores, o.restores),
            (&mut self.restores_refused, o.restores_refused),
        ];
        for (mine, theirs) in pairs {
            *mine += theirs;
        }
    }

    /// What a CI run must reach, `Err` naming the first it did not.
    pub(crate) fn all_reached(&self) -> Result<(), &'static str> {
        let r = self;
        for (reached, what) in [
            (r.leased_ids, "ids of leased servers"),
            (r.ids_after_pause, "ids issued on a clock read before a pause"),
            (r.claims, "claims"),
            (r.renewals, "renewals"),
            (r.leases_lost, "leases lost"),
            (r.crash_takeovers, "claims taken back after a crash-restart"),
            (r.own_earlier_waited, "earlier runs' claims waited out"),
            (r.own_run_marks, "claims of an id whose mark the same run recorded"),
            (r.held_applied, "requests applied late"),
            (r.answers_lost, "answers lost"),
            (r.error_answers, "error answers"),
            (r.leader_changes, "leader changes"),
            (r.tokens_renewed, "auth tokens renewed"),
            (r.leased_promotions, "leased standbys promoted and claiming"),
            (r.leased_copies, "copies of leased primaries claiming"),
            (r.held_after_settling, "leased primaries holding an id after settling"),
            (r.reservations, "hand-set ids reserved"),
            (r.reservations_refused, "reservations refused"),
            (r.hand_set_ids, "ids of hand-set servers that reserve"),
            (r.hand_set_refused, "calls of hand-set servers refused for a conflict"),
            (r.conflicts_resolved, "hand-set servers issuing after a conflict was resolved"),
            (r.restores, "restores of etcd from a snapshot"),
            (r.restores_refused, "claims and renewals refused for a restore"),
        ] {
            if reached == 0 {
                return Err(what);
            }
        }
        Ok(())
    }
}

/// The etcd of the world, the faults armed, and what was issued in its id space.
pub(crate) struct IdSpace {
    pub(crate) etcd: EtcdModel,
    pub(crate) controls: Controls,
    armed: Armed,
    /// Every id issued in the space.
    issued: HashSet<i64>,
    /// Per machine id, its claims in the order they were made.
    holdings: BTreeMap<i64, Vec<Holding>>,
    /// Per machine id, the start of the tick of the highest id issued under it (ms).
    highest_ms: BTreeMap<i64, i64>,
    /// The layout of the space: its first claim's.
    layout: Option<Layout>,
    /// The marks recorded, as last read: machine id -> (revision, mark).
    marks: BTreeMap<i64, (i64, i64)>,
    /// The last snapshot of etcd taken (`etcdctl snapshot save`), and whether etcd was restored
    /// from one and the recovery (the marks raised, the records removed) is still to come.
    snapshot: Option<Snapshot>,
    pub(crate) restored: bool,
    /// The revision of the snapshot etcd was restored from, until the recovery; after it, the
    /// leased servers that have not stepped since (their grants may still name claims the restore
    /// forgot): `restored` until none is left.
    pub(crate) restored_from: Option<i64>,
    pub(crate) unstepped: BTreeSet<usize>,
    /// Holdings of hand-set servers opened so far (their pseudo-lease: minus this count).
    hand_holdings: i64,
    pub(crate) reached: EtcdReached,
}

impl IdSpace {
    pub(crate) fn new(now_ms: i64, controls: Controls) -> IdSpace {
        let mut etcd = EtcdModel::at(now_ms);
        etcd.misread_errors = controls.misread_errors;
        IdSpace {
            etcd,
            controls,
            armed: [None; 5],
            issued: HashSet::new(),
            holdings: BTreeMap::new(),
            highest_ms: BTreeMap::new(),
            layout: None,
            marks: BTreeMap::new(),
            snapshot: None,
            restored: false,
            restored_from: None,
            unstepped: BTreeSet::new(),
            hand_holdings: 0,
            reached: EtcdReached::default(),
        }
    }

    /// The `nth` call of kind `call` from now on, of any server, meets `fault`.
    pub(crate) fn arm(&mut self, fault: Fault, call: Call, nth: u8) {
        self.armed[call as usize] = Some((fault, nth));
    }

    /// A leader change: every lease lives a whole TTL from now at least.
    pub(crate) fn leader_change(&mut self) {
        self.etcd.leader_change();
        self.reached.leader_changes += 1;
    }

    /// Everything that kept etcd from its clients ends: it is up, no fault is armed, and every
    /// request held on the way arrives.
    pub(crate) fn heal(&mut self) {
        self.etcd.down = false;
        self.armed = [None; 5];
        while self.etcd.apply_held() {}
    }

    /// The faults met, from the model's counters.
    pub(crate) fn count_faults(&mut self) {
        let [errors, lost, held, tokens] = self.etcd.faults_done;
        let r = &mut self.reached;
        (r.error_answers, r.answers_lost, r.held_applied, r.tokens_renewed) = (errors, lost, held, tokens);
    }

    /// One step of a leased server's worker at its clock's `now_ms` (`offset_ms`: its offset),
    /// etcd expiring leases up to `late_ms` late meanwhile. A claim must leave the server unable
    /// to issue, under the id it claimed, an id at or below one issued under it before, whatever
    /// its clock reads: its state word at or above them (the recorded mark taken as used).
    pub(crate) fn step(
        &mut self,
        lease: &mut Lease,
        shared: &SharedState,
        now_ms: i64,
        offset_ms: i64,
        late_ms: i64,
    ) -> Result<(), String> {
        let Some(claimer) = lease.claimer.as_mut() else { return Ok(()) };
        self.etcd.late_ms = late_ms;
        let layout = claimer.layout;
        let mut calls = Calls { etcd: &mut self.etcd, cut: lease.cut, armed: &mut self.armed, seen: None };
        let result = claimer.step(&mut calls, shared, now_ms);
        if !matches!(result, Ok(Step::Idle)) {
            self.stepped(lease.node);
        }
        let r = &mut self.reached;
        match result {
            Ok(Step::Claimed(held, notes)) => {
                r.claims += 1;
                r.crash_takeovers += notes.iter().any(|n| n.contains("before its crash-restart")) as u64;
                r.own_run_marks += notes.iter().any(|n| n.contains("is this run's own")) as u64;
                r.own_earlier_waited += std::mem::take(&mut lease.waited_own) as u64;
                match lease.becomes.take() {
                    Some(Becomes::Promoted) => r.leased_promotions += 1,
                    Some(Becomes::Copied) => r.leased_copies += 1,
                    None => {}
                }
                lease.published_offset_ms = offset_ms;
                let space = *self.layout.get_or_insert(layout);
                if space != layout {
                    return Err(format!(
                        "server {} ({}) claimed machine id {} in an id space of {}: its ids and the space's can be equal",
                        lease.node,
                        layout.describe(),
                        held.id,
                        space.describe()
                    ));
                }
                let holdings = self.holdings.entry(held.id).or_default();
                if let Some(high) = holdings.iter().map(|h| h.high).max().filter(|&high| high > i64::MIN) {
                    let state = shared.hot.state.load(Relaxed);
                    let s = layout.sequence_bits();
                    let (tick, sequence) = ((state >> s) as i64 - 1, (state & ((1 << s) - 1)) as i64);
                    let p = layout.decode(high).expect("an id of the layout");
                    let (high_tick, high_sequence) = (layout.tick_of_mark(p.unix_ms), p.sequence);
                    if (tick, sequence) < (high_tick, high_sequence) {
                        return Err(format!(
                            "server {} claimed machine id {} (lease {:x}) with its state word at tick {tick}, sequence {sequence}: it can issue again up to {high}, issued under it before (tick {high_tick}, sequence {high_sequence})",
                            lease.node, held.id, held.lease
                        ));
                    }
                }
                holdings.push(Holding { lease: held.lease, node: lease.node, low: i64::MAX, high: i64::MIN });
            }
            Ok(Step::Renewed(_)) => {
                r.renewals += 1;
                lease.published_offset_ms = offset_ms;
            }
            Ok(Step::Idle) => {}
            Err(ClaimError::OwnEarlierClaim { .. }) => lease.waited_own = true,
            Err(ClaimError::Lost { .. }) => r.leases_lost += 1,
            Err(ClaimError::Restored { .. }) => r.restores_refused += 1,
            Err(_) => {}
        }
        Ok(())
    }

    /// Hand-set server `node` (`system_identifier`: its data directory's) checks its reservation
    /// of its machine id in the space, as its worker does (the real `Claimer::hold_reserved`, the
    /// worker's claimer of this run), through whatever reaches etcd: its grant word held for ever
    /// once confirmed, by nobody while a leasing server holds the id or another server reserved
    /// it; a confirmation remembered in the data directory's record. Whether ids are issued now.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn hold_reserved(
        &mut self,
        reserver: &mut Option<Claimer>,
        node: usize,
        system_identifier: u64,
        layout: &Layout,
        machine_id: i64,
        shared: &SharedState,
        now_ms: i64,
        record: &mut Option<EtcdRecord>,
    ) -> bool {
        let me = holder(node, system_identifier, 0);
        let claimer =
            reserver.get_or_insert_with(|| Claimer::new(space(layout), me.clone(), *layout, self.controls.switches));
        let refused_before = shared.hot.grant.word() == grant::NOBODY && shared.claim.trouble() == Trouble::Reserved;
        let mut calls = Calls { etcd: &mut self.etcd, cut: false, armed: &mut self.armed, seen: None };
        let remember = |id, taken: Option<i64>| {
            let r = record.get_or_insert_with(|| EtcdRecord::new(PREFIX));
            if r.prefix != PREFIX {
                *r = EtcdRecord::new(PREFIX);
            }
            r.reserved = Some(ReservedRecord {
                machine_id: id,
                by: me,
                layout: layout.describe(),
                taken_ms: taken.unwrap_or(-1),
            });
        };
        match claimer.hold_reserved(&mut calls, shared, machine_id, now_ms, remember) {
            Ok(_) => {
                self.reached.reservations += 1;
                self.reached.conflicts_resolved += refused_before as u64;
            }
            Err(e) => {
                self.reached.reservations_refused += 1;
                // Refused: the record no longer lets a start issue at once (as the shell's worker).
                if matches!(e.trouble(), Trouble::Reserved | Trouble::SpaceLayout) {
                    if let Some(r) = record.as_mut() {
                        r.reserved = None;
                    }
                }
            }
        }
        shared.hot.grant.word() != grant::NOBODY
    }

    /// An id issued by hand-set server `node` that reserves its machine id, under its holding
    /// `holding` (see [`IdSpace::open_holding`]): in the space as a leased server's, no id twice,
    /// above the ids of earlier holdings of its machine id, below those of later ones; and never
    /// while etcd holds a claim of its machine id by a leasing server.
    pub(crate) fn hand_issued(
        &mut self,
        node: usize,
        id: i64,
        layout: &Layout,
        holding: i64,
        delayed: bool,
    ) -> Result<(), String> {
        let m = layout.decode(id).expect("an id of the layout").machine_id;
        self.reached.hand_set_ids += 1;
        if let Some(claim) = self.etcd.value(&format!("{PREFIX}/claim/{m}")) {
            let by: Holder = serde_json::from_str(claim).expect("a claim the protocol wrote");
            return Err(format!(
                "hand-set server {node} issued {id} under machine id {m} while etcd holds a claim of it by leasing server {}",
                by.host
            ));
        }
        self.issued(node, id, layout, holding, true, delayed)
    }

    /// A new holding of `machine_id` by hand-set server `node`: its pseudo-lease.
    pub(crate) fn open_holding(&mut self, node: usize, machine_id: i64) -> i64 {
        self.hand_holdings += 1;
        let holding = -self.hand_holdings;
        self.holdings.entry(machine_id).or_default().push(Holding {
            lease: holding,
            node,
            low: i64::MAX,
            high: i64::MIN,
        });
        holding
    }

    /// `etcdctl snapshot save`.
    pub(crate) fn snapshot(&mut self) {
        self.snapshot = Some(self.etcd.snapshot());
    }

    /// etcd restored from the last snapshot (an operator's `etcdctl snapshot restore`), without the
    /// recovery until the history settles.
    pub(crate) fn restore(&mut self) {
        let Some(snapshot) = self.snapshot.as_ref().filter(|_| self.restored_from.is_none()) else { return };
        self.etcd.restore(snapshot);
        (self.restored, self.restored_from) = (true, Some(snapshot.revision()));
        // (A restored etcd gives its revisions again, to other values: nothing read is kept.)
        self.marks.clear();
        self.reached.restores += 1;
    }

    /// A leased server's worker claimed or renewed (or tried to), or the server stopped: after a
    /// recovery from a restore, once every one has, etcd's promises hold again.
    pub(crate) fn stepped(&mut self, node: usize) {
        if self.unstepped.remove(&node) && self.unstepped.is_empty() && self.restored_from.is_none() {
            self.restored = false;
        }
    }

    /// Whether a leased server whose data directory's record is `record` may step while etcd is
    /// restored and not recovered: only if it saw a revision above the snapshot's, so that it can
    /// tell. One that did not (down since before the snapshot, a data directory that never leased)
    /// cannot, and the manual's procedure keeps such servers from claiming until the marks are
    /// raised: the world holds their workers off until then.
    pub(crate) fn may_step(&self, record: Option<&EtcdRecord>) -> bool {
        let seen = record.filter(|r| r.prefix == PREFIX).and_then(EtcdRecord::seen).map_or(-1, |s| s.revision);
        self.restored_from.is_none_or(|from| seen > from)
    }

    /// The recovery from a restore, as the manual gives it: every mark of the space raised above
    /// every id issued under its machine id (the ids issued since the snapshot among them: what the
    /// world knows, what an operator's "a minute ahead of every clock" covers), a mark written for
    /// every machine id that has none; then the records removed, which each leasing worker reads
    /// again while it is refused (`Claimer::seen`, set to none). `running`: the leased servers
    /// running now, whose next step ends the restore for them.
    pub(crate) fn recover_from_restore(&mut self, layout: &Layout, running: BTreeSet<usize>) -> bool {
        // (etcdctl needs etcd up.)
        if self.etcd.down || self.restored_from.take().is_none() {
            return false;
        }
        self.unstepped = running;
        self.restored = !self.unstepped.is_empty();
        let by = holder(99, 0, 0);
        let ahead = self.highest_ms.values().copied().max().unwrap_or(0).max(self.etcd.now_ms) + 60_000;
        // (Every id of the space in the manual's commands; here those ever claimed or issued under,
        // and those with a mark: the others were never used, and the range of every claim reads
        // every mark.)
        let prefix = format!("{PREFIX}/mark/");
        let marked: BTreeSet<i64> =
            self.etcd.entries(&prefix).filter_map(|(k, _)| k[prefix.len()..].parse().ok()).collect();
        let used: BTreeSet<i64> =
            self.holdings.keys().copied().chain(marked).filter(|m| (0..space(layout).size).contains(m)).collect();
        for m in used {
            let key = format!("{PREFIX}/mark/{m}");
            let raised = match self.etcd.value(&key).map(|v| serde_json::from_str::<MarkRecord>(v).expect("a mark")) {
                Some(mark) if mark.mark_ms >= ahead => continue,
                Some(mark) => MarkRecord { mark_ms: ahead, holder: by.clone(), ..mark },
                None => MarkRecord {
                    mark_ms: ahead,
                    layout: layout.describe(),
                    holder: by.clone(),
                    inherited_ms: None,
                    inherited_from: String::new(),
                },
            };
            let put = Put { key, value: serde_json::to_string(&raised).expect("a mark"), lease: 0 };
            self.etcd.client(false).txn(&[], &[put]).expect("etcd is up");
        }
        self.marks.clear();
        true
    }

    /// A reservation and a claim of one id never both stand in etcd: whichever came first, the
    /// other was refused (and a server moved to etcd removes its own reservation with its claim).
    /// (As the keys stand after the last call: each call expires the leases due before it acts.)
    pub(crate) fn check_reservations(&self) -> Result<(), String> {
        let reserved = format!("{PREFIX}/reserved/");
        for (key, value) in self.etcd.entries(&reserved) {
            let id = &key[reserved.len()..];
            let Some(claim) = self.etcd.value(&format!("{PREFIX}/claim/{id}")) else { continue };
            let (by, holder): (Holder, Holder) = (
                serde_json::from_str(value).expect("a reservation the protocol wrote"),
                serde_json::from_str(claim).expect("a claim the protocol wrote"),
            );
            return Err(format!(
                "machine id {id} is reserved by {} (set by hand) and claimed by {}: {}",
                by.host,
                holder.host,
                if holder.same_server(&by) {
                    "its claim left its reservation standing"
                } else {
                    "both can issue under it"
                }
            ));
        }
        Ok(())
    }

    /// The worker's release (a clean stop, the postmaster gone, the worker terminated) at the
    /// server's clock `now_ms`, through whatever reaches etcd; the lease expires by itself if not.
    pub(crate) fn release(&mut self, lease: &mut Lease, shared: &SharedState, now_ms: i64) {
        let Some(claimer) = lease.claimer.as_mut() else { return };
        let mut calls = Calls { etcd: &mut self.etcd, cut: lease.cut, armed: &mut self.armed, seen: None };
        let _ = claimer.release(&mut calls, shared, || now_ms);
    }

    /// Whether etcd holds machine id `machine_id`'s claim for `lease` now.
    pub(crate) fn held_now(&mut self, machine_id: i64, lease: i64) -> bool {
        self.etcd.held_by(&format!("{PREFIX}/claim/{machine_id}"), lease)
    }

    /// Whether a server of `layout` belongs in the space: of its first claim's layout, or of the
    /// layout it records if nothing was claimed yet (a server of another is refused by the space).
    pub(crate) fn fits(&self, layout: &Layout) -> bool {
        let recorded = self.etcd.value(&format!("{PREFIX}/layout")).map(|v| {
            let r: SpaceLayout = serde_json::from_str(v).expect("a layout the protocol recorded");
            r.layout
        });
        match (self.layout, recorded) {
            (Some(first), _) => first == *layout,
            (None, Some(text)) => text == layout.describe(),
            (None, None) => true,
        }
    }

    /// An id issued by leased server `node` of `layout` under `lease` (its claim status's);
    /// `held`: whether etcd held the claim when its clock was read (or its clock was stepped back
    /// since its grant was published). Checks every promise of the space an id can break.
    /// `delayed`: taken before its backend stalled and confirmed after (see `Lineage::issue`):
    /// ids of its own claim taken meanwhile are above it.
    pub(crate) fn issued(
        &mut self,
        node: usize,
        id: i64,
        layout: &Layout,
        lease: i64,
        held: bool,
        delayed: bool,
    ) -> Result<(), String> {
        let parts = layout.decode(id).expect("an id of the layout");
        let m = parts.machine_id;
        self.reached.leased_ids += (lease >= 0) as u64;
        let holdings = self.holdings.entry(m).or_default();
        let Some(k) = holdings.iter().position(|h| h.lease == lease && h.node == node) else {
            return Err(format!(
                "server {node} issued {id} under machine id {m}, which it never claimed (lease {lease:x})"
            ));
        };
        if !held {
            return Err(format!(
                "server {node} issued {id} under machine id {m} while etcd did not hold its claim (lease {lease:x})"
            ));
        }
        if let Some(space) = self.layout.filter(|s| s.decode(id).ok() != Some(parts)) {
            let theirs = space.decode(id).map_err(|e| format!("{e:?}"));
            return Err(format!(
                "server {node} issued {id} ({}) in an id space of {}, which reads it as {theirs:?}, not {parts:?}",
                layout.describe(),
                space.describe()
            ));
        }
        if !self.issued.insert(id) {
            return Err(format!(
                "id {id} issued twice in the id space (the second time by server {node}, machine id {m})"
            ));
        }
        // Above every id of this claim and of earlier ones, below every id of later ones.
        if let Some((j, h)) = holdings.iter().enumerate().find(|&(j, h)| match j.cmp(&k) {
            std::cmp::Ordering::Less => h.high >= id,
            std::cmp::Ordering::Equal => !delayed && h.high >= id,
            std::cmp::Ordering::Greater => h.low <= id,
        }) {
            let (relation, bound, which) = match j.cmp(&k) {
                std::cmp::Ordering::Less => ("above", h.high, "an earlier claim"),
                std::cmp::Ordering::Equal => ("above", h.high, "the same claim"),
                std::cmp::Ordering::Greater => ("below", h.low, "a later claim"),
            };
            return Err(format!(
                "server {node} issued {id} under machine id {m}, not {relation} {bound}, issued under {which} of it (server {}, lease {:x})",
                h.node, h.lease
            ));
        }
        let h = &mut holdings[k];
        (h.low, h.high) = (h.low.min(id), h.high.max(id));
        // (A hand-set server records no mark in etcd: its own mark file covers its ids.)
        if lease >= 0 {
            let highest = self.highest_ms.entry(m).or_insert(i64::MIN);
            *highest = (*highest).max(parts.unix_ms);
        }
        Ok(())
    }

    /// The marks recorded in etcd, against `grants`: (server, machine id, deadline) of every grant
    /// published on a running server.
    pub(crate) fn check_marks(&mut self, grants: &[(usize, i64, i64)]) -> Result<(), String> {
        // Restored from a snapshot: its marks are lowered, by what a restore is, until the
        // recovery; what holds meanwhile is that no id is issued twice nor below an earlier one
        // of its machine id (`issued`).
        if self.restored {
            return Ok(());
        }
        let ids: BTreeSet<i64> = self.highest_ms.keys().copied().chain(grants.iter().map(|g| g.1)).collect();
        for m in ids {
            let key = format!("{PREFIX}/mark/{m}");
            let Some((value, revision)) = self.etcd.value_at(&key) else {
                return Err(format!("machine id {m} was issued under or granted, and etcd records no mark of it"));
            };
            let mark_ms = match self.marks.get(&m) {
                Some(&(seen, ms)) if seen == revision => ms,
                _ => {
                    let mark: MarkRecord = serde_json::from_str(value).expect("a mark the protocol wrote");
                    self.marks.insert(m, (revision, mark.mark_ms));
                    mark.mark_ms
                }
            };
            if let Some(&ms) = self.highest_ms.get(&m).filter(|&&ms| ms > mark_ms) {
                return Err(format!(
                    "the mark recorded for machine id {m} ({mark_ms}) is below an id issued under it (its tick began at {ms})"
                ));
            }
            if let Some((node, _, deadline)) = grants.iter().find(|g| g.1 == m && g.2 > mark_ms) {
                return Err(format!(
                    "the mark recorded for machine id {m} ({mark_ms}) is below the deadline {deadline} of server {node}'s grant of it"
                ));
            }
        }
        Ok(())
    }
}

/// The grant a running leased server has published, if any: (machine id, deadline).
pub(crate) fn grant_of(shared: &SharedState, layout: &Layout) -> Option<(i64, i64)> {
    let word = shared.hot.grant.word();
    (word != grant::NOBODY && word != grant::FOREVER)
        .then(|| (grant::parts(word, layout.machine_bits()).0, shared.claim.deadline_ms.load(Relaxed)))
}
