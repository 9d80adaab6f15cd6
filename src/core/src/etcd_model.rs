//! A model of etcd for the tests (tests only): linearizable keys under one revision counter,
//! leases that expire late but never early, and clients that can be cut off. What the claim
//! protocol relies on, and nothing else: every call is atomic at the model's time `now_ms`.
//!
//! And what a real etcd and its network do to a call besides ([`Fault`], one call at a time): an
//! error answer (in etcd 3.4's or 3.6's form: the gateway reads both as errors, so here the call
//! fails and nothing is applied), an answer lost (applied, no answer), a request held on the way
//! and applied later (its client gave up: [`EtcdModel::apply_held`]), a leader change (every
//! lease's expiry pushed out by its TTL, as a new leader does), and an expired auth token (the
//! gateway authenticates again and repeats the call: applied once).
//!
//! And, for a negative control, a gateway that misreads errors ([`EtcdModel::misread_errors`]).
//!
//! And what an operator can do to it: restore it from a snapshot ([`EtcdModel::snapshot`],
//! [`EtcdModel::restore`]), as `etcdctl snapshot restore` does: every key and lease as they were
//! then, the revision with them (every answer's header says it), the cluster id the same.

use crate::claim::{Etcd, Guard, Kv, Put, Seen, Txn};
use std::collections::BTreeMap;

/// What happens to the next call of any client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// An error answer (3.4: `{"error": ..., "code": 14}`; 3.6: HTTP 503, `{"code": 14, ...}`):
    /// not applied, the call fails.
    ErrorAnswer,
    /// Applied, and its answer lost: the call fails.
    AnswerLost,
    /// Held on the way: the call fails now, and the request is applied when the test says.
    Held,
    /// The token expired: the gateway authenticates again and repeats the call, which succeeds.
    TokenExpired,
}

/// A request held on the way, to be applied late.
#[derive(Clone, Debug)]
enum Request {
    KeepAlive(i64),
    Revoke(i64),
    Txn(Vec<Guard>, Vec<Put>, Vec<String>),
}

/// The store as a snapshot holds it (`etcdctl snapshot save`).
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    kv: BTreeMap<String, (String, i64, i64)>,
    revision: i64,
    leases: BTreeMap<i64, (i64, i64)>,
}

impl Snapshot {
    pub(crate) fn revision(&self) -> i64 {
        self.revision
    }
}

#[derive(Clone, Default)]
pub(crate) struct EtcdModel {
    /// Real time, ms.
    pub now_ms: i64,
    /// key -> (value, lease, mod revision)
    kv: BTreeMap<String, (String, i64, i64)>,
    /// The store's revision: one up at every change (a put, a deletion by a lease's end).
    revision: i64,
    /// The cluster's id, as every answer's header gives it.
    pub cluster_id: u64,
    /// lease -> (ttl ms, expires at)
    leases: BTreeMap<i64, (i64, i64)>,
    next_lease: i64,
    /// How late etcd expires a lease (its leader's checks run every 500 ms; a new leader extends
    /// every lease): set by the test before each call, never negative.
    pub late_ms: i64,
    /// Every call fails (the whole cluster unreachable).
    pub down: bool,
    /// What happens to the next call (then none).
    pub fault: Option<Fault>,
    /// Requests held on the way, oldest first.
    held: Vec<Request>,
    /// Calls answered with an error, answers lost, requests held and applied late, tokens renewed.
    pub faults_done: [u64; 4],
    /// The negative control of "errors read as errors": an error answer to a read comes back as
    /// an empty answer (a range finds no key, a keepalive finds no lease), as 0.2.0's gateway read
    /// etcd 3.6's error form (an HTTP 503 whose body has a `code` and no `error` key).
    pub misread_errors: bool,
}

impl EtcdModel {
    /// A model at real time `now_ms`, with nothing in it.
    pub fn at(now_ms: i64) -> EtcdModel {
        EtcdModel { now_ms, cluster_id: 0xcd11_7e57_0000_0001, ..Default::default() }
    }

