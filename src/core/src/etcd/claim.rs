//! Machine ids leased from etcd: the protocol, decided here and driven by the shell's background
//! worker (over etcd's JSON gateway) and by the simulation (over a model of etcd).
//!
//! An id space is a key prefix. Under it, for each machine id `n`:
//! - `<prefix>/claim/<n>`: who holds `n` now ([`Holder`] as JSON), attached to the holder's etcd
//!   lease, so that etcd deletes it when the lease expires or is revoked. Created only by a
//!   transaction that succeeds if the key does not exist (`create_revision == 0`): never
//!   check-then-put.
//! - `<prefix>/mark/<n>`: the high-water mark of `n` ([`MarkRecord`]): no id was ever issued under
//!   `n`, by any server, on a tick after it. Not attached to a lease (it outlives every holder), and
//!   written only by a transaction that succeeds if the claim key is still attached to the
//!   writer's lease and the mark is still at the revision the writer last saw: a write that etcd
//!   applies late (its client gave up and wrote again) finds a later revision and changes nothing,
//!   so the mark never comes down under a deadline already published.
//! - `<prefix>/layout`: the layout of every id of the space ([`SpaceLayout`]), created only if
//!   absent by the first server that claims, compared at every claim: a server of another layout
//!   is refused (its ids and the space's could be equal), and a mark of another layout left from
//!   before is passed over, never a lock-out of the space.
//!
//! The holder issues ids only while its clock is before the **local deadline** of its lease: when
//! the last renewal that succeeded was *sent*, plus the TTL, minus a margin. etcd starts the TTL
//! when it receives the renewal, and only ever expires a lease late, never early, so the deadline
//! comes first. Before the deadline is published to the generator it is recorded as the mark in
//! etcd, so the mark covers every id the holder can issue: a new holder of `n` (another server
//! after this one died or was paused past its lease, or this one after a restart) takes every
//! tick up to the mark as used and issues nothing at or below it, whatever its clock says.
//! Two mechanisms, each proven necessary by the simulation's negative controls: without the
//! deadline a paused holder resumes and issues under a claim it lost; without the mark a new
//! holder whose clock is behind issues ids its predecessor issued.
//!
//! A crash-restart (the same postmaster) does not wait out its own lease: every id its run issued
//! is below its state word, begun above its mark file, so it takes as used only the mark its run
//! inherited when it first claimed the id, which each mark record keeps (`inherited_ms`). Without
//! that (the negative control) a crash-restart forgets the ids of the holders before its run.

use crate::calendar::format_utc;
use crate::claim_status::Trouble;
use crate::layout::Layout;
use crate::state::{grant, SharedState};
#[cfg(loom)]
use loom::sync::atomic::fence;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
#[cfg(not(loom))]
use std::sync::atomic::fence;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// Takes the grant away (no backend issues under the leased id from now on) and returns a time
/// at or after the tick of every id a backend issued or will issue under it: the final mark
/// covers those ids even when a backend's compare-and-swap lands after the state word is read.
///
/// A backend reads its clock, then the grant; one that still saw the grant read its clock before
/// the grant was taken. So the clock is read (`clock`) only once the grant is gone, behind a full
/// fence (the store is visible to every processor before the clock is read), and one tick more is
/// added: a backend's clock read that its processor completes a little after its load of the
/// grant (a clock is not a memory location: no fence orders the two exactly; out-of-order
/// execution spans nanoseconds, not a tick) still falls at or below the result. (loom cannot
/// check this: it models the clock as a memory location and SeqCst as AcqRel, and so allows a
/// stale grant read a whole tick late, which the hardware does not.)
pub fn stop_issuing(shared: &SharedState, layout: &Layout, clock: impl FnOnce() -> i64) -> i64 {
    shared.hot.grant.publish(grant::NOBODY);
    fence(SeqCst);
    clock().saturating_add(layout.tick_ms())
}

/// The final mark of a release (a clean stop), once [`stop_issuing`] has taken the grant away and
/// returned `stopped_ms`: the last tick issued on (the latest state word, read by a
/// read-modify-write), or the clock after the grant was gone when that is later, but never past
/// the lease's deadline, and never above what was recorded (`recorded_ms`: ids stop at the
/// deadline, which the mark covers). A successor takes every tick up to it as used.
pub fn final_mark(shared: &SharedState, layout: &Layout, stopped_ms: i64, deadline_ms: i64, recorded_ms: i64) -> i64 {
    stopped_ms.min(deadline_ms).max(shared.last_issued_ms_latest(layout).unwrap_or(-1)).min(recorded_ms)
}

/// One key of a range read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    pub key: String,
    pub value: String,
    /// The etcd lease the key is attached to, 0: none.
    pub lease: i64,
    /// The revision of the key's last change (etcd's `mod_revision`).
    pub mod_revision: i64,
}

/// A put in a transaction; `lease` 0: attached to no lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Put {
    pub key: String,
    pub value: String,
    pub lease: i64,
}

/// What a transaction compares before it applies its puts (all must hold).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guard {
    /// The key does not exist (`create_revision == 0`).
    Absent(String),
    /// The key exists and is attached to this lease.
    LeasedBy(String, i64),
    /// The key's last change is this revision (`mod_revision`; 0: the key does not exist). A write
    /// guarded so is applied only over the value its writer last saw: a request etcd applies late,
    /// after its client gave up and wrote again, finds a later revision and changes nothing.
    Revision(String, i64),
}

/// A transaction's outcome: whether its guards held (and its puts were applied), and the store's
/// revision after it (the `mod_revision` of what it put).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Txn {
    pub succeeded: bool,
    pub revision: i64,
}

/// What an answer of etcd's says of the store that gave it (its response header): the cluster, and
/// the store's revision, which only ever grows in one etcd, whatever its members do. An etcd
/// restored from a snapshot answers with the snapshot's revision, lower than one a server saw
/// before, and with every key as the snapshot has it: every mark written since is lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub cluster_id: u64,
    pub revision: i64,
}

impl Seen {
    /// The later of two, as a server keeps it: the highest revision, of the cluster answering now.
    pub fn max(self, other: Seen) -> Seen {
        if other.revision > self.revision {
            other
        } else {
            self
        }
    }
}

/// What the protocol needs of etcd (the v3 API). An `Err` is any call that did not end in an
/// answer of etcd's saying it was done: no answer (unreachable, timed out, cut short), or an
/// error answer (any HTTP status but 2xx, a non-zero `code`, a body without etcd's `header`).
/// Either way a write may still be applied later (etcd commits a proposal it could not confirm in
/// time, a request held on the way arrives late): the protocol never reads an `Err` as "absent" or
/// "not applied", and guards every write so that a late one changes nothing.
pub trait Etcd {
    /// A new lease of `ttl_s` seconds: its id.
    fn grant(&mut self, ttl_s: i64) -> Result<i64, String>;
    /// Renews `lease`: its TTL, or 0 or less when etcd no longer has it.
    fn keep_alive(&mut self, lease: i64) -> Result<i64, String>;
    fn revoke(&mut self, lease: i64) -> Result<(), String>;
    /// Every key that starts with `prefix`.
    fn range(&mut self, prefix: &str) -> Result<Vec<Kv>, String>;
    /// Applies `puts` if every guard holds.
    fn txn(&mut self, guards: &[Guard], puts: &[Put]) -> Result<Txn, String> {
        self.txn_and_delete(guards, puts, &[])
    }
    /// Applies `puts` and deletes the keys `deletes`, if every guard holds.
    fn txn_and_delete(&mut self, guards: &[Guard], puts: &[Put], deletes: &[String]) -> Result<Txn, String>;
    /// The header of the last answer etcd gave (None: no answer yet).
    fn seen(&self) -> Option<Seen>;
}

