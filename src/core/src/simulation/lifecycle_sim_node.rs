//! A server of the lifecycle simulation (tests only): its data directory (the mark file as its
//! bytes, the WAL's lease records, the last checkpoint), its settings, its clocks (a wall clock
//! and a monotonic clock that drift from real time at the server's own rate, the wall clock also
//! stepped), its faults, and the host its processes see (`SimHost`: the core's `host` traits over
//! all of that, with the points of a mark write at which a crash, a backend's death or a base
//! backup can come). The world (`lifecycle_sim`) decides what happens to it.

use crate::error::Error;
use crate::etcd::claim::Claimer;
use crate::etcd::etcd_record::EtcdRecord;
use crate::host::{Clock, Events, Limits, MarkStore, Processes, Recovery, Settings, Waiter};
use crate::layout::Layout;
use crate::lease::MAX_LEASE_MS;
use crate::lease_record::LeaseRecord;
use crate::lifecycle;
use crate::mark_file;
use crate::mark_write::{self, Identity, MarkIo};
use crate::mark_writer::{MarkWriter, WriteStep};
use crate::simulation::lifecycle_sim_etcd::Lease;
use crate::state::SharedState;
use std::sync::atomic::Ordering::Relaxed;

pub(crate) const EPOCH: i64 = 1_735_689_600_000; // 2025-01-01
pub(crate) const DAY_MS: i64 = 86_400_000;
pub(crate) const MAX_CLOCK_WAIT_MS: u64 = 1_000;
pub(crate) const MAX_MARK_WAIT_MS: u64 = 5_000;

/// The layouts a server can be set to: the default, then each field changed in turn.
pub(crate) fn layout(i: u8) -> Layout {
    let (epoch, unit, machine, sequence) = match i {
        0 => (EPOCH, 1, 10, 12),
        1 => (EPOCH, 10, 10, 12),              // snowflake.time_unit
        2 => (EPOCH + 30 * DAY_MS, 1, 10, 12), // snowflake.epoch
        3 => (EPOCH, 1, 8, 14),                // machine_bits (and sequence_bits)
        _ => (EPOCH, 1, 12, 10),               // sequence_bits (and machine_bits)
    };
    Layout::new(epoch, unit, machine, sequence).expect("a valid layout")
}
pub(crate) const LAYOUTS: u8 = 5;

#[derive(Clone, Default)]
pub(crate) struct Disk {
    pub(crate) file: Option<String>,
    pub(crate) wal: Vec<[u8; crate::lease_record::LEN]>,
    /// Where crash recovery replays from: the WAL after the last checkpoint.
    pub(crate) redo_from: usize,
    pub(crate) system_identifier: u64,
    /// `pg_snowflake.etcd`: what the server saw of the id space (a leasing server's revision, a
    /// hand-set server's confirmed reservation), copied with the data directory.
    pub(crate) etcd: Option<EtcdRecord>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    Primary,
    /// `received`: how many of its primary's WAL records it has received (its own WAL holds them).
    Standby {
        of: usize,
        received: usize,
    },
    /// An old primary after a failover: it must be rewound before it runs again.
    Deposed,
}

/// A base backup under way, from the server whose node holds it.
pub(crate) struct Backup {
    pub(crate) to: usize,
    pub(crate) checkpoint_at: Option<u8>,
    pub(crate) file_at: Option<u8>,
    /// The checkpoint's redo pointer, once taken: the copy replays the WAL from there.
    pub(crate) redo: Option<usize>,
    /// The mark file as copied, once copied.
    pub(crate) file: Option<Option<String>>,
    /// Issue 42's finding 3: the checkpoint came after a mark write's WAL record, and the file
    /// was copied before that write's rename.
    pub(crate) between: bool,
    /// The checkpoint or the copy of the file came in the middle of a mark write.
    pub(crate) in_write: bool,
}

