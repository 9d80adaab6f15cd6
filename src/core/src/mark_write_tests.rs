//! The order of a mark write and what each failed step means, over a host that records its I/O.

use super::*;
use crate::host::Limits;
use crate::layout::tests::seed_layout;
use crate::mark_writer::{try_take, Taken};
use crate::state::SharedState;
use std::sync::atomic::Ordering::Relaxed;

const MARK: i64 = 1_764_000_000_000;

/// A host that records each step and each I/O call, and fails the one it is told to.
#[derive(Default)]
struct Recorder {
    log: Vec<String>,
    fail: Option<&'static str>,
    /// Where the WAL record ends; `None`: the record skipped (a test build's switch).
    wal: Option<u64>,
    /// No WAL at all (PostgreSQL 14).
    no_wal: bool,
    lease_sync: bool,
    /// Polls before the standbys confirm; `None`: never.
    confirm_after: Option<u32>,
    polls: u32,
    now_us: u64,
    record_first: bool,
    text: String,
    record: Option<LeaseRecord>,
}

impl Recorder {
    fn io(&mut self, what: &'static str) -> Result<(), Error> {
        self.log.push(what.into());
        if self.fail == Some(what) {
            return Err(Error::MarkWrite { reason: format!("{what} failed"), os_error: Some(5) });
        }
        Ok(())
    }
}

impl MarkIo for Recorder {
    fn identity(&mut self) -> Result<Identity, Error> {
        self.io("identity")?;
        Ok(Identity { machine_id: 7, leased_from: None, layout: seed_layout(0), system_identifier: 42 })
    }
    fn at_step(&mut self, step: WriteStep) -> Result<(), Error> {
        self.log.push(format!("@{}", step.name()));
        if self.fail == Some(step.name()) {
            return Err(Error::MarkWrite { reason: "the process ended".into(), os_error: None });
        }
        Ok(())
    }
    fn write_temp_file(&mut self, text: &str) -> Result<(), Error> {
        self.text = text.into();
        self.io("temp")
    }
    fn replace_mark_file(&mut self) -> Result<(), Error> {
        self.io("rename")
    }
    fn logs_leases(&mut self) -> bool {
        !self.no_wal
    }
    fn insert_lease_record(&mut self, record: &[u8; crate::lease_record::LEN]) -> Result<Option<u64>, Error> {
        self.record = Some(LeaseRecord::decode(record).unwrap());
        self.io("insert")?;
        Ok(self.wal)
    }
    fn flush_wal(&mut self, end: u64) -> Result<(), Error> {
        assert_eq!(Some(end), self.wal);
        self.io("flush")
    }
    fn lease_sync(&mut self) -> bool {
        self.lease_sync
    }
    fn standbys_confirmed(&mut self, _: u64) -> bool {
        self.polls += 1;
        self.confirm_after.is_some_and(|n| self.polls > n)
    }
    fn sync_standby_names(&mut self) -> String {
        "s1".into()
    }
    fn record_first(&mut self) -> bool {
        self.record_first
    }
}

impl Clock for Recorder {
    fn now_ms(&mut self) -> i64 {
        MARK
    }
    fn now_us(&mut self) -> i64 {
        MARK * 1000
    }
    fn monotonic_us(&mut self) -> u64 {
        self.now_us
    }
}

impl Waiter for Recorder {
    fn spin(&mut self) {}
    fn sleep_ms(&mut self, ms: u64) {
        self.now_us += ms * 1000;
    }
}

impl Settings for Recorder {
    fn limits(&mut self) -> Limits {
        Limits { max_clock_wait_ms: 1000, max_clock_jump_ms: 0, max_mark_wait_ms: 50 }
    }
}

fn write(host: &mut Recorder, shared: &SharedState) -> Result<(), Error> {
    let Taken::Mine { writer, .. } = try_take(shared, 3, |_| true) else { panic!("the flag was free") };
    persist(host, MARK, &writer)
}

fn log(steps: &str) -> Vec<String> {
    steps.split_whitespace().map(String::from).collect()
}

