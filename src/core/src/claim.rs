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
//!   writer's lease.
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

use crate::layout::Layout;
use crate::state::{grant, SharedState};
#[cfg(loom)]
use loom::sync::atomic::fence;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
#[cfg(not(loom))]
use std::sync::atomic::fence;
use std::sync::atomic::Ordering::{Relaxed, Release, SeqCst};

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
    shared.hot.grant.store(grant::NOBODY, Release);
    fence(SeqCst);
    clock().saturating_add(layout.tick_ms())
}

/// One key of a range read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    pub key: String,
    pub value: String,
    /// The etcd lease the key is attached to, 0: none.
    pub lease: i64,
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
}

/// What the protocol needs of etcd (the v3 API). An `Err` is a failure to get an answer
/// (unreachable, timed out, refused): the text names the endpoint.
pub trait Etcd {
    /// A new lease of `ttl_s` seconds: its id.
    fn grant(&mut self, ttl_s: i64) -> Result<i64, String>;
    /// Renews `lease`: its TTL, or 0 or less when etcd no longer has it.
    fn keep_alive(&mut self, lease: i64) -> Result<i64, String>;
    fn revoke(&mut self, lease: i64) -> Result<(), String>;
    /// Every key that starts with `prefix`.
    fn range(&mut self, prefix: &str) -> Result<Vec<Kv>, String>;
    /// Applies `puts` if every guard holds: whether it did.
    fn txn(&mut self, guards: &[Guard], puts: &[Put]) -> Result<bool, String>;
}

/// Who holds a machine id: enough to tell a server from every other and to find it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// PostgreSQL's database system identifier (as text: it is a u64).
    pub system_identifier: String,
    pub host: String,
    pub port: i32,
    pub data_directory: String,
}

impl Holder {
    /// For messages: the server, as an operator finds it.
    pub fn describe(&self) -> String {
        format!(
            "{}:{} (data directory {}, system identifier {})",
            self.host, self.port, self.data_directory, self.system_identifier
        )
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
    /// How early the local deadline comes before the TTL ends: a fifth of it, at least half a
    /// second (clock rates differ between servers, and the worker may be scheduled late).
    pub fn margin_ms(&self) -> i64 {
        (self.ttl_s * 1000 / 5).max(500)
    }
    /// How often the lease is renewed: three renewals a TTL, so that two can fail.
    pub fn renew_every_ms(&self) -> i64 {
        self.ttl_s * 1000 / 3
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
}

impl Switches {
    pub const ALL_ON: Switches = Switches { deadline: true, margin: true, recorded_mark: true };
}

/// Why a step could not hold an id; each text names what to look at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimError {
    /// etcd could not be asked (every endpoint failed).
    Unreachable(String),
    /// Every id of the space is held.
    Exhausted { size: i64, holders: Vec<(i64, Holder)> },
    /// This server's own earlier run still holds its id (a crash): its lease expires within the TTL.
    OwnEarlierClaim { id: i64 },
    /// Another server claimed the chosen id first: claim again at once.
    Raced { id: i64 },
    /// The lease is gone or the claim key is another's: the id was lost.
    Lost { id: i64, why: String },
    /// The space's mark of the id was written under another layout.
    LayoutDiffers { id: i64, recorded: String, ours: String },
    /// A key of the space that is not ours to read.
    Unreadable { key: String, why: String },
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
            ClaimError::OwnEarlierClaim { id } => format!(
                "machine id {id} of the id space {} is still held by an earlier run of this server; its lease expires within {} s",
                space.prefix, space.ttl_s
            ),
            ClaimError::Raced { id } => format!("another server claimed machine id {id} first; claiming again"),
            ClaimError::Lost { id, why } => format!("the lease of machine id {id} was lost: {why}"),
            ClaimError::LayoutDiffers { id, recorded, ours } => format!(
                "machine id {id} of the id space {} was used under another layout ({recorded}; this server's: {ours})",
                space.prefix
            ),
            ClaimError::Unreadable { key, why } => format!("the etcd key {key} could not be read: {why}"),
        }
    }
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
    /// The mark recorded in etcd for `id`.
    pub mark_ms: i64,
}