/// Who holds a machine id: enough to tell a server from every other and to find it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// PostgreSQL's database system identifier (as text: it is a u64).
    pub system_identifier: String,
    pub host: String,
    pub port: i32,
    pub data_directory: String,
    /// The postmaster of this run: its process id and start time (`pid@microseconds`), the same
    /// across a crash-restart (the postmaster re-initialises shared memory once every other process
    /// of it has exited) and new at every start of the server. Empty in records of 0.2.0's betas.
    #[serde(default)]
    pub postmaster: String,
}

impl Holder {
    /// For messages: the server, as an operator finds it.
    pub fn describe(&self) -> String {
        format!(
            "{}:{} (data directory {}, system identifier {})",
            self.host, self.port, self.data_directory, self.system_identifier
        )
    }

    /// The same server (its data directory on its host): whichever run of it.
    pub fn same_server(&self, other: &Holder) -> bool {
        self.system_identifier == other.system_identifier
            && self.host == other.host
            && self.port == other.port
            && self.data_directory == other.data_directory
    }

    /// The same data directory on the same host (whichever port and run): a restart, not a copy
    /// elsewhere.
    pub fn same_data_directory(&self, other: &Holder) -> bool {
        self.system_identifier == other.system_identifier
            && self.host == other.host
            && self.data_directory == other.data_directory
    }

    /// The same run of the same server: the same postmaster, whose every other process has exited
    /// when it starts this worker again after a crash.
    pub fn same_run(&self, other: &Holder) -> bool {
        self.same_server(other) && !self.postmaster.is_empty() && self.postmaster == other.postmaster
    }
}

/// The value of a mark key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkRecord {
    /// The high-water mark, ms since 1970: no id under this machine id carries a later tick.
    pub mark_ms: i64,
    /// The layout it was issued under (its description), and the last holder that wrote it.
    pub layout: String,
    pub holder: Holder,
    /// The mark the id had when the run of `holder` that wrote this claimed it (ms since 1970,
    /// -1: none), and who had recorded that one: every id under the id that this run did not
    /// issue is at or below it. A later claim of the id by the same run (after a crash-restart,
    /// a lost lease, its worker restarted) bounds the run's own ids by its state word (after a
    /// crash, above its mark file) and takes only this mark as used: it does not wait out its
    /// own lease's deadline. `None` in the records of 0.2.0's betas, which do not say: the whole
    /// mark is taken as used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub inherited_from: String,
}

/// The value of the space's layout key: the layout every server of the id space has, recorded
/// once by the first server that claimed in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceLayout {
    pub layout: String,
    pub recorded_by: Holder,
}

/// An id space and how its leases are held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Space {
    /// The key prefix, without a trailing slash (`/pg_snowflake/prod`).
    pub prefix: String,
    /// How long a lease lives in etcd without a renewal.
    pub ttl_s: i64,
    /// How many machine ids the space holds (2 ^ machine bits).
    pub size: i64,
}

impl Space {
    pub fn claim_key(&self, id: i64) -> String {
        format!("{}/claim/{id}", self.prefix)
    }
    pub fn mark_key(&self, id: i64) -> String {
        format!("{}/mark/{id}", self.prefix)
    }
    pub fn layout_key(&self) -> String {
        format!("{}/layout", self.prefix)
    }
    /// The reservation of a hand-set server's id: no leasing server claims it.
    pub fn reserved_key(&self, id: i64) -> String {
        format!("{}/reserved/{id}", self.prefix)
    }
    /// How early the local deadline comes before the TTL ends: a fifth of it, at least half a
    /// second (clock rates differ between servers, and the worker may be scheduled late).
    pub fn margin_ms(&self) -> i64 {
        (self.ttl_s * 1000 / 5).max(500)
    }
    /// How often the lease is renewed: three renewals a TTL, so that two can fail.
    pub fn renew_every_ms(&self) -> i64 {
        self.ttl_s * 1000 / 3
    }
    /// How long one step of the worker may talk to etcd in all (every request of a claim or a
    /// renewal, every endpoint tried): half the margin, so that a renewal that ends in time still
    /// leaves ids most of the lease, and a member that hangs is given up on well before the
    /// deadline.
    pub fn step_budget_ms(&self) -> i64 {
        self.margin_ms() / 2
    }
    /// After a failed claim, how long until the next: one second, then twice as long each time,
    /// up to a TTL (a server that cannot reach etcd does not ask it five times a second).
    pub fn retry_ms(&self, failures: u32) -> i64 {
        (1_000_i64 << failures.min(10)).min((self.ttl_s * 1000).max(1_000))
    }
    /// After a failed renewal, how long until the next: a tenth of the TTL, at least 200 ms (the
    /// lease keeps its time left meanwhile; five tries a second would only load etcd).
    pub fn renew_retry_ms(&self) -> i64 {
        (self.ttl_s * 100).max(200)
    }
    /// How far ahead of this server's clock a recorded mark is **far**: twice the TTL. A holder's
    /// mark is at most a TTL ahead of its own clock (its local deadline), and clocks that agree
    /// within the margin put it less than a TTL ahead of any other's: a mark further ahead says
    /// the clock of the server that recorded it ran ahead of this one's by more than a TTL (an
    /// hour fast, say). Ids under that id would wait until this clock passes the mark, so a claim
    /// passes it over while another id is free.
    pub fn far_ms(&self) -> i64 {
        2 * self.ttl_s * 1000
    }
    /// The local deadline of a renewal sent at `sent_ms`.
    pub fn deadline_ms(&self, sent_ms: i64, switches: Switches) -> i64 {
        sent_ms + self.ttl_s * 1000 - if switches.margin { self.margin_ms() } else { 0 }
    }
}

/// The mechanisms, all on in production; the simulation's negative controls switch one off and
/// see its invariant fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switches {
    /// Ids stop at the lease's local deadline.
    pub deadline: bool,
    /// The deadline comes a margin before the TTL ends.
    pub margin: bool,
    /// A new holder takes every tick up to the recorded mark as used.
    pub recorded_mark: bool,
    /// A mark write is guarded by the revision its writer last saw (off: by the claim alone, as in
    /// 0.2.0's betas: a write applied late lowers the mark).
    pub mark_revision: bool,
    /// The space's layout is recorded and compared at every claim (off: only each id's mark).
    pub space_layout: bool,
    /// A claim passes over the ids hand-set servers reserved in the space, and is guarded by
    /// their absence (off: reservations are not read, and a leased server can take a hand-set
    /// server's id).
    pub reservations: bool,
    /// A claim of an id whose mark this very run recorded (a crash-restart, a lost lease, a
    /// worker restarted) takes as used only the mark the run inherited, its own ids being below
    /// its state word (off: the whole recorded mark, as before issue 57: a crash-restart waits
    /// out its old lease's deadline; safe, only slow).
    pub own_run: bool,
    /// That inherited mark is taken as used (off: nothing, the ids of the holders before the run
    /// forgotten at its crash-restart: the negative control of `own_run`).
    pub inherited_mark: bool,
    /// A hand-set server that reserves its id issues under it only while its reservation is
    /// confirmed: not before the first confirmation (but one recorded by an earlier run), and not
    /// while a leasing server holds the id or another server reserved it (off: it issues whatever
    /// etcd says, as in 0.2.0's first reservations).
    pub hand_set_guard: bool,
    /// etcd's answers are compared with the highest revision (and the cluster) this server saw:
    /// a lower one (etcd restored from a snapshot, its marks lowered) or another cluster is
    /// refused (off: any etcd is taken as it answers).
    pub revision_check: bool,
}

impl Switches {
    pub const ALL_ON: Switches = Switches {
        deadline: true,
        margin: true,
        recorded_mark: true,
        mark_revision: true,
        space_layout: true,
        reservations: true,
        own_run: true,
        inherited_mark: true,
        hand_set_guard: true,
        revision_check: true,
    };
}

