//! The id-space simulation (tests only): several servers racing for the machine ids of one etcd id
//! space, seeded and deterministic, over the real `claim` protocol and the real generator, against
//! a model of etcd (`etcd_model`: linearizable keys, leases that expire late but never early).
//! Random steps: real time passing, each server's worker stepping (claim, renew), backends
//! issuing ids, servers paused (SIGSTOP, a VM pause) for up to three TTLs, servers cut off from
//! etcd and back, etcd down and back, crashes (the server comes back with nothing of its memory
//! and no disk: a pod rescheduled), clean stops. Each server's clock runs at its own rate (up to
//! 3% off) from its own offset (up to 5 s off).
//!
//! Invariants, over the whole history:
//! - no id is ever issued twice, across all servers;
//! - per machine id, every id is above every id issued under it before, whichever server issued it;
//! - a server issues under a machine id only while etcd holds the claim for its lease (exclusive);
//! - with etcd reachable and nobody paused, every server holds an id within a bounded time.
//!
//! `SIM_RUNS` (default 300) histories of `SIM_STEPS` (default 600) steps from `SIM_SEED` on.

use crate::claim::tests::{holder, layout, server, space};
use crate::claim::{Claimer, Space, Switches};
use crate::etcd_model::EtcdModel;
use crate::generator::Generator;
use crate::lifecycle_sim::Rng;
use crate::state::{grant, SharedState};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;

const SERVERS: usize = 5;
const BITS: u32 = 3; // 8 ids for 5 servers
const EPOCH: i64 = crate::claim::tests::EPOCH;

struct Server {
    shared: SharedState,
    claimer: Claimer,
    /// Clock = real * (1000 + rate) / 1000 + offset.
    rate_permille: i64,
    offset_ms: i64,
    paused_until: i64,
    cut: bool,
    /// Incarnations: a crash or stop starts another.
    incarnation: u32,
}

impl Server {
    fn clock(&self, real_ms: i64) -> i64 {
        EPOCH + (real_ms - EPOCH) * (1000 + self.rate_permille) / 1000 + self.offset_ms
    }
    fn start(n: usize, switches: Switches) -> (SharedState, Claimer) {
        (server(), Claimer::new(space(BITS), holder(n as u32), layout(BITS), switches))
    }
}

struct Sim {
    rng: Rng,
    etcd: EtcdModel,
    servers: Vec<Server>,
    switches: Switches,
    issued: HashSet<i64>,
    last_by_machine: BTreeMap<i64, i64>,
    log: Vec<String>,
}

impl Sim {
    fn new(seed: u64, switches: Switches) -> Sim {
        let mut rng = Rng(seed);
        let servers = (0..SERVERS)
            .map(|n| {
                let (shared, claimer) = Server::start(n, switches);
                Server {
                    shared,
                    claimer,
                    rate_permille: rng.range(-30, 30),
                    offset_ms: rng.range(-5_000, 5_000),
                    paused_until: 0,
                    cut: false,
                    incarnation: 0,
                }
            })
            .collect();
        Sim {
            rng,
            etcd: EtcdModel::at(EPOCH + 10_000),
            servers,
            switches,
            issued: HashSet::new(),
            last_by_machine: BTreeMap::new(),
            log: vec![],
        }
    }

    fn now(&self) -> i64 {
        self.etcd.now_ms
    }

    fn worker_step(&mut self, n: usize) {
        let now = self.now();
        let s = &mut self.servers[n];
        if s.paused_until > now {
            return;
        }
        self.etcd.late_ms = self.rng.range(0, 700);
        let at = s.clock(now);
        let r = s.claimer.step(&mut self.etcd.client(s.cut), &s.shared, at);
        self.log.push(format!("{now}: server {n} worker at {at}: {r:?}"));
    }