/// What a step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Claimed(Held),
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
}

impl Claimer {
    pub fn new(space: Space, me: Holder, layout: Layout, switches: Switches) -> Claimer {
        Claimer { space, me, layout, switches, held: None }
    }

    pub fn held(&self) -> Option<&Held> {
        self.held.as_ref()
    }

    /// Takes over the claim a worker of this same server held before it ended (the grant is in
    /// shared memory, the lease in the status): renewing it keeps the id, and its ids flow on.
    pub fn resume(&mut self, shared: &SharedState) {
        let lease = shared.claim.lease_id.load(Relaxed);
        let word = shared.hot.grant.load(Relaxed);
        if lease == 0 || word == grant::NOBODY || word == grant::FOREVER {
            return;
        }
        let (id, _) = grant::parts(word, self.layout.machine_bits());
        self.held = Some(Held {
            id,
            lease,
            sent_ms: shared.claim.renewed_ms.load(Relaxed),
            deadline_ms: shared.claim.deadline_ms.load(Relaxed),
            mark_ms: shared.claim.recorded_mark_ms.load(Relaxed),
        });
    }

    /// Does what is due at wall-clock `now_ms`: claims an id when none is held, renews the lease
    /// when a renewal is due. Errors are recorded in the status and returned (the caller logs
    /// them and steps again later); a lost lease takes the grant away at once.
    pub fn step(&mut self, etcd: &mut impl Etcd, shared: &SharedState, now_ms: i64) -> Result<Step, ClaimError> {
        let result = match &self.held {
            None => self.claim(etcd, shared, now_ms).map(Step::Claimed),
            Some(h) if now_ms - h.sent_ms >= self.space.renew_every_ms() || now_ms < h.sent_ms => {
                self.renew(etcd, shared, now_ms).map(Step::Renewed)
            }
            Some(_) => Ok(Step::Idle),
        };
        let status = &shared.claim;
        match &result {
            Ok(Step::Idle) => {}
            Ok(Step::Claimed(_) | Step::Renewed(_)) => status.set_error(None, now_ms),
            Err(e) => {
                if let ClaimError::Lost { .. } = e {
                    status.losses.fetch_add(1, Relaxed);
                }
                if self.held.is_some() {
                    status.renewal_failures.fetch_add(1, Relaxed);
                }
                status.set_error(Some(&e.message(&self.space)), now_ms);
            }
        }
        result
    }