#[test]
fn the_file_is_in_place_before_the_record_is_inserted_and_both_before_the_mark_is_published() {
    let shared = SharedState::starting_at(None, 12, 0);
    let mut host = Recorder { wal: Some(99), ..Default::default() };
    write(&mut host, &shared).unwrap();
    assert_eq!(
        host.log,
        log("@flag_taken identity @before_file temp @before_rename rename @before_wal_insert insert @before_wal_flush flush @before_publish")
    );
    let on_disk = mark_file::parse(&host.text).unwrap();
    assert_eq!((on_disk.mark_unix_ms, on_disk.machine_id, on_disk.system_identifier), (MARK, Some(7), Some(42)));
    assert_eq!(
        host.record,
        Some(LeaseRecord { machine_id: 7, mark_unix_ms: MARK, layout: Some((&seed_layout(0)).into()), leased: false })
    );
}

#[test]
fn a_skipped_record_is_neither_flushed_nor_awaited() {
    let shared = SharedState::starting_at(None, 12, 0);
    let mut host = Recorder { wal: None, lease_sync: true, ..Default::default() };
    write(&mut host, &shared).unwrap();
    assert_eq!(host.log[host.log.len() - 3..], log("@before_wal_insert insert @before_publish"));
}

#[test]
fn a_server_without_the_lease_in_its_wal_never_says_it_writes_one() {
    let shared = SharedState::starting_at(None, 12, 0);
    let mut host = Recorder { wal: Some(99), no_wal: true, lease_sync: true, ..Default::default() };
    write(&mut host, &shared).unwrap();
    assert_eq!(host.log, log("@flag_taken identity @before_file temp @before_rename rename @before_publish"));
}

#[test]
fn with_lease_sync_the_mark_waits_for_the_standbys_confirmation() {
    let shared = SharedState::starting_at(None, 12, 0);
    let mut host = Recorder { wal: Some(99), lease_sync: true, confirm_after: Some(20), ..Default::default() };
    write(&mut host, &shared).unwrap();
    assert_eq!(host.polls, 21);
    assert_eq!(host.log[host.log.len() - 2..], log("@standby_wait @before_publish"));
    assert_eq!(shared.stats.standby_waits.load(Relaxed), 1);
}

#[test]
fn standbys_that_never_confirm_end_the_write_after_max_mark_wait_unpublished() {
    let shared = SharedState::starting_at(None, 12, 0);
    let mut host = Recorder { wal: Some(99), lease_sync: true, confirm_after: None, ..Default::default() };
    let e = write(&mut host, &shared).unwrap_err();
    assert_eq!(e, Error::StandbysDidNotConfirm { standby_names: "s1".into(), limit_ms: 50 });
    assert!((50_000..=52_000).contains(&host.now_us), "waited {} us", host.now_us);
    assert!(!host.log.iter().any(|s| s == "@before_publish"));
}

#[test]
fn a_failed_step_ends_the_write_there() {
    let full = log("@flag_taken identity @before_file temp @before_rename rename @before_wal_insert insert @before_wal_flush flush @before_publish");
    for (at, what) in full.iter().enumerate() {
        let shared = SharedState::starting_at(None, 12, 0);
        let what: &'static str = Box::leak(what.trim_start_matches('@').to_string().into_boxed_str());
        let mut host = Recorder { wal: Some(99), fail: Some(what), ..Default::default() };
        assert!(write(&mut host, &shared).is_err(), "{what} failed, and the write went on");
        assert_eq!(host.log, full[..=at], "{what} failed");
    }
}

#[test]
fn while_a_layout_change_is_refused_the_file_keeps_the_old_layout_and_the_record_names_the_new() {
    let shared = SharedState::starting_at(None, 12, 0);
    shared.refused.set(Some(&seed_layout(1)));
    let mut host = Recorder { wal: Some(99), ..Default::default() };
    write(&mut host, &shared).unwrap();
    assert_eq!(mark_file::parse(&host.text).unwrap().layout, Some((&seed_layout(1)).into()));
    assert_eq!(host.record.unwrap().layout, Some((&seed_layout(0)).into()));
}

#[test]
fn the_negative_control_of_finding_3_puts_the_record_first() {
    let shared = SharedState::starting_at(None, 12, 0);
    let mut host = Recorder { wal: Some(99), record_first: true, ..Default::default() };
    write(&mut host, &shared).unwrap();
    assert_eq!(
        host.log,
        log("@flag_taken identity @before_wal_insert insert @before_wal_flush flush @before_file temp @before_rename rename @before_publish")
    );
}