/// The highest mark a data directory knows of, if any: its file's, and every lease record in its
/// WAL from the last checkpoint's redo pointer on (a start replays them, a promotion replayed
/// them; the records before it are in the file, but for a write whose rename never came, and
/// under whose mark nothing was issued).
pub(crate) fn known_mark(disk: &Disk) -> Option<i64> {
    let file = disk.file.as_deref().and_then(|t| mark_file::parse(t).ok()).map(|r| r.mark_unix_ms);
    let wal = disk.wal[disk.redo_from..].iter().map(|r| LeaseRecord::decode(r).expect("a record").mark_unix_ms);
    file.into_iter().chain(wal).max()
}

pub(crate) struct Node {
    pub(crate) disk: Disk,
    pub(crate) machine_id: i64,
    pub(crate) layout: u8,
    pub(crate) accept: String,
    pub(crate) role: Role,
    pub(crate) running: Option<Box<SharedState>>,
    pub(crate) lineage: usize,
    pub(crate) offset_ms: i64,
    pub(crate) write_ms: u32,
    pub(crate) fail_errno: Option<i32>,
    /// How many records of its own WAL this run of a standby has replayed.
    pub(crate) applied: usize,
    pub(crate) backup: Option<Backup>,
    /// snowflake.max_clock_jump, as reloaded last.
    pub(crate) max_jump_ms: u32,
    /// The clock's offset when this run of the server last wrote a mark: the guard measures a
    /// jump from there. None before its first write since start.
    pub(crate) jump_from: Option<i64>,
    /// A call was refused for a clock jump, and no id issued since.
    pub(crate) jump_refused: bool,
    pub(crate) crash_at: Option<u8>,
    pub(crate) die_at: Option<u8>,
    /// Process ids: each start gives its backends new ones; the ones that exited are gone.
    pub(crate) pid_base: i32,
    pub(crate) dead: Vec<i32>,
    /// A leased server's side of the claim protocol; `None`: its machine id is set by hand.
    pub(crate) lease: Option<Lease>,
    /// A hand-set server's reservation worker in this run (in the histories where hand-set
    /// servers reserve their ids), and its current holding of its id in the space (opened at its
    /// first id after a confirmation, or after a start that its record let issue at once).
    pub(crate) reserver: Option<Claimer>,
    pub(crate) hand_holding: Option<i64>,
    /// The clock's rate (thousandths off real time), and the drift it made before the rate last
    /// changed and since when it runs at this rate (real time, us).
    pub(crate) rate_permille: i64,
    pub(crate) drift_us: i64,
    pub(crate) rate_since_us: i64,
    /// Stopped (SIGSTOP) until this real time (us).
    pub(crate) frozen_until_us: i64,
    /// The backend that had read its clock when the server was stopped: the reading (us), and
    /// whether etcd held the claim of the grant it read then.
    pub(crate) paused_call: Option<(i64, bool)>,
    /// Backends stalled in the middle of `snowflake_nextval()` (descheduled, swapped out, a slow
    /// page fault: issue 56), oldest first: they resume at a [`Step::Resume`] of their server, or
    /// die with it.
    ///
    /// [`Step::Resume`]: crate::simulation::lifecycle_sim::Step
    pub(crate) stalled: Vec<Stalled>,
}

/// A backend stalled between two steps of an attempt to issue (`Generator::load_grant`, `take`,
/// `confirm`): the clock reading it made first, the grant it loaded, the lease of that grant and
/// whether etcd held its claim then, and the word it took if it got that far.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stalled {
    pub(crate) reading_us: i64,
    pub(crate) grant: crate::state::GrantSeen,
    pub(crate) lease_id: i64,
    pub(crate) held: bool,
    pub(crate) taken: Option<crate::generator::Taken>,
}

impl Node {
    /// The wall clock at real time `real_us`: real time, its drift, and every step it was set by.
    pub(crate) fn clock_us(&self, real_us: i64) -> i64 {
        self.monotonic_us(real_us) + self.offset_ms * 1000
    }

    /// The monotonic clock at real time `real_us`: it drifts as the wall clock does, and is never
    /// stepped.
    pub(crate) fn monotonic_us(&self, real_us: i64) -> i64 {
        real_us + self.drift_us + (real_us - self.rate_since_us) * self.rate_permille / 1000
    }