/// Why a step could not hold an id; each text names what to look at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimError {
    /// etcd could not be asked, or answered an error (every endpoint failed).
    Unreachable(String),
    /// Every id of the space is held.
    Exhausted { size: i64, holders: Vec<(i64, Holder)> },
    /// An earlier run of this server (another postmaster: a restart after a crash of the whole
    /// server, or a clean stop that could not release it) still holds `id`: its lease expires by
    /// itself within the TTL of its last renewal.
    OwnEarlierClaim { id: i64, earlier: Box<Holder> },
    /// Another server claimed the chosen id first: claim again at once.
    Raced { id: i64 },
    /// The lease is gone or the claim key is another's: the id was lost.
    Lost { id: i64, why: String },
    /// The id space was set up by servers of another layout: this server never shares it.
    SpaceLayout { recorded: String, ours: String, recorded_by: Box<Holder> },
    /// A key of the space that is not ours to read.
    Unreadable { key: String, why: String },
    /// A hand-set server's id is held in the space by a leasing server: both issue under it.
    ReservedIdHeld { id: i64, holder: Box<Holder> },
    /// A hand-set server's id is reserved in the space by another server (or by hand: `by` None).
    ReservedByAnother { id: i64, by: Option<Box<Holder>> },
    /// The reservation's write found the id claimed or reserved meanwhile: look again.
    ReserveRaced { id: i64 },
    /// A hand-set server's reservation, confirmed before, now names another server of its cluster
    /// (the same system identifier, another host or data directory): a copy of it (a base backup,
    /// a cloned machine) or its standby, promoted while it still runs, took it over.
    ReservationTakenOver { id: i64, by: Box<Holder> },
    /// etcd answered with a lower revision than this server saw, or is another cluster.
    Restored { seen: Seen, now: Seen },
}

impl ClaimError {
    pub fn message(&self, space: &Space) -> String {
        match self {
            // Names the endpoints and what each said (or why none answered).
            ClaimError::Unreachable(why) => why.clone(),
            ClaimError::Exhausted { size, holders } => format!(
                "every machine id of the id space {} is held ({size} ids, snowflake.machine_bits): {}",
                space.prefix,
                holders
                    .iter()
                    .map(|(id, h)| format!("{id} by {}:{} ({})", h.host, h.port, h.data_directory))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ClaimError::OwnEarlierClaim { id, earlier } => format!(
                "machine id {id} of the id space {} is still held by an earlier run of this server (postmaster {}); its lease ends by itself {} s after that run's last renewal, or a little later (etcd never ends a lease early)",
                space.prefix,
                if earlier.postmaster.is_empty() { "unknown" } else { earlier.postmaster.as_str() },
                space.ttl_s
            ),
            ClaimError::Raced { id } => format!("another server claimed machine id {id} first; claiming again"),
            ClaimError::Lost { id, why } => format!("the lease of machine id {id} was lost: {why}"),
            ClaimError::SpaceLayout { recorded, ours, recorded_by } => format!(
                "the id space {} is of another layout ({recorded}, recorded by {}); this server's: {ours}",
                space.prefix,
                recorded_by.describe()
            ),
            ClaimError::Unreadable { key, why } => format!("the etcd key {key} could not be read: {why}"),
            ClaimError::ReservedIdHeld { id, holder } => format!(
                "machine id {id} (snowflake.machine_id) is held in the id space {} by a leasing server, {}: not reserved, and no id is issued under it here until that server gives it back",
                space.prefix,
                holder.describe()
            ),
            ClaimError::ReservedByAnother { id, by } => format!(
                "machine id {id} (snowflake.machine_id) is reserved in the id space {} by {}: another server set by hand to the same machine id? Not reserved, and no id is issued under it here until that reservation is gone",
                space.prefix,
                by.as_ref().map_or("a key not written by pg_snowflake (reserved by hand)".to_string(), |h| format!("another server, {}", h.describe()))
            ),
            ClaimError::ReserveRaced { id } => {
                format!("machine id {id} was claimed or reserved by another server while this one reserved it; looking again")
            }
            ClaimError::ReservationTakenOver { id, by } => format!(
                "machine id {id} (snowflake.machine_id) was taken over in the id space {} by another server of this cluster, {}: a copy of this server, or its standby promoted while it runs; no id is issued under it here",
                space.prefix,
                by.describe()
            ),
            ClaimError::Restored { seen, now } if seen.cluster_id != now.cluster_id => format!(
                "etcd answers as the cluster {:x}, not {:x}, the one this server saw in the id space {}: another etcd, whose marks are not this id space's (or one restored from a snapshot); refused",
                now.cluster_id, seen.cluster_id, space.prefix
            ),
            ClaimError::Restored { seen, now } => format!(
                "etcd answers at revision {}, below revision {} that this server saw in the id space {}: etcd was restored from a snapshot (or rolled back), and every mark recorded after it is lost; refused, since a new holder could issue ids issued before",
                now.revision, seen.revision, space.prefix
            ),
        }
    }

    /// What kind of trouble, for the hint of a refusal (`claim_status::Trouble`).
    pub fn trouble(&self) -> Trouble {
        match self {
            ClaimError::Unreachable(_) | ClaimError::Raced { .. } => Trouble::Unreachable,
            ClaimError::Exhausted { .. } => Trouble::Exhausted,
            ClaimError::OwnEarlierClaim { .. } => Trouble::OwnEarlierClaim,
            ClaimError::Lost { .. } => Trouble::Lost,
            ClaimError::SpaceLayout { .. } => Trouble::SpaceLayout,
            ClaimError::Unreadable { .. } => Trouble::Unreadable,
            // A hand-set server's: it issues nothing under its id until that is resolved.
            ClaimError::ReservedIdHeld { .. }
            | ClaimError::ReservedByAnother { .. }
            | ClaimError::ReservationTakenOver { .. } => Trouble::Reserved,
            ClaimError::ReserveRaced { .. } => Trouble::Unreachable,
            ClaimError::Restored { .. } => Trouble::Restored,
        }
    }
}

/// What a reservation found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// Reserved by this call.
    Now,
    /// This server had reserved it before.
    Already,
    /// Another server of the same cluster (system identifier) had reserved it: the primary before
    /// a failover. The reservation names this server now.
    TakenOver,
}

/// The id held, and its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub id: i64,
    pub lease: i64,
    /// When the last renewal that succeeded was sent (the claim's grant counts as one), by this
    /// server's wall clock.
    pub sent_ms: i64,
    pub deadline_ms: i64,
    /// The mark recorded in etcd for `id`, and the revision it was recorded at.
    pub mark_ms: i64,
    pub mark_rev: i64,
    /// The mark `id` had when this run claimed it (-1: none), and who recorded it (see
    /// [`MarkRecord::inherited_ms`]): the ids of its holders before this run are at or below it.
    pub inherited_ms: i64,
    pub inherited_from: String,
}

/// What a step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Claimed, with lines for the server log (an earlier run's claim taken over, marks of another
    /// layout passed over, the space's layout recorded).
    Claimed(Held, Vec<String>),
    Renewed(Held),
    /// Nothing was due.
    Idle,
}

