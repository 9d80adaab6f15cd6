//! A model of etcd for the tests (tests only): linearizable keys under one revision counter,
//! leases that expire late but never early, and clients that can be cut off. What the claim
//! protocol relies on, and nothing else: every call is atomic at the model's time `now_ms`.

use crate::claim::{Etcd, Guard, Kv, Put};
use std::collections::BTreeMap;

#[derive(Default)]
pub(crate) struct EtcdModel {
    /// Real time, ms.
    pub now_ms: i64,
    /// key -> (value, lease)
    kv: BTreeMap<String, (String, i64)>,
    /// lease -> (ttl ms, expires at)
    leases: BTreeMap<i64, (i64, i64)>,
    next_lease: i64,
    /// How late etcd expires a lease (its leader's checks run every 500 ms; a new leader extends
    /// every lease): set by the test before each call, never negative.
    pub late_ms: i64,
    /// Every call fails (the whole cluster unreachable).
    pub down: bool,
}

impl EtcdModel {
    /// A model at real time `now_ms`, with nothing in it.
    pub fn at(now_ms: i64) -> EtcdModel {
        EtcdModel { now_ms, ..Default::default() }
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
        self.kv.retain(|_, (_, l)| *l != lease);
    }

    /// Whether `key` is attached to `lease` and the lease is alive now.
    pub fn held_by(&mut self, key: &str, lease: i64) -> bool {
        self.expire();
        self.kv.get(key).is_some_and(|(_, l)| *l == lease) && self.leases.contains_key(&lease)
    }

    pub fn value(&self, key: &str) -> Option<&str> {
        self.kv.get(key).map(|(v, _)| v.as_str())
    }

    /// A client of this model, cut off (every call fails) when `cut`.
    pub fn client(&mut self, cut: bool) -> Client<'_> {
        Client { etcd: self, cut }
    }
}

pub(crate) struct Client<'a> {
    etcd: &'a mut EtcdModel,
    cut: bool,
}

impl Client<'_> {
    fn reach(&mut self) -> Result<&mut EtcdModel, String> {
        if self.cut || self.etcd.down {
            return Err("etcd at http://model:2379: connection refused".into());
        }
        self.etcd.expire();
        Ok(self.etcd)
    }
}

impl Etcd for Client<'_> {
    fn grant(&mut self, ttl_s: i64) -> Result<i64, String> {
        let e = self.reach()?;
        e.next_lease += 1;
        let at = e.now_ms + ttl_s * 1000 + e.late_ms.max(0);
        e.leases.insert(e.next_lease, (ttl_s * 1000, at));
        Ok(e.next_lease)
    }

    fn keep_alive(&mut self, lease: i64) -> Result<i64, String> {
        let e = self.reach()?;
        let (now, late) = (e.now_ms, e.late_ms.max(0));
        Ok(match e.leases.get_mut(&lease) {
            Some((ttl, at)) => {
                *at = (*at).max(now + *ttl + late);
                *ttl / 1000
            }
            None => 0,
        })
    }

    fn revoke(&mut self, lease: i64) -> Result<(), String> {
        self.reach()?.drop_lease(lease);
        Ok(())
    }

    fn range(&mut self, prefix: &str) -> Result<Vec<Kv>, String> {
        let e = self.reach()?;
        Ok(e.kv
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, (v, l))| Kv { key: k.clone(), value: v.clone(), lease: *l })
            .collect())
    }

    fn txn(&mut self, guards: &[Guard], puts: &[Put]) -> Result<bool, String> {
        let e = self.reach()?;
        let holds = guards.iter().all(|g| match g {
            Guard::Absent(k) => !e.kv.contains_key(k),
            Guard::LeasedBy(k, lease) => e.kv.get(k).is_some_and(|(_, l)| l == lease),
        });
        if !holds {
            return Ok(false);
        }
        for p in puts {
            if p.lease != 0 && !e.leases.contains_key(&p.lease) {
                // etcd refuses a put on a lease it does not have ("requested lease not found").
                return Err("etcd: requested lease not found".into());
            }
        }
        for p in puts {
            e.kv.insert(p.key.clone(), (p.value.clone(), p.lease));
        }
        Ok(true)
    }
}