    fn claim(&mut self, etcd: &mut impl Etcd, shared: &SharedState, now_ms: i64) -> Result<Held, ClaimError> {
        let sent_ms = now_ms;
        let space = self.space.clone();
        let kvs = etcd.range(&format!("{}/", space.prefix)).map_err(ClaimError::Unreachable)?;
        let (claims, marks) = read_space(&space, &kvs)?;
        let id = choose(&space, &self.me, &claims, &marks)?;
        let lease = etcd.grant(space.ttl_s).map_err(ClaimError::Unreachable)?;
        let me = serde_json::to_string(&self.me).expect("a holder is plain data");
        let won = etcd
            .txn(&[Guard::Absent(space.claim_key(id))], &[Put { key: space.claim_key(id), value: me, lease }])
            .map_err(|e| {
                let _ = etcd.revoke(lease);
                ClaimError::Unreachable(e)
            })?;
        if !won {
            let _ = etcd.revoke(lease);
            return Err(ClaimError::Raced { id });
        }
        // Held now, so nobody else can write the id's mark: read it again, it is final.
        let recorded = self.read_mark(etcd, id).inspect_err(|_| {
            let _ = etcd.revoke(lease);
        })?;
        if let Some(r) = &recorded {
            let ours = self.layout.describe();
            if r.layout != ours {
                let _ = etcd.revoke(lease);
                return Err(ClaimError::LayoutDiffers { id, recorded: r.layout.clone(), ours });
            }
        }
        let from = recorded.as_ref().map(|r| (r.mark_ms, r.holder.describe()));
        shared.claim.set_inherited(from.as_ref().map(|(ms, who)| (*ms, who.as_str())));
        let old_mark_ms = recorded.map_or(-1, |r| r.mark_ms);
        let deadline_ms = space.deadline_ms(sent_ms, self.switches);
        let mark_ms = old_mark_ms.max(deadline_ms);
        if !self.record_mark(etcd, id, lease, mark_ms).inspect_err(|_| {
            let _ = etcd.revoke(lease);
        })? {
            return Err(ClaimError::Lost { id, why: "the claim key changed while it was being taken".into() });
        }
        // Every tick up to the mark is used: the ids issued under this id before, whoever issued them.
        if old_mark_ms >= 0 && self.switches.recorded_mark {
            shared.use_up_to(self.layout.tick_of_mark(old_mark_ms), self.layout.sequence_bits());
        }
        let held = Held { id, lease, sent_ms, deadline_ms, mark_ms };
        shared.claim.claims.fetch_add(1, Relaxed);
        self.publish(shared, &held);
        self.held = Some(held.clone());
        Ok(held)
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
        let mark_ms = held.mark_ms.max(deadline_ms);
        if !self.record_mark(etcd, held.id, held.lease, mark_ms).map_err(|e| match e {
            ClaimError::Unreachable(w) => ClaimError::Unreachable(w),
            other => other,
        })? {
            return Err(self.lose(shared, "its claim key is gone or attached to another lease"));
        }
        held.sent_ms = sent_ms;
        held.deadline_ms = deadline_ms;
        held.mark_ms = mark_ms;
        shared.claim.renewals.fetch_add(1, Relaxed);
        self.publish(shared, &held);
        self.held = Some(held.clone());
        Ok(held)
    }

    /// At a clean stop (or when the postmaster is gone, its backends perhaps not yet): takes the
    /// grant away, records the final mark (the last tick issued on, at most the deadline) and
    /// revokes the lease, which deletes the claim key at once: the next holder waits for no TTL
    /// and no lease-long mark.
    ///
    /// What the final mark must cover when the grant is taken away: see [`stop_issuing`].
    pub fn release(
        &mut self,
        etcd: &mut impl Etcd,
        shared: &SharedState,
        clock: impl FnOnce() -> i64,
    ) -> Result<(), ClaimError> {
        let stopped_ms = stop_issuing(shared, &self.layout, clock);
        let Some(held) = self.held.take() else { return Ok(()) };
        let final_ms = stopped_ms.min(held.deadline_ms).max(shared.last_issued_ms(&self.layout).unwrap_or(-1));
        // Never above what is recorded (ids stop at the deadline, which the mark covers).
        let final_ms = final_ms.min(held.mark_ms);
        let recorded = self.record_mark(etcd, held.id, held.lease, final_ms);
        let revoked = etcd.revoke(held.lease).map_err(ClaimError::Unreachable);
        shared.claim.lease_id.store(0, Relaxed);
        recorded.and(revoked)
    }

    fn lose(&mut self, shared: &SharedState, why: &str) -> ClaimError {
        shared.hot.grant.store(grant::NOBODY, Release);
        shared.claim.lease_id.store(0, Relaxed);
        let id = self.held.take().map_or(-1, |h| h.id);
        ClaimError::Lost { id, why: why.into() }
    }