/// One server's side of the protocol. Not shared: the worker that runs it is the only process
/// writing the grant word and the claim status.
#[derive(Clone, Debug)]
pub struct Claimer {
    pub space: Space,
    pub me: Holder,
    pub layout: Layout,
    pub switches: Switches,
    held: Option<Held>,
    /// Claims that failed in a row (for the back-off), when the last failed and when the next may
    /// be tried, by the wall clock.
    failures: u32,
    failed_ms: i64,
    next_try_ms: i64,
    /// Leases of failed claims that could not be revoked then (see [`Claimer::give_back`]).
    orphans: Vec<i64>,
    /// How many ids of the space were reserved by servers set by hand at the last read of the
    /// space (a claim or a reservation), -1: none read yet.
    pub reservations_seen: i64,
    /// The highest revision of etcd's answers this server saw in the id space, and the cluster
    /// that gave it: the shell keeps it durably beside the mark (`etcd_record`) and sets it at
    /// the worker's start; `None`: none yet (or the record removed, after a restore of etcd).
    pub seen: Option<Seen>,
    /// Whether this run saw its hand-set id's reservation confirmed ([`Claimer::hold_reserved`]).
    reservation_confirmed: bool,
    /// The mark recorded in etcd for the id of the last reservation, as read then (of this
    /// layout), and the server it was taken over from (another host or data directory).
    reserved_mark_ms: Option<i64>,
    taken_over_from: Option<Holder>,
}

impl Claimer {
    pub fn new(space: Space, me: Holder, layout: Layout, switches: Switches) -> Claimer {
        Claimer {
            space,
            me,
            layout,
            switches,
            held: None,
            failures: 0,
            failed_ms: i64::MIN,
            next_try_ms: i64::MIN,
            orphans: vec![],
            reservations_seen: -1,
            seen: None,
            reservation_confirmed: false,
            reserved_mark_ms: None,
            taken_over_from: None,
        }
    }

    /// Compares what etcd's last answer (a range or a transaction: linearizable, so never behind
    /// an answer seen before) said of itself with what this server saw: a lower revision or
    /// another cluster is refused; otherwise the highest is kept.
    fn check_seen(&mut self, etcd: &impl Etcd) -> Result<(), ClaimError> {
        let Some(now) = etcd.seen() else { return Ok(()) };
        match self.seen {
            Some(seen)
                if self.switches.revision_check
                    && (now.cluster_id != seen.cluster_id || now.revision < seen.revision) =>
            {
                Err(ClaimError::Restored { seen, now })
            }
            Some(seen) if now.cluster_id == seen.cluster_id => {
                self.seen = Some(seen.max(now));
                Ok(())
            }
            _ => {
                self.seen = Some(now);
                Ok(())
            }
        }
    }

    pub fn held(&self) -> Option<&Held> {
        self.held.as_ref()
    }

    /// Takes over the claim a worker of this same server held before it ended (the grant is in
    /// shared memory, the lease in the status): renewing it keeps the id, and its ids flow on.
    pub fn resume(&mut self, shared: &SharedState) {
        let lease = shared.claim.lease_id.load(Relaxed);
        let word = shared.hot.grant.word();
        if lease == 0 || word == grant::NOBODY || word == grant::FOREVER {
            return;
        }
        let (id, _) = grant::parts(word, self.layout.machine_bits());
        let (inherited_ms, inherited_from) = shared.claim.inherited().unwrap_or((-1, String::new()));
        self.held = Some(Held {
            id,
            lease,
            sent_ms: shared.claim.renewed_ms.load(Relaxed),
            deadline_ms: shared.claim.deadline_ms.load(Relaxed),
            mark_ms: shared.claim.recorded_mark_ms.load(Relaxed),
            mark_rev: shared.claim.recorded_mark_rev.load(Relaxed),
            inherited_ms,
            inherited_from,
        });
    }

    /// When the next step has something to do, by this server's wall clock: a renewal due, or the
    /// next claim after a failed one (backing off).
    pub fn next_due_ms(&self) -> i64 {
        match &self.held {
            Some(h) => (h.sent_ms + self.space.renew_every_ms()).max(self.next_try_ms),
            None => self.next_try_ms,
        }
    }

    /// Does what is due at wall-clock `now_ms`: claims an id when none is held (not before the
    /// back-off after a failed claim ends), renews the lease when a renewal is due. Errors are
    /// recorded in the status and returned (the caller logs them and steps again later); a lost
    /// lease takes the grant away at once. A clock behind the last failed claim (stepped back)
    /// ends the back-off, as a clock behind the last renewal sent renews at once: a back-off
    /// measured by a clock stepped back an hour would hold no id for an hour.
    pub fn step(&mut self, etcd: &mut impl Etcd, shared: &SharedState, now_ms: i64) -> Result<Step, ClaimError> {
        let result = match &self.held {
            _ if (self.failed_ms..self.next_try_ms).contains(&now_ms) => Ok(Step::Idle),
            None => self.claim(etcd, shared, now_ms).map(|(h, notes)| Step::Claimed(h, notes)),
            Some(h) if now_ms - h.sent_ms >= self.space.renew_every_ms() || now_ms < h.sent_ms => {
                self.renew(etcd, shared, now_ms).map(Step::Renewed)
            }
            Some(_) => Ok(Step::Idle),
        };
        let status = &shared.claim;
        match &result {
            Ok(Step::Idle) => {}
            Ok(Step::Claimed(..) | Step::Renewed(_)) => {
                self.failures = 0;
                self.next_try_ms = i64::MIN;
                status.set_error(None, Trouble::None, now_ms);
            }
            Err(e) => {
                if let ClaimError::Lost { .. } = e {
                    status.losses.fetch_add(1, Relaxed);
                }
                if self.held.is_some() {
                    status.renewal_failures.fetch_add(1, Relaxed);
                    self.failed_ms = now_ms;
                    self.next_try_ms = now_ms + self.space.renew_retry_ms();
                } else if matches!(e, ClaimError::Lost { .. }) {
                    self.next_try_ms = i64::MIN;
                } else if !matches!(e, ClaimError::Raced { .. } | ClaimError::Lost { .. }) {
                    // A lost lease and a lost race claim again at once; anything else backs off.
                    self.failed_ms = now_ms;
                    self.next_try_ms = now_ms + self.space.retry_ms(self.failures);
                    self.failures = self.failures.saturating_add(1);
                }
                status.set_error(Some(&e.message(&self.space)), e.trouble(), now_ms);
            }
        }
        result
    }