    pub(crate) fn frozen(&self, real_us: i64) -> bool {
        real_us < self.frozen_until_us
    }

    /// Who the mark file and the lease records name, as the shell says it: the machine id set by
    /// hand, or, leased, the id `shared` says it held last and the id space.
    pub(crate) fn writer(&self, shared: &SharedState) -> mark_file::Writer<'static> {
        match self.lease {
            Some(_) => mark_file::Writer {
                machine_id: shared.claim.last_held.load(Relaxed),
                leased_from: Some(crate::simulation::lifecycle_sim_etcd::PREFIX),
            },
            None => mark_file::Writer { machine_id: self.machine_id, leased_from: None },
        }
    }

    /// A checkpoint of a running server: crash recovery replays the WAL after it. On a standby a
    /// restartpoint, which never passes what it replayed.
    pub(crate) fn checkpoint(&mut self) {
        self.disk.redo_from = match self.role {
            Role::Standby { .. } => self.applied,
            _ => self.disk.wal.len(),
        };
    }
}

/// What a mark write did to the process that ran it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Lives,
    ServerCrashed,
    BackendDied,
}

/// The simulated world as one process of one server sees it.
pub(crate) struct SimHost<'a> {
    pub(crate) now_us: &'a mut i64,
    pub(crate) node: &'a mut Node,
    pub(crate) pid: i32,
    pub(crate) layout: Layout,
    pub(crate) fate: Fate,
    /// The point of the mark write under way at which a base backup's checkpoint came, if any.
    pub(crate) checkpoint_here: Option<u8>,
    /// The next point of the mark write under way (see [`SimHost::at_step`]).
    pub(crate) point: u8,
    /// The temporary file written, not renamed yet.
    pub(crate) temp: Option<String>,
    /// The WAL record inserted and not flushed yet, which a checkpoint flushes.
    pub(crate) inserted: Option<[u8; crate::lease_record::LEN]>,
    /// The clock reading of a backend that was stopped with its server, for its next clock read;
    /// the clock reads since (fresh ones), and whether the id issued, if any, was issued on it.
    pub(crate) reading_us: Option<i64>,
    pub(crate) fresh_reads: u32,
    pub(crate) issued_on_reading: bool,
    /// Who its marks name (see [`Node::writer`]).
    pub(crate) writer: mark_file::Writer<'static>,
}

impl Clock for SimHost<'_> {
    fn now_ms(&mut self) -> i64 {
        self.now_us().div_euclid(1000)
    }
    /// The node's clock, or, once, the reading a backend made before its server was stopped.
    fn now_us(&mut self) -> i64 {
        self.reading_us.take().unwrap_or_else(|| {
            self.fresh_reads += 1;
            self.node.clock_us(*self.now_us)
        })
    }
    fn monotonic_us(&mut self) -> u64 {
        self.node.monotonic_us(*self.now_us) as u64
    }
}

impl Waiter for SimHost<'_> {
    fn spin(&mut self) {
        *self.now_us += 50;
    }
    fn sleep_ms(&mut self, ms: u64) {
        *self.now_us += ms as i64 * 1000;
    }
}