    /// The store as it is now (`etcdctl snapshot save`).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot { kv: self.kv.clone(), revision: self.revision, leases: self.leases.clone() }
    }

    /// Restored from `snapshot` (`etcdctl snapshot restore`, the members started on it): every key
    /// and lease as then, the revision with them, the cluster id the same (the same members and
    /// token); a lease lives a whole TTL from now, as under a new leader. Requests held on the way
    /// still arrive, at the restored store.
    pub fn restore(&mut self, snapshot: &Snapshot) {
        self.kv = snapshot.kv.clone();
        self.revision = snapshot.revision;
        self.leases = snapshot.leases.clone();
        self.next_lease = self.next_lease.max(self.leases.keys().max().copied().unwrap_or(0));
        self.leader_change();
    }

    /// Expires the leases due by now, deleting their keys.
    pub fn expire(&mut self) {
        let now = self.now_ms;
        let gone: Vec<i64> = self.leases.iter().filter(|(_, (_, at))| *at <= now).map(|(l, _)| *l).collect();
        for lease in gone {
            self.drop_lease(lease);
        }
    }

    fn drop_lease(&mut self, lease: i64) {
        self.leases.remove(&lease);
        let before = self.kv.len();
        self.kv.retain(|_, (_, l, _)| *l != lease);
        if self.kv.len() < before {
            self.revision += 1;
        }
    }

    /// Whether `key` is attached to `lease` and the lease is alive now.
    pub fn held_by(&mut self, key: &str, lease: i64) -> bool {
        self.expire();
        self.kv.get(key).is_some_and(|(_, l, _)| *l == lease) && self.leases.contains_key(&lease)
    }

    /// Every key under `prefix` with its value, as stored now (no call: for the tests' checks).
    pub fn entries<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.kv
            .range(prefix.to_string()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, (v, _, _))| (k.as_str(), v.as_str()))
    }

    pub fn value(&self, key: &str) -> Option<&str> {
        self.kv.get(key).map(|(v, _, _)| v.as_str())
    }

    /// The value of `key` and the revision of its last change.
    pub fn value_at(&self, key: &str) -> Option<(&str, i64)> {
        self.kv.get(key).map(|(v, _, r)| (v.as_str(), *r))
    }

    /// A new leader: every lease lives a whole TTL from now at least (etcd's lease promotion).
    pub fn leader_change(&mut self) {
        let now = self.now_ms;
        for (ttl, at) in self.leases.values_mut() {
            *at = (*at).max(now + *ttl);
        }
    }

    /// How many requests are held on the way.
    pub fn held_requests(&self) -> usize {
        self.held.len()
    }

    /// Applies the oldest request held on the way, now (its client gave up long ago).
    pub fn apply_held(&mut self) -> bool {
        self.apply_held_at(0)
    }

    /// Applies the latest request held on the way, now: requests held on the way arrive in any
    /// order.
    pub fn apply_latest_held(&mut self) -> bool {
        self.apply_held_at(self.held.len().saturating_sub(1))
    }

    fn apply_held_at(&mut self, at: usize) -> bool {
        if at >= self.held.len() {
            return false;
        }
        let request = self.held.remove(at);
        self.expire();
        self.faults_done[2] += 1;
        match request {
            Request::KeepAlive(lease) => {
                self.keep_alive_now(lease);
            }
            Request::Revoke(lease) => self.drop_lease(lease),
            Request::Txn(guards, puts, deletes) => {
                let _ = self.txn_now(&guards, &puts, &deletes);
            }
        }
        true
    }

    /// A client of this model, cut off (every call fails) when `cut`.
    pub fn client(&mut self, cut: bool) -> Client<'_> {
        Client { etcd: self, cut, seen: None }
    }

    fn keep_alive_now(&mut self, lease: i64) -> i64 {
        let (now, late) = (self.now_ms, self.late_ms.max(0));
        match self.leases.get_mut(&lease) {
            Some((ttl, at)) => {
                *at = (*at).max(now + *ttl + late);
                *ttl / 1000
            }
            None => 0,
        }
    }

    fn txn_now(&mut self, guards: &[Guard], puts: &[Put], deletes: &[String]) -> Result<Txn, String> {
        let holds = guards.iter().all(|g| match g {
            Guard::Absent(k) => !self.kv.contains_key(k),
            Guard::LeasedBy(k, lease) => self.kv.get(k).is_some_and(|(_, l, _)| l == lease),
            Guard::Revision(k, rev) => self.kv.get(k).map_or(0, |(_, _, r)| *r) == *rev,
        });
        if !holds {
            return Ok(Txn { succeeded: false, revision: self.revision });
        }
        for p in puts {
            if p.lease != 0 && !self.leases.contains_key(&p.lease) {
                // etcd refuses a put on a lease it does not have ("requested lease not found").
                return Err(
                    "etcd at http://model:2379: HTTP 404: etcdserver: requested lease not found (code 5)".into()
                );
            }
        }
        if !puts.is_empty() || deletes.iter().any(|k| self.kv.contains_key(k)) {
            self.revision += 1;
        }
        for p in puts {
            self.kv.insert(p.key.clone(), (p.value.clone(), p.lease, self.revision));
        }
        for k in deletes {
            self.kv.remove(k);
        }
        Ok(Txn { succeeded: true, revision: self.revision })
    }
}