    fn publish(&self, shared: &SharedState, held: &Held) {
        let s = &shared.claim;
        s.lease_id.store(held.lease, Relaxed);
        s.deadline_ms.store(held.deadline_ms, Relaxed);
        s.renewed_ms.store(held.sent_ms, Relaxed);
        s.recorded_mark_ms.store(held.mark_ms, Relaxed);
        // Ids are allowed while the clock's tick is below the tick the deadline falls in, so
        // never at or after the deadline.
        let until = if self.switches.deadline { self.layout.tick_of_mark(held.deadline_ms) } else { i64::MAX };
        shared.hot.grant.store(grant::held(held.id, until, self.layout.machine_bits()), Release);
    }

    fn read_mark(&self, etcd: &mut impl Etcd, id: i64) -> Result<Option<MarkRecord>, ClaimError> {
        let key = self.space.mark_key(id);
        let kvs = etcd.range(&key).map_err(ClaimError::Unreachable)?;
        match kvs.iter().find(|kv| kv.key == key) {
            None => Ok(None),
            Some(kv) => serde_json::from_str(&kv.value)
                .map(Some)
                .map_err(|e| ClaimError::Unreadable { key: key.clone(), why: e.to_string() }),
        }
    }

    /// Writes the mark of `id` if the claim key is still attached to `lease`: whether it was.
    fn record_mark(&self, etcd: &mut impl Etcd, id: i64, lease: i64, mark_ms: i64) -> Result<bool, ClaimError> {
        let record = MarkRecord { mark_ms, layout: self.layout.describe(), holder: self.me.clone() };
        let value = serde_json::to_string(&record).expect("a mark is plain data");
        etcd.txn(
            &[Guard::LeasedBy(self.space.claim_key(id), lease)],
            &[Put { key: self.space.mark_key(id), value, lease: 0 }],
        )
        .map_err(ClaimError::Unreachable)
    }
}

type Claims = BTreeMap<i64, Holder>;
type Marks = BTreeMap<i64, MarkRecord>;

/// The claims and marks of a space, from a range read of its prefix. Keys of other forms under
/// the prefix are not ours and are left alone.
fn read_space(space: &Space, kvs: &[Kv]) -> Result<(Claims, Marks), ClaimError> {
    let (mut claims, mut marks) = (Claims::new(), Marks::new());
    for kv in kvs {
        let Some(rest) = kv.key.strip_prefix(&format!("{}/", space.prefix)) else { continue };
        let unreadable = |why: String| ClaimError::Unreadable { key: kv.key.clone(), why };
        if let Some(id) = rest.strip_prefix("claim/").and_then(|n| n.parse::<i64>().ok()) {
            claims.insert(id, serde_json::from_str(&kv.value).map_err(|e| unreadable(e.to_string()))?);
        } else if let Some(id) = rest.strip_prefix("mark/").and_then(|n| n.parse::<i64>().ok()) {
            marks.insert(id, serde_json::from_str(&kv.value).map_err(|e| unreadable(e.to_string()))?);
        }
    }
    Ok((claims, marks))
}

/// The id to claim: this server's own last id if it is free (a restart gets its id back), else
/// the lowest free one. Refuses while an earlier run of this server still holds its id (a crash:
/// claiming another would use up the space, as Leaf's users found), and when every id is held.
pub fn choose(space: &Space, me: &Holder, claims: &Claims, marks: &Marks) -> Result<i64, ClaimError> {
    if let Some((&id, _)) = claims.iter().find(|(_, h)| *h == me) {
        return Err(ClaimError::OwnEarlierClaim { id });
    }
    let free = |id: &i64| !claims.contains_key(id) && (0..space.size).contains(id);
    if let Some((&id, _)) = marks.iter().find(|(id, m)| m.holder == *me && free(id)) {
        return Ok(id);
    }
    (0..space.size).find(free).ok_or_else(|| ClaimError::Exhausted {
        size: space.size,
        holders: claims.iter().map(|(id, h)| (*id, h.clone())).collect(),
    })
}

#[cfg(test)]
#[path = "claim_tests.rs"]
pub(crate) mod tests;