impl SimHost<'_> {
    /// `shared`: the server's (its machine id held last names the writer of its marks).
    pub(crate) fn new<'a>(
        now_us: &'a mut i64,
        node: &'a mut Node,
        pid: i32,
        layout: Layout,
        shared: &SharedState,
    ) -> SimHost<'a> {
        let writer = node.writer(shared);
        SimHost {
            now_us,
            writer,
            node,
            pid,
            layout,
            fate: Fate::Lives,
            checkpoint_here: None,
            point: 0,
            temp: None,
            inserted: None,
            reading_us: None,
            fresh_reads: 0,
            issued_on_reading: false,
        }
    }

    /// A mark write at point `step`: a base backup under way takes its checkpoint or copies the
    /// mark file here if it was to, and the write stops here if a fault says so.
    pub(crate) fn ends_at(&mut self, step: u8) -> bool {
        let n = &mut *self.node;
        if let Some(b) = n.backup.as_mut() {
            if b.redo.is_none() && b.checkpoint_at == Some(step) {
                // The checkpoint's redo pointer: after every record inserted, which its own WAL
                // flush makes durable.
                if let Some(record) = self.inserted.take() {
                    n.disk.wal.push(record);
                }
                b.redo = Some(n.disk.wal.len());
                b.in_write = true;
                n.disk.redo_from = n.disk.wal.len(); // the server's own checkpoint too
                self.checkpoint_here = Some(step);
            }
            if b.redo.is_some() && b.file.is_none() && b.file_at == Some(step) {
                b.file = Some(n.disk.file.clone());
                b.in_write = true;
                // Finding 3's window, had the record come first: the checkpoint and the copy of
                // the file in one write.
                b.between |= self.checkpoint_here.is_some();
            }
        }
        if self.node.crash_at == Some(step) {
            self.node.crash_at = None;
            self.fate = Fate::ServerCrashed;
        } else if self.node.die_at == Some(step) {
            self.node.die_at = None;
            self.fate = Fate::BackendDied;
        }
        self.fate != Fate::Lives
    }

    /// A write fault of this server (`snowflake` writes, redo's included): ENOSPC and EIO fail
    /// every write; EPERM (`chattr +i` on the mark) fails only the rename over the mark.
    pub(crate) fn failed(&self, rename: bool) -> Result<(), Error> {
        match self.node.fail_errno {
            Some(errno) if rename || errno != EPERM => {
                Err(Error::MarkWrite { reason: format!("os error {errno}"), os_error: Some(errno) })
            }
            _ => Ok(()),
        }
    }
}

pub(crate) const EPERM: i32 = 1;

impl MarkStore for SimHost<'_> {
    /// The core's mark write (`mark_write::persist`, as the shell runs it) over the simulated disk.
    fn persist_mark(&mut self, unix_ms: i64, writer: &MarkWriter) -> Result<(), Error> {
        (self.checkpoint_here, self.point, self.temp, self.inserted) = (None, 0, None, None);
        mark_write::persist(self, unix_ms, writer)?;
        self.node.jump_from = Some(self.node.offset_ms);
        Ok(())
    }
}

impl MarkIo for SimHost<'_> {
    fn identity(&mut self) -> Result<Identity, Error> {
        Ok(Identity {
            machine_id: self.writer.machine_id,
            leased_from: self.writer.leased_from,
            layout: self.layout,
            system_identifier: self.node.disk.system_identifier,
        })
    }

    /// The points of a write, numbered in the order the core takes them (the flag and the standby
    /// wait aside): with the file first, 0 before the temporary file, 1 before the rename, 2
    /// before the WAL insert, 3 inserted and not flushed, 4 flushed and not published. A crash,
    /// a backend's death, a base backup's checkpoint or its copy of the file can come at each.
    fn at_step(&mut self, step: WriteStep) -> Result<(), Error> {
        if matches!(step, WriteStep::FlagTaken | WriteStep::StandbyWait) {
            return Ok(());
        }
        let point = self.point;
        self.point += 1;
        match self.ends_at(point) {
            true => Err(Error::MarkWrite { reason: "the process ended".into(), os_error: None }),
            false => Ok(()),
        }
    }

    fn write_temp_file(&mut self, text: &str) -> Result<(), Error> {
        self.failed(false)?;
        *self.now_us += self.node.write_ms as i64 * 1000;
        self.temp = Some(text.into());
        Ok(())
    }

    fn replace_mark_file(&mut self) -> Result<(), Error> {
        self.failed(true)?;
        self.node.disk.file = self.temp.take();
        Ok(())
    }

    fn logs_leases(&mut self) -> bool {
        true
    }

    fn insert_lease_record(&mut self, record: &[u8; crate::lease_record::LEN]) -> Result<Option<u64>, Error> {
        if matches!(self.node.role, Role::Standby { .. }) {
            // XLogInsert during recovery: "cannot make new WAL entries during recovery" (ERROR).
            return Err(Error::MarkWrite {
                reason: "cannot make new WAL entries during recovery".into(),
                os_error: None,
            });
        }
        self.inserted = Some(*record);
        Ok(Some(self.node.disk.wal.len() as u64 + 1))
    }

    /// Lost if the process ends before (unless a checkpoint flushed it).
    fn flush_wal(&mut self, _: u64) -> Result<(), Error> {
        if let Some(record) = self.inserted.take() {
            self.node.disk.wal.push(record);
        }
        Ok(())
    }

    /// Synchronous standbys are modelled by the promotion (`Promote { lag: None }`), not waited for.
    fn lease_sync(&mut self) -> bool {
        false
    }
    fn standbys_confirmed(&mut self, _: u64) -> bool {
        true
    }
    fn sync_standby_names(&mut self) -> String {
        String::new()
    }

    /// The negative control of finding 3.
    fn record_first(&mut self) -> bool {
        lifecycle::off(lifecycle::Off::FileFirst)
    }
}