pub(crate) struct Client<'a> {
    etcd: &'a mut EtcdModel,
    cut: bool,
    /// The header of the last answer to a range or a transaction.
    seen: Option<Seen>,
}

impl Client<'_> {
    /// The model, if this call reaches it, and the fault it meets (taken: one call only).
    fn reach(&mut self) -> Result<(&mut EtcdModel, Option<Fault>), String> {
        if self.cut || self.etcd.down {
            return Err("etcd at http://model:2379: connection refused".into());
        }
        self.etcd.expire();
        let fault = self.etcd.fault.take();
        Ok((self.etcd, fault))
    }

    /// Runs `apply` under the fault met, as a real etcd and network would: `held` is the request
    /// as it is held on the way, `misread` what a gateway that misreads errors makes of an error
    /// answer (reads only: see [`EtcdModel::misread_errors`]).
    fn call<T>(
        &mut self,
        held: Request,
        misread: Option<T>,
        apply: impl FnOnce(&mut EtcdModel) -> Result<T, String>,
    ) -> Result<T, String> {
        let (e, fault) = self.reach()?;
        match fault {
            None => apply(e),
            Some(Fault::TokenExpired) => {
                e.faults_done[3] += 1;
                apply(e)
            }
            Some(Fault::ErrorAnswer) => {
                e.faults_done[0] += 1;
                match misread.filter(|_| e.misread_errors) {
                    Some(empty) => Ok(empty),
                    None => Err("etcd at http://model:2379: HTTP 503: etcdserver: leader changed (code 14)".into()),
                }
            }
            Some(Fault::AnswerLost) => {
                e.faults_done[1] += 1;
                let _ = apply(e);
                Err("etcd at http://model:2379: no answer within 1 s".into())
            }
            Some(Fault::Held) => {
                e.held.push(held);
                Err("etcd at http://model:2379: no answer within 1 s".into())
            }
        }
    }
}

impl Etcd for Client<'_> {
    fn grant(&mut self, ttl_s: i64) -> Result<i64, String> {
        // (A grant held on the way makes a lease nobody knows, which expires: nothing to model.)
        self.call(Request::KeepAlive(0), None, |e| {
            e.next_lease += 1;
            let at = e.now_ms + ttl_s * 1000 + e.late_ms.max(0);
            e.leases.insert(e.next_lease, (ttl_s * 1000, at));
            Ok(e.next_lease)
        })
    }

    fn keep_alive(&mut self, lease: i64) -> Result<i64, String> {
        self.call(Request::KeepAlive(lease), Some(0), |e| Ok(e.keep_alive_now(lease)))
    }

    fn revoke(&mut self, lease: i64) -> Result<(), String> {
        self.call(Request::Revoke(lease), None, |e| {
            e.drop_lease(lease);
            Ok(())
        })
    }

    fn range(&mut self, prefix: &str) -> Result<Vec<Kv>, String> {
        let kvs = self.call(Request::KeepAlive(0), Some(vec![]), |e| {
            Ok(e.kv
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, (v, l, r))| Kv { key: k.clone(), value: v.clone(), lease: *l, mod_revision: *r })
                .collect())
        })?;
        self.seen = Some(Seen { cluster_id: self.etcd.cluster_id, revision: self.etcd.revision });
        Ok(kvs)
    }

    fn txn_and_delete(&mut self, guards: &[Guard], puts: &[Put], deletes: &[String]) -> Result<Txn, String> {
        let request = Request::Txn(guards.to_vec(), puts.to_vec(), deletes.to_vec());
        let t = self.call(request, None, |e| e.txn_now(guards, puts, deletes))?;
        self.seen = Some(Seen { cluster_id: self.etcd.cluster_id, revision: self.etcd.revision });
        Ok(t)
    }

    fn seen(&self) -> Option<Seen> {
        self.seen
    }
}