    fn claim(
        &mut self,
        etcd: &mut impl Etcd,
        shared: &SharedState,
        now_ms: i64,
    ) -> Result<(Held, Vec<String>), ClaimError> {
        let sent_ms = now_ms;
        let space = self.space.clone();
        let ours = self.layout.describe();
        let mut notes = vec![];
        self.revoke_orphans(etcd);
        let kvs = etcd.range(&format!("{}/", space.prefix)).map_err(ClaimError::Unreachable)?;
        // An etcd restored from a snapshot, or another one: nothing is written to it.
        self.check_seen(etcd)?;
        let mut view = read_space(&space, &kvs)?;
        if self.switches.space_layout {
            self.check_space_layout(etcd, view.layout.take(), &ours, &mut notes)?;
        }
        // This very run held an id before a crash-restart: the postmaster re-initialised shared
        // memory (which holds the grant) only after every other process of it had exited, so no
        // process can issue under that claim any more, and the mark recorded in etcd covers every
        // id they issued. Revoking its lease frees the id at once, rather than after the TTL.
        let own = view.claims.iter().find(|(_, (h, _))| h.same_run(&self.me)).map(|(id, (_, lease))| (*id, *lease));
        if let Some((id, lease)) = own {
            etcd.revoke(lease).map_err(ClaimError::Unreachable)?;
            view.claims.remove(&id);
            notes.push(format!(
                "machine id {id} was held by this server before its crash-restart: its lease {lease:x} revoked (every process of the crashed instance has exited), claimed again at once"
            ));
        }
        let stale: Vec<i64> = view.marks.iter().filter(|(_, (m, _))| m.layout != ours).map(|(id, _)| *id).collect();
        if !stale.is_empty() && self.switches.space_layout {
            notes.push(format!(
                "machine ids {} of the id space {} carry a mark of another layout (left by a server before the space recorded its layout): passed over, never claimed",
                stale.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
                space.prefix
            ));
        }
        let skip = if self.switches.space_layout { stale } else { vec![] };
        if !self.switches.reservations {
            view.reserved.clear();
        }
        self.reservations_seen = view.reserved.len() as i64;
        // Ids whose recorded mark is far ahead of this clock (see `Space::far_ms`) are passed over
        // while another id is free: ids under them would wait until this clock passes the mark.
        let far: BTreeMap<i64, &MarkRecord> = view
            .marks
            .iter()
            .filter(|(id, (m, _))| {
                m.layout == ours && m.mark_ms > now_ms.saturating_add(space.far_ms()) && !view.claims.contains_key(id)
            })
            .map(|(id, (m, _))| (*id, m))
            .collect();
        let without_far: Vec<i64> = skip.iter().copied().chain(far.keys().copied()).collect();
        let id = match choose(&space, &self.me, &view, &without_far) {
            Err(ClaimError::Exhausted { .. }) if !far.is_empty() => choose(&space, &self.me, &view, &skip)?,
            chosen => chosen?,
        };
        if let Some(ahead) = far.values().max_by_key(|m| m.mark_ms) {
            let ids: Vec<String> = far.keys().map(i64::to_string).collect();
            notes.push(format!(
                "machine id{} {} of the id space {} carr{} a mark more than {} s (twice snowflake.etcd_lease_ttl) ahead of this server's clock, the furthest {} s ahead, recorded by {}: its clock ran ahead, or this one's is behind; {}",
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", "),
                space.prefix,
                if ids.len() == 1 { "ies" } else { "y" },
                space.far_ms() / 1000,
                (ahead.mark_ms - now_ms) / 1000,
                ahead.holder.describe(),
                if far.contains_key(&id) {
                    format!("every free id does: {id} claimed, and its ids wait until this clock passes its mark")
                } else {
                    format!("passed over (ids under them would wait until this clock passes the mark): {id} claimed")
                }
            ));
        }
        // Who else is in the space: a prefix mistyped starts an empty space beside the real one.
        let others: Vec<String> = view.claims.keys().take(16).map(i64::to_string).collect();
        let holders_at_claim = view.claims.len() as i64;
        notes.push(match others.len() {
            0 if view.marks.is_empty() && view.reserved.is_empty() => format!(
                "the id space {} was empty (no holder, no mark): this server is the first in it; if other servers should share its machine ids, check that snowflake.etcd_prefix is theirs",
                space.prefix
            ),
            0 => format!(
                "the id space {}: no other holder now, marks of {} ids, {} ids reserved by servers set by hand",
                space.prefix,
                view.marks.len(),
                view.reserved.len()
            ),
            n => format!(
                "the id space {}: {} other holder{} now (machine ids {}{})",
                space.prefix,
                view.claims.len(),
                if n == 1 && view.claims.len() == 1 { "" } else { "s" },
                others.join(", "),
                if view.claims.len() > others.len() { ", ..." } else { "" }
            ),
        });
        let lease = etcd.grant(space.ttl_s).map_err(ClaimError::Unreachable)?;
        let me = serde_json::to_string(&self.me).expect("a holder is plain data");
        // No reservation of the id may appear between the range and the claim (but this server's
        // own: a hand-set server moved to etcd takes its reserved id).
        // (Its own reservation: unchanged since the range, so that one removed by hand and made
        // by another server meanwhile is not claimed.)
        // Its own reservation is removed by the claim (in the same transaction): a reservation and
        // a claim of one id never both stand; leased now, the id is as any other of the space.
        let mut guards = vec![Guard::Absent(space.claim_key(id))];
        let mut deletes = vec![];
        if self.switches.reservations {
            guards.push(match view.reserved.get(&id).filter(|_| view.reserved_by(id, &self.me)) {
                Some(&(_, revision)) => {
                    deletes.push(space.reserved_key(id));
                    notes.push(format!(
                        "machine id {id} was reserved by this server while it was set by hand: claimed, and its reservation removed with the claim (a reservation and a claim of one id never both stand)"
                    ));
                    Guard::Revision(space.reserved_key(id), revision)
                }
                None => Guard::Absent(space.reserved_key(id)),
            });
        }
        let claim = [Put { key: space.claim_key(id), value: me, lease }];
        let won = match etcd.txn_and_delete(&guards, &claim, &deletes) {
            Ok(won) => won,
            Err(e) => return Err(self.give_back(etcd, lease, ClaimError::Unreachable(e))),
        };
        if !won.succeeded {
            return Err(self.give_back(etcd, lease, ClaimError::Raced { id }));
        }
        // Held now, so nobody else can write the id's mark: read it again, it is final.
        let (recorded, mark_rev) = match self.read_mark(etcd, id) {
            Ok(read) => read,
            Err(e) => return Err(self.give_back(etcd, lease, e)),
        };
        if let Some(r) = recorded.as_ref().filter(|r| r.layout != ours) {
            // (Only without the space's layout, or a mark written between the range and the claim
            // by a server of another layout, which the space's layout refuses.)
            let _ = self.give_back(etcd, lease, ClaimError::Raced { id });
            return Err(ClaimError::SpaceLayout {
                recorded: r.layout.clone(),
                ours,
                recorded_by: Box::new(r.holder.clone()),
            });
        }
        let (inherited_ms, inherited_from) = self.inherited(recorded.as_ref());
        if let Some(r) = recorded.as_ref().filter(|r| r.holder.same_run(&self.me) && self.switches.own_run) {
            notes.push(format!(
                "machine id {id}: its mark in etcd, {}, is this run's own (the deadline of the lease it held before): every id this run issued is below its high-water mark file, so its ids wait only for the mark of the holders before it: {}",
                format_utc(r.mark_ms),
                match inherited_ms {
                    ms if ms < 0 => "none".to_string(),
                    ms => format!("{}, recorded by {inherited_from}", format_utc(ms)),
                }
            ));
        }
        shared.claim.set_inherited((inherited_ms >= 0).then_some((inherited_ms, inherited_from.as_str())));
        let old_mark_ms = recorded.map_or(-1, |r| r.mark_ms);
        let deadline_ms = space.deadline_ms(sent_ms, self.switches);
        let mut held =
            Held { id, lease, sent_ms, deadline_ms, mark_ms: old_mark_ms, mark_rev, inherited_ms, inherited_from };
        // The mark covers the deadline, and the tick this server last issued on: a clock stepped
        // back behind it leaves the generator issuing on that tick (never below its last id), past
        // the deadline by the clock, under whichever id it holds now.
        let last_ms = shared.last_issued_ms(&self.layout).unwrap_or(-1);
        match self.record_mark(etcd, &mut held, old_mark_ms.max(deadline_ms).max(last_ms)) {
            Ok(true) => {}
            Ok(false) => {
                let lost = ClaimError::Lost { id, why: "the claim key changed while it was being taken".into() };
                return Err(self.give_back(etcd, lease, lost));
            }
            Err(e) => return Err(self.give_back(etcd, lease, e)),
        }
        // The answers since the range: still the etcd this server saw (a restore meanwhile refuses).
        if let Err(e) = self.check_seen(etcd) {
            return Err(self.give_back(etcd, lease, e));
        }
        // Every tick up to the mark inherited is used: the ids issued under this id before this
        // run, whoever issued them (this run's own are below the state word already).
        if held.inherited_ms >= 0 && self.switches.recorded_mark {
            shared.use_up_to(self.layout.tick_of_mark(held.inherited_ms), self.layout.sequence_bits());
        }
        shared.claim.claims.fetch_add(1, Relaxed);
        shared.claim.holders_at_claim.store(holders_at_claim, Relaxed);
        shared.claim.reservations.store(self.reservations_seen, Relaxed);
        self.publish(shared, &held);
        self.held = Some(held.clone());
        Ok((held, notes))
    }

    /// A hand-set server's machine id `id`, reserved in the space so that no leasing server
    /// claims it (a fleet moved from hand-set ids to etcd one server at a time keeps every id
    /// unique meanwhile), and checked against the space: refused when a leasing server holds it
    /// (both issue under it: said, for the operator to fix) or another server reserved it. The
    /// reservation has no lease: it outlives the server's stops, as its id does; moved to etcd,
    /// the server claims the id (`choose`) and its claim removes the reservation; an operator
    /// removes the reservation of a server set by hand that is retired.
    /// The write is guarded by the absence of both keys, so that a claim and a reservation of one
    /// id never both stand, in whatever order they come or are applied.
    pub fn reserve(&mut self, etcd: &mut impl Etcd, id: i64) -> Result<(Reserved, Vec<String>), ClaimError> {
        let space = self.space.clone();
        let mut notes = vec![];
        let kvs = etcd.range(&format!("{}/", space.prefix)).map_err(ClaimError::Unreachable)?;
        let mut view = read_space(&space, &kvs)?;
        self.reservations_seen = view.reserved.len() as i64;
        if self.switches.space_layout {
            self.check_space_layout(etcd, view.layout.take(), &self.layout.describe(), &mut notes)?;
        }
        if let Some((holder, _)) = view.claims.get(&id).filter(|(h, _)| !h.same_server(&self.me)) {
            return Err(ClaimError::ReservedIdHeld { id, holder: Box::new(holder.clone()) });
        }
        // Ids this server reserved before under another machine id: kept out of every claim of its
        // own (see `choose`), left for the operator to remove.
        let stale: Vec<String> = view
            .reserved
            .keys()
            .filter(|&&other| other != id && view.reserved_by(other, &self.me))
            .map(i64::to_string)
            .collect();
        if !stale.is_empty() {
            notes.push(format!(
                "machine ids {} of the id space {} are reserved by this server too (set by hand before): remove those no server uses (etcdctl del {}/reserved/ID); while this server holds several, it takes none of them when moved to etcd",
                stale.join(", "),
                space.prefix,
                space.prefix
            ));
        }
        let key = space.reserved_key(id);
        // The mark a leasing holder of the id recorded before (of this layout): the ids issued
        // under it, which this server's must stay above (see `hold_reserved`).
        let ours = self.layout.describe();
        let mark = view.marks.get(&id).filter(|(m, _)| m.layout == ours);
        self.reserved_mark_ms = mark.map(|(m, _)| m.mark_ms);
        self.taken_over_from = None;
        let guard = match view.reserved.get(&id) {
            Some(_) if view.reserved_by(id, &self.me) => return Ok((Reserved::Already, notes)),
            // The same cluster, after this run saw its own reservation confirmed: another primary
            // of this cluster runs beside this one (a copy, or a standby promoted while this one
            // still runs). Taking it back would only take it from that one in turn.
            Some((Some(by), _))
                if by.system_identifier == self.me.system_identifier
                    && self.reservation_confirmed
                    && self.switches.hand_set_guard =>
            {
                return Err(ClaimError::ReservationTakenOver { id, by: Box::new(by.clone()) })
            }
            // The same cluster: its primary before a failover (a standby carries its primary's
            // machine id), or this data directory under another port. The reservation follows
            // the cluster's primary; from another host or data directory, said as a warning (a
            // copy of that server made with a base backup has the same system identifier too).
            Some((Some(by), revision)) if by.system_identifier == self.me.system_identifier => {
                if !by.same_data_directory(&self.me) {
                    self.taken_over_from = Some(by.clone());
                }
                Guard::Revision(key.clone(), *revision)
            }
            Some((by, _)) => return Err(ClaimError::ReservedByAnother { id, by: by.clone().map(Box::new) }),
            None => Guard::Absent(key.clone()),
        };
        let taken_over = matches!(guard, Guard::Revision(..));
        let me = serde_json::to_string(&self.me).expect("a holder is plain data");
        // No claim of the id, and its mark as read: a leasing server that claimed the id and
        // raised its mark between the range and this write (and gave it back) makes it fail.
        let guards =
            [guard, Guard::Absent(space.claim_key(id)), Guard::Revision(space.mark_key(id), mark.map_or(0, |m| m.1))];
        let done = etcd.txn(&guards, &[Put { key, value: me, lease: 0 }]).map_err(ClaimError::Unreachable)?;
        if !done.succeeded {
            return Err(ClaimError::ReserveRaced { id });
        }
        Ok((if taken_over { Reserved::TakenOver } else { Reserved::Now }, notes))
    }

    /// The server the last reservation was taken over from when it was another host or data
    /// directory of this cluster (its primary before a failover, or the original of a copy):
    /// the shell says it as a WARNING.
    pub fn taken_over_from(&self) -> Option<&Holder> {
        self.taken_over_from.as_ref()
    }

    /// A hand-set server's machine id `id`, reserved ([`Claimer::reserve`]) and held to its
    /// reservation: ids are issued under it (the grant word held for ever) only once the
    /// reservation is confirmed, and not while etcd says a leasing server holds the id, another
    /// server reserved it or took it over (a copy), or the space is of another layout (the grant
    /// word held by nobody until that is resolved: looked at again, and confirmed, by a later
    /// call). Before the first confirmation nothing is issued either (the start decides: an id
    /// this server saw confirmed before, as its record says, is issued at once and checked here
    /// again); etcd unreachable leaves the grant as it is. On a confirmation, every tick up to the
    /// mark a leasing holder of the id recorded is taken as used, and `remember` is told the
    /// reservation (the id and that mark: the shell keeps them durably, for the next start)
    /// before any id is issued under it. The status holds the last error.
    pub fn hold_reserved(
        &mut self,
        etcd: &mut impl Etcd,
        shared: &SharedState,
        id: i64,
        now_ms: i64,
        remember: impl FnOnce(i64, Option<i64>),
    ) -> Result<(Reserved, Vec<String>), ClaimError> {
        let result = self.reserve(etcd, id);
        match &result {
            Ok(_) => {
                let taken = self.reserved_mark_ms.filter(|_| self.switches.recorded_mark);
                if let Some(ms) = taken {
                    shared.use_up_to(self.layout.tick_of_mark(ms), self.layout.sequence_bits());
                }
                remember(id, taken);
                self.reservation_confirmed = true;
                shared.hot.grant.publish(grant::FOREVER);
                shared.claim.set_error(None, Trouble::None, now_ms);
            }
            Err(e) => {
                // (A confirmation of this run stays: a reservation taken over by another server
                // of this cluster is not taken back.)
                let conclusive = e.trouble() == Trouble::Reserved || matches!(e, ClaimError::SpaceLayout { .. });
                if conclusive && self.switches.hand_set_guard {
                    shared.hot.grant.publish(grant::NOBODY);
                }
                shared.claim.set_error(Some(&e.message(&self.space)), e.trouble(), now_ms);
            }
        }
        result
    }

    /// The space's layout: recorded if absent (created only if absent, so the first server's
    /// stands), compared if present.
    fn check_space_layout(
        &self,
        etcd: &mut impl Etcd,
        recorded: Option<SpaceLayout>,
        ours: &str,
        notes: &mut Vec<String>,
    ) -> Result<(), ClaimError> {
        let key = self.space.layout_key();
        let recorded = match recorded {
            Some(r) => r,
            None => {
                let value = serde_json::to_string(&SpaceLayout { layout: ours.into(), recorded_by: self.me.clone() })
                    .expect("a layout is plain data");
                let put = Put { key: key.clone(), value, lease: 0 };
                if etcd.txn(&[Guard::Absent(key.clone())], &[put]).map_err(ClaimError::Unreachable)?.succeeded {
                    notes.push(format!(
                        "the id space {} had no layout recorded: this server's recorded ({ours})",
                        self.space.prefix
                    ));
                    return Ok(());
                }
                // Another server recorded one meanwhile: read it.
                let kvs = etcd.range(&key).map_err(ClaimError::Unreachable)?;
                let kv = kvs.iter().find(|kv| kv.key == key).ok_or_else(|| ClaimError::Unreadable {
                    key: key.clone(),
                    why: "it was created and is gone".into(),
                })?;
                serde_json::from_str(&kv.value)
                    .map_err(|e| ClaimError::Unreadable { key: key.clone(), why: e.to_string() })?
            }
        };
        if recorded.layout != ours {
            return Err(ClaimError::SpaceLayout {
                recorded: recorded.layout,
                ours: ours.into(),
                recorded_by: Box::new(recorded.recorded_by),
            });
        }
        Ok(())
    }

    fn renew(&mut self, etcd: &mut impl Etcd, shared: &SharedState, now_ms: i64) -> Result<Held, ClaimError> {
        let mut held = self.held.clone().expect("renew only with an id held");
        let sent_ms = now_ms;
        let ttl = etcd.keep_alive(held.lease).map_err(ClaimError::Unreachable)?;
        if ttl <= 0 {
            return Err(self.lose(
                shared,
                "etcd no longer has its lease (it expired: this server was paused, or etcd unreachable, past the TTL)",
            ));
        }
        let deadline_ms = self.space.deadline_ms(sent_ms, self.switches);
        let want = held.mark_ms.max(deadline_ms);
        // An etcd restored from a snapshot (the mark older than this holder wrote it, or an
        // answer below the revision seen): ids stop now, and the id is claimed again only once the
        // restore is dealt with.
        let written = match self.record_mark(etcd, &mut held, want).and_then(|w| self.check_seen(etcd).map(|()| w)) {
            Err(e @ ClaimError::Restored { .. }) => {
                shared.hot.grant.publish(grant::NOBODY);
                shared.claim.lease_id.store(0, Relaxed);
                self.held = None;
                return Err(e);
            }
            written => written,
        };
        // What a write that failed may have done is known now (the revision read back), or at the
        // next write (which reads it back when its guard fails).
        if let Some(h) = self.held.as_mut() {
            (h.mark_ms, h.mark_rev) = (held.mark_ms, held.mark_rev);
        }
        if !written? {
            return Err(self.lose(shared, "its claim key is gone or attached to another lease"));
        }
        held.sent_ms = sent_ms;
        held.deadline_ms = deadline_ms;
        shared.claim.renewals.fetch_add(1, Relaxed);
        self.publish(shared, &held);
        self.held = Some(held.clone());
        Ok(held)
    }

    /// At a clean stop (or when the postmaster is gone, its backends perhaps not yet): takes the
    /// grant away, records the final mark (the last tick issued on, at most the deadline) and
    /// revokes the lease, which deletes the claim key at once: the next holder waits for no TTL
    /// and no lease-long mark. The final mark is written only over the mark this holder last
    /// recorded (its revision): if a write of its own was applied late meanwhile, that higher mark
    /// stays.
    ///
    /// What the final mark must cover when the grant is taken away: see [`stop_issuing`].
    pub fn release(
        &mut self,
        etcd: &mut impl Etcd,
        shared: &SharedState,
        clock: impl FnOnce() -> i64,
    ) -> Result<(), ClaimError> {
        let stopped_ms = stop_issuing(shared, &self.layout, clock);
        self.revoke_orphans(etcd);
        let Some(mut held) = self.held.take() else { return Ok(()) };
        let final_ms = final_mark(shared, &self.layout, stopped_ms, held.deadline_ms, held.mark_ms);
        let recorded = self.record_mark(etcd, &mut held, final_ms).map(|_| ());
        let revoked = etcd.revoke(held.lease).map_err(ClaimError::Unreachable);
        shared.claim.lease_id.store(0, Relaxed);
        recorded.and(revoked)
    }

    /// Revokes `lease`, a lease of a claim that failed (nothing was published under it); if etcd
    /// cannot be asked now (unreachable, or the worker stopping), keeps it to revoke at the next
    /// claim or at the release, so that the id is not left held until the TTL ends. Returns `why`.
    fn give_back(&mut self, etcd: &mut impl Etcd, lease: i64, why: ClaimError) -> ClaimError {
        if etcd.revoke(lease).is_err() {
            self.orphans.push(lease);
        }
        why
    }

    /// Revokes the leases that failed claims left (see [`Claimer::give_back`]); keeps those etcd
    /// could not be asked about.
    fn revoke_orphans(&mut self, etcd: &mut impl Etcd) {
        self.orphans.retain(|&lease| etcd.revoke(lease).is_err());
    }

    fn lose(&mut self, shared: &SharedState, why: &str) -> ClaimError {
        shared.hot.grant.publish(grant::NOBODY);
        shared.claim.lease_id.store(0, Relaxed);
        let id = self.held.take().map_or(-1, |h| h.id);
        ClaimError::Lost { id, why: why.into() }
    }

    /// What bounds the ids issued under an id before this claim (ms since 1970, -1: none), and who
    /// recorded it, from the id's mark as read once the claim is held. Another's mark (another
    /// server, an earlier run of this one): all of it. A mark this very run recorded (it held the
    /// id before: a crash-restart, a lost lease, its worker restarted): the run's own ids are below
    /// its state word, which a crash-restart began above its mark file (every id of the crashed
    /// instance: each was issued under a mark made durable there first), so only the mark the run
    /// inherited at its first claim of the id counts; a record that does not say (0.2.0's betas):
    /// all of it.
    fn inherited(&self, recorded: Option<&MarkRecord>) -> (i64, String) {
        match recorded {
            None => (-1, String::new()),
            Some(r) if r.holder.same_run(&self.me) && self.switches.own_run => match r.inherited_ms {
                _ if !self.switches.inherited_mark => (-1, String::new()),
                Some(ms) => (ms, if ms >= 0 { r.inherited_from.clone() } else { String::new() }),
                None => (r.mark_ms, r.holder.describe()),
            },
            Some(r) => (r.mark_ms, r.holder.describe()),
        }
    }

    fn publish(&self, shared: &SharedState, held: &Held) {
        let s = &shared.claim;
        s.lease_id.store(held.lease, Relaxed);
        s.deadline_ms.store(held.deadline_ms, Relaxed);
        s.renewed_ms.store(held.sent_ms, Relaxed);
        s.recorded_mark_ms.store(held.mark_ms, Relaxed);
        s.recorded_mark_rev.store(held.mark_rev, Relaxed);
        s.last_held.store(held.id, Relaxed);
        // Ids are allowed while the clock's tick is below the tick the deadline falls in, so
        // never at or after the deadline.
        let until = if self.switches.deadline { self.layout.tick_of_mark(held.deadline_ms) } else { i64::MAX };
        shared.hot.grant.publish(grant::held(held.id, until, self.layout.machine_bits()));
    }

    /// The mark recorded for `id`, if any, and the revision of its key (0: none).
    fn read_mark(&self, etcd: &mut impl Etcd, id: i64) -> Result<(Option<MarkRecord>, i64), ClaimError> {
        let key = self.space.mark_key(id);
        let kvs = etcd.range(&key).map_err(ClaimError::Unreachable)?;
        match kvs.iter().find(|kv| kv.key == key) {
            None => Ok((None, 0)),
            Some(kv) => serde_json::from_str(&kv.value)
                .map(|m| (Some(m), kv.mod_revision))
                .map_err(|e| ClaimError::Unreadable { key: key.clone(), why: e.to_string() }),
        }
    }

    /// Records `mark_ms` as the mark of `held.id`, if the claim key is still attached to its
    /// lease, over the mark it last recorded (`held.mark_rev`): whether the claim is still held.
    /// `held.mark_ms` and `held.mark_rev` become what etcd holds. When the revision guard fails, a
    /// write of this holder's own that had timed out was applied late (nobody else writes the mark
    /// of an id while the claim is this lease's): the mark it left is read back, and written over
    /// once more only if it is below `mark_ms` (so a mark never comes down under a later one, and a
    /// late write never lowers a later one: it finds a later revision and does nothing).
    fn record_mark(&self, etcd: &mut impl Etcd, held: &mut Held, mark_ms: i64) -> Result<bool, ClaimError> {
        let record = MarkRecord {
            mark_ms,
            layout: self.layout.describe(),
            holder: self.me.clone(),
            inherited_ms: Some(held.inherited_ms),
            inherited_from: held.inherited_from.clone(),
        };
        let value = serde_json::to_string(&record).expect("a mark is plain data");
        let (claim_key, mark_key) = (self.space.claim_key(held.id), self.space.mark_key(held.id));
        let put = [Put { key: mark_key.clone(), value, lease: 0 }];
        for _ in 0..2 {
            let mut guards = vec![Guard::LeasedBy(claim_key.clone(), held.lease)];
            if self.switches.mark_revision {
                guards.push(Guard::Revision(mark_key.clone(), held.mark_rev));
            }
            let t = etcd.txn(&guards, &put).map_err(ClaimError::Unreachable)?;
            if t.succeeded {
                (held.mark_ms, held.mark_rev) = (mark_ms, t.revision);
                return Ok(true);
            }
            let claimed = etcd.range(&claim_key).map_err(ClaimError::Unreachable)?;
            if !claimed.iter().any(|kv| kv.key == claim_key && kv.lease == held.lease) {
                return Ok(false);
            }
            let (recorded, rev) = self.read_mark(etcd, held.id)?;
            // The mark key older than this holder's own last write of it (or gone): a key's
            // revision never comes down in one etcd, but in one restored from a snapshot taken
            // before that write (or the mark removed by hand). Nothing is written over it.
            if rev < held.mark_rev && self.switches.revision_check {
                let now = etcd.seen().unwrap_or_default();
                let seen = Seen { revision: held.mark_rev, ..self.seen.unwrap_or(now) };
                return Err(ClaimError::Restored { seen: seen.max(self.seen.unwrap_or(seen)), now });
            }
            (held.mark_ms, held.mark_rev) = (recorded.map_or(-1, |r| r.mark_ms), rev);
            if held.mark_ms >= mark_ms {
                return Ok(true);
            }
        }
        Err(ClaimError::Unreachable(format!(
            "the mark of machine id {} changed twice while it was being recorded; trying again",
            held.id
        )))
    }
}