impl Recovery for SimHost<'_> {
    /// A standby; a starting server's crash recovery runs before it takes calls.
    fn in_recovery(&mut self) -> bool {
        matches!(self.node.role, Role::Standby { .. })
    }
}

impl Processes for SimHost<'_> {
    fn this_process(&mut self) -> i32 {
        self.pid
    }
    fn process_exists(&mut self, pid: i32) -> bool {
        !self.node.dead.contains(&pid)
    }
}

impl Events for SimHost<'_> {
    fn clock_went_back(&mut self, _: i64) {}
    /// Right after the generator's compare-and-swap: whether it issued on a reading made before
    /// the server was stopped (no clock read since).
    fn count_issued(&mut self, shared: &SharedState) {
        shared.hot.issued.fetch_add(1, Relaxed);
        self.issued_on_reading = self.fresh_reads == 0;
    }
}

impl Settings for SimHost<'_> {
    fn limits(&mut self) -> Limits {
        Limits {
            max_clock_wait_ms: MAX_CLOCK_WAIT_MS,
            max_clock_jump_ms: self.node.max_jump_ms as u64,
            max_mark_wait_ms: MAX_MARK_WAIT_MS,
        }
    }
}

/// The longest a call may take: a clock behind (max_clock_wait, plus a lease after a restart),
/// a tick, the mark writes (max_mark_wait, and the last write that began before it ran out).
pub(crate) fn call_bound_us(node: &Node) -> i64 {
    let tick = layout(node.layout).tick_ms();
    (MAX_CLOCK_WAIT_MS as i64 + MAX_LEASE_MS + tick + MAX_MARK_WAIT_MS as i64 + 2 * node.write_ms as i64 + 100) * 1000
}

/// The data directory's mark file as redo writes it (the real `lifecycle::replay` decides what and
/// when): it fails as the server's other writes do.
pub(crate) struct RedoFile<'a>(&'a mut Node, mark_file::Writer<'static>);

impl crate::host::MarkFile for RedoFile<'_> {
    fn write_mark_file(&mut self, unix_ms: i64, stamped: &Layout) -> Result<(), Error> {
        if let Some(errno) = self.0.fail_errno {
            return Err(Error::MarkWrite { reason: format!("os error {errno}"), os_error: Some(errno) });
        }
        let n = &mut *self.0;
        n.disk.file = Some(mark_file::render(unix_ms, self.1, stamped, n.disk.system_identifier));
        Ok(())
    }
}

/// One lease record replayed (the real `lifecycle::replay`); `Err`: recovery stopped at it.
pub(crate) fn replay_into(n: &mut Node, shared: &SharedState, l: &Layout, record: &LeaseRecord) -> Result<(), Error> {
    let writer = n.writer(shared);
    lifecycle::replay(shared, l, record, &mut RedoFile(n, writer))
}