    /// A backend of server `n` issues up to `k` ids; checks every promise on each.
    fn issue(&mut self, n: usize, k: usize) -> Result<(), String> {
        let now = self.now();
        let s = &self.servers[n];
        if s.paused_until > now {
            return Ok(());
        }
        let g = Generator::new(layout(BITS), 0).unwrap();
        let space: Space = space(BITS);
        for _ in 0..k {
            let at = s.clock(now);
            let Ok((id, _)) = g.try_issue(&s.shared, at) else { break };
            let machine = layout(BITS).decode(id).unwrap().machine_id;
            self.log.push(format!("{now}: server {n} issued {id} (machine {machine}) at {at}"));
            if !self.issued.insert(id) {
                return Err(format!("id {id} issued twice (server {n}, machine id {machine})"));
            }
            if let Some(last) = self.last_by_machine.insert(machine, id) {
                if id < last {
                    return Err(format!("id {id} of machine id {machine} (server {n}) is below {last}, issued before"));
                }
            }
            let lease = s.shared.claim.lease_id.load(Relaxed);
            if !self.etcd.held_by(&space.claim_key(machine), lease) {
                return Err(format!("server {n} issued {id} under machine id {machine} without holding it in etcd"));
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<(), String> {
        let advance = self.rng.range(0, 400);
        self.etcd.now_ms += advance;
        let n = self.rng.below(SERVERS as u64) as usize;
        match self.rng.below(100) {
            0..=39 => self.worker_step(n),
            40..=79 => {
                let k = self.rng.range(1, 5) as usize;
                self.issue(n, k)?
            }
            80..=84 => {
                let until = self.now() + self.rng.range(1_000, 9_000);
                self.log.push(format!("{}: server {n} paused until {until}", self.now()));
                self.servers[n].paused_until = until;
            }
            85..=89 => {
                self.servers[n].cut = !self.servers[n].cut;
                self.log.push(format!("{}: server {n} cut off: {}", self.now(), self.servers[n].cut));
            }
            90..=91 => {
                self.etcd.down = !self.etcd.down;
                self.log.push(format!("{}: etcd down: {}", self.now(), self.etcd.down));
            }
            92..=94 => {
                // A crash: memory and disk gone, the lease left to expire in etcd.
                let (shared, claimer) = Server::start(n, self.switches);
                let s = &mut self.servers[n];
                (s.shared, s.claimer, s.paused_until) = (shared, claimer, 0);
                s.incarnation += 1;
                self.log.push(format!("{}: server {n} crashed", self.now()));
            }
            95..=96 => {
                let now = self.now();
                let s = &mut self.servers[n];
                if s.paused_until <= now {
                    let at = s.clock(now);
                    let r = s.claimer.release(&mut self.etcd.client(s.cut), &s.shared, || at);
                    let (shared, claimer) = Server::start(n, self.switches);
                    (s.shared, s.claimer) = (shared, claimer);
                    s.incarnation += 1;
                    self.log.push(format!("{now}: server {n} stopped cleanly: {r:?}"));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Heals everything and runs the workers: within two TTLs and the latest expiry every
    /// server holds an id of its own.
    fn settle(&mut self) -> Result<(), String> {
        self.etcd.down = false;
        for s in &mut self.servers {
            s.cut = false;
            s.paused_until = 0;
        }
        let ttl_ms = space(BITS).ttl_s * 1000;
        let end = self.now() + 2 * ttl_ms + 700 + 1_000;
        while self.now() < end {
            self.etcd.now_ms += 100;
            for n in 0..SERVERS {
                self.worker_step(n);
            }
        }
        let mut held = HashSet::new();
        for (n, s) in self.servers.iter().enumerate() {
            let word = s.shared.hot.grant.load(Relaxed);
            if word == grant::NOBODY {
                return Err(format!("server {n} holds no id after the space settled: {:?}", s.shared.claim.error()));
            }
            if !held.insert(grant::parts(word, BITS).0) {
                return Err(format!("two servers hold machine id {}", grant::parts(word, BITS).0));
            }
        }
        Ok(())
    }
}

/// Ids issued, claims won and leases lost over the histories run, so that a test can show the
/// histories do what they are for.
static TOTALS: [std::sync::atomic::AtomicU64; 3] = [const { std::sync::atomic::AtomicU64::new(0) }; 3];

fn run(seed: u64, steps: usize, switches: Switches) -> Result<(), (String, Vec<String>)> {
    let mut sim = Sim::new(seed, switches);
    let result = run_sim(&mut sim, steps);
    TOTALS[0].fetch_add(sim.issued.len() as u64, Relaxed);
    for s in &sim.servers {
        TOTALS[1].fetch_add(s.shared.claim.claims.load(Relaxed), Relaxed);
        TOTALS[2].fetch_add(s.shared.claim.losses.load(Relaxed), Relaxed);
    }
    result
}

fn run_sim(sim: &mut Sim, steps: usize) -> Result<(), (String, Vec<String>)> {
    for _ in 0..steps {
        sim.step().map_err(|e| (e, std::mem::take(&mut sim.log)))?;
    }
    sim.settle().map_err(|e| (e, std::mem::take(&mut sim.log)))?;
    // And ids flow again under what is held.
    for n in 0..SERVERS {
        sim.issue(n, 3).map_err(|e| (e, std::mem::take(&mut sim.log)))?;
    }
    Ok(())
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn id_space_sim_keeps_every_promise() {
    let (first, runs, steps) = (env("SIM_SEED", 1), env("SIM_RUNS", 300), env("SIM_STEPS", 600) as usize);
    for seed in first..first + runs {
        if let Err((broken, log)) = run(seed, steps, Switches::ALL_ON) {
            let tail = log.iter().rev().take(40).rev().cloned().collect::<Vec<_>>().join("\n");
            panic!("seed {seed}: {broken}\nlast steps:\n{tail}");
        }
    }
    let [ids, claims, losses] = TOTALS.each_ref().map(|t| t.load(Relaxed));
    eprintln!("{runs} histories of {steps} steps: {ids} ids, {claims} claims, {losses} leases lost");
    assert!(
        ids > runs * 50 && claims > runs * SERVERS as u64 && losses > runs / 10,
        "the histories exercise the protocol"
    );
}

/// Each mechanism switched off: the simulation finds a history that breaks a promise.
#[test]
fn id_space_sim_finds_each_mechanism_switched_off() {
    for (name, switches) in [
        ("the deadline", Switches { deadline: false, ..Switches::ALL_ON }),
        ("the margin", Switches { margin: false, ..Switches::ALL_ON }),
        ("the recorded mark", Switches { recorded_mark: false, ..Switches::ALL_ON }),
    ] {
        let found = (1..=2_000).find_map(|seed| run(seed, 600, switches).err().map(|(e, _)| (seed, e)));
        let (seed, broken) = found.unwrap_or_else(|| panic!("with {name} off, no history broke a promise"));
        eprintln!("{name} off: seed {seed}: {broken}");
    }
}