type Claims = BTreeMap<i64, (Holder, i64)>;
type Marks = BTreeMap<i64, (MarkRecord, i64)>;
/// The reserved ids: by whom (None: a value pg_snowflake did not write, an operator's), and the
/// revision of the key.
type Reservations = BTreeMap<i64, (Option<Holder>, i64)>;

/// A space as read in one range: its claims (holder, lease), marks (record, revision),
/// reservations and layout.
pub struct SpaceView {
    claims: Claims,
    marks: Marks,
    reserved: Reservations,
    layout: Option<SpaceLayout>,
}

impl SpaceView {
    /// Whether `id` is reserved by `me` (the same server, whichever run).
    fn reserved_by(&self, id: i64, me: &Holder) -> bool {
        self.reserved.get(&id).is_some_and(|(r, _)| r.as_ref().is_some_and(|h| h.same_server(me)))
    }
}

/// The claims, marks and layout of a space, from a range read of its prefix. Keys of other forms
/// under the prefix are not ours and are left alone.
fn read_space(space: &Space, kvs: &[Kv]) -> Result<SpaceView, ClaimError> {
    let mut view =
        SpaceView { claims: Claims::new(), marks: Marks::new(), reserved: Reservations::new(), layout: None };
    for kv in kvs {
        let Some(rest) = kv.key.strip_prefix(&format!("{}/", space.prefix)) else { continue };
        let unreadable = |why: String| ClaimError::Unreadable { key: kv.key.clone(), why };
        if let Some(id) = rest.strip_prefix("claim/").and_then(|n| n.parse::<i64>().ok()) {
            let holder = serde_json::from_str(&kv.value).map_err(|e| unreadable(e.to_string()))?;
            view.claims.insert(id, (holder, kv.lease));
        } else if let Some(id) = rest.strip_prefix("mark/").and_then(|n| n.parse::<i64>().ok()) {
            let mark = serde_json::from_str(&kv.value).map_err(|e| unreadable(e.to_string()))?;
            view.marks.insert(id, (mark, kv.mod_revision));
        } else if let Some(id) = rest.strip_prefix("reserved/").and_then(|n| n.parse::<i64>().ok()) {
            // Any value reserves the id; pg_snowflake's names the server. A key written otherwise
            // than the protocol writes it (`reserved/007`) counts for the id too: passed over.
            let by = serde_json::from_str(&kv.value).ok().filter(|_| rest == format!("reserved/{id}"));
            let revision = if rest == format!("reserved/{id}") { kv.mod_revision } else { -1 };
            view.reserved.entry(id).and_modify(|r| *r = (None, -1)).or_insert((by, revision));
        } else if rest == "layout" {
            view.layout = Some(serde_json::from_str(&kv.value).map_err(|e| unreadable(e.to_string()))?);
        }
    }
    Ok(view)
}

/// The id to claim: the id this server reserved while its id was set by hand (moved to etcd, it
/// keeps it), else its own last id if it is free (a restart gets its id back), else its cluster's
/// last id if it is free (a promoted standby gets its old primary's), else the lowest free one;
/// never one another server reserved, nor one of `skip` (marks of another layout).
/// Refuses while an earlier run of this server still holds its id (claiming another would use up
/// the space, as Leaf's users found), and when every id is held or reserved.
pub fn choose(space: &Space, me: &Holder, view: &SpaceView, skip: &[i64]) -> Result<i64, ClaimError> {
    let (claims, marks) = (&view.claims, &view.marks);
    if let Some((&id, (earlier, _))) = claims.iter().find(|(_, (h, _))| h.same_server(me)) {
        return Err(ClaimError::OwnEarlierClaim { id, earlier: Box::new(earlier.clone()) });
    }
    // Its own reservation, if it has exactly one. (Several: it was renumbered while set by hand,
    // and which is its id now is not known here: none is taken.)
    let own: Vec<i64> = view.reserved.keys().copied().filter(|&id| view.reserved_by(id, me)).collect();
    let own = if let [id] = own[..] { Some(id) } else { None };
    let free = |id: &i64| {
        !claims.contains_key(id)
            && (0..space.size).contains(id)
            && !skip.contains(id)
            && (!view.reserved.contains_key(id) || own == Some(*id))
    };
    if let Some(id) = own.filter(free) {
        return Ok(id);
    }
    if let Some((&id, _)) = marks.iter().find(|(id, (m, _))| m.holder.same_server(me) && free(id)) {
        return Ok(id);
    }
    // Its cluster's (the same system identifier): a standby promoted takes the id its old primary
    // gave back, the one whose mark was recorded last.
    let cluster = marks.iter().filter(|(id, (m, _))| m.holder.system_identifier == me.system_identifier && free(id));
    if let Some((&id, _)) = cluster.max_by_key(|(_, (_, revision))| *revision) {
        return Ok(id);
    }
    (0..space.size).find(free).ok_or_else(|| ClaimError::Exhausted {
        size: space.size,
        holders: claims.iter().map(|(id, (h, _))| (*id, h.clone())).collect(),
    })
}

#[cfg(test)]
#[path = "claim_tests.rs"]
pub(crate) mod tests;
