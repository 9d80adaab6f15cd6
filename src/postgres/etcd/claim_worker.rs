//! The background worker "pg_snowflake machine id": with `snowflake.machine_id_source = 'etcd'`,
//! it claims this server's machine id in etcd, keeps the lease alive, records the high-water mark
//! there, and at a clean stop records the final mark and releases the id. The protocol is the
//! core's (`pg_snowflake_core::etcd::claim`); this worker moves its bytes over TCP and sleeps between
//! steps. Backends never talk to etcd: they read the grant word the worker publishes. With the
//! machine id set by hand and etcd's settings beside it, the worker reserves that id in the id
//! space instead (`Claimer::hold_reserved`), so that no leasing server takes it while a fleet moves
//! to etcd one server at a time, and the server issues under it only while that reservation is
//! confirmed (not while a leasing server holds the id or another server reserved it).
//! What the worker saw of etcd is kept beside the mark (`etcd_record`): a leasing server's highest
//! revision, a hand-set server's confirmed reservation.

use super::super::clock::wall_clock_ms;
use super::super::id_source::{self, EtcdConfig};
use super::super::lease_worker::reload_if_asked;
use super::super::{etcd_record, key_file, server_config, shared_memory, worker_exit};
use super::etcd_transport::{self, Tcp};
use super::tls::{ClientCert, Tls};
use pg_snowflake_core::calendar::format_utc;
use pg_snowflake_core::claim_status::Trouble;
use pg_snowflake_core::etcd::claim::{ClaimError, Claimer, Reserved, Step, Switches};
use pg_snowflake_core::etcd::etcd_gateway::parse_credentials;
use pg_snowflake_core::etcd::etcd_gateway::Gateway;
use pg_snowflake_core::etcd::etcd_record::{EtcdRecord, ReservedRecord};
use pg_snowflake_core::state::SharedState;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::prelude::*;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use zeroize::Zeroizing;

/// How often the worker looks at its lease (the core says when a renewal or a claim is due).
const PERIOD: Duration = Duration::from_millis(200);
/// How long the release at a stop may talk to etcd in all: a fast stop waits for it, whatever the
/// endpoints do.
const RELEASE_BUDGET: Duration = Duration::from_secs(4);

/// Registers the worker when the machine id is leased, or reserved in an id space; from
/// `_PG_init` while libraries preload.
pub fn register() {
    if server_config::etcd().is_none() && server_config::reservation().is_none() {
        return;
    }
    BackgroundWorkerBuilder::new("pg_snowflake machine id")
        .set_type("pg_snowflake machine id")
        .set_library("pg_snowflake")
        .set_function("pg_snowflake_claim_main")
        // Shared memory, and a connection to no database: that makes the worker a backend of its
        // own, which pg_stat_activity lists (backend_type 'pg_snowflake machine id') and
        // pg_terminate_backend() reaches: the hints' way to make it read its files again.
        .enable_spi_access()
        // A standby holds nothing: at promotion it claims like a starting server.
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

fn claimer(config: &EtcdConfig, shared: &SharedState) -> Option<Claimer> {
    let layout = *server_config::layout().ok()?;
    let space = config.space_of(&layout);
    let switches = Switches {
        deadline: !id_source::fault_no_lease_deadline(),
        mark_revision: !id_source::fault_mark_unguarded(),
        space_layout: !id_source::fault_space_layout_off(),
        reservations: !id_source::fault_reservations_off(),
        own_run: !id_source::fault_claim_whole_mark(),
        inherited_mark: !id_source::fault_inherited_mark_off(),
        hand_set_guard: !id_source::fault_hand_set_unguarded(),
        revision_check: !id_source::fault_restore_unchecked(),
        ..Switches::ALL_ON
    };
    let mut c = Claimer::new(space, etcd_record::me(), layout, switches);
    c.resume(shared);
    c.seen = record(config).seen();
    Some(c)
}

/// The record of this id space beside the mark (a new one when there is none, or it is of another
/// id space, or cannot be read: said once).
fn record(config: &EtcdConfig) -> EtcdRecord {
    let found = etcd_record::read().unwrap_or_else(|e| {
        pgrx::warning!("pg_snowflake: {} is not used: {e}", pg_snowflake_core::etcd::etcd_record::FILE_NAME);
        None
    });
    EtcdRecord::of(found, &config.prefix)
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_snowflake_claim_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    worker_exit::note_sigterm_sender();
    BackgroundWorker::connect_worker_to_spi(None, None);
    loop {
        let reserved = server_config::reservation().zip(server_config::generator().ok().map(|g| g.machine_id()));
        let claimer = match (server_config::etcd().or(reserved.map(|r| r.0)), shared_memory::shared()) {
            (Some(config), Some(shared)) => claimer(config, shared).map(|c| (config, shared, c)),
            _ => None,
        };
        match (claimer, reserved) {
            (Some((config, shared, claimer)), Some((_, id))) => reserve(config, shared, claimer, id),
            (Some((config, shared, claimer)), None) => hold(config, shared, claimer),
            // No layout: nothing can be issued, nothing to claim (the start logged why). Stay, so
            // that the postmaster does not start the worker again every second.
            (None, _) => while BackgroundWorker::wait_latch(None) {},
        }
        // Started again after its restart interval, unless the server is shutting down; started
        // over here while a smart shutdown waits for its clients (see `worker_exit`).
        match worker_exit::after_sigterm() {
            worker_exit::Next::Exit(code) => return worker_exit::exit(code),
            worker_exit::Next::StartOver => pgrx::log!(
                "pg_snowflake: the worker \"pg_snowflake machine id\" was terminated while a smart shutdown waits for its clients: it starts over at once (the postmaster starts no worker while it shuts down), and claims again"
            ),
        }
    }
}

/// The user and password of snowflake.etcd_credentials_file, read and checked as the key file of
/// public ids is (`key_file::read_private`); the error never quotes the file.
fn credentials(path: &str) -> Result<(String, Zeroizing<String>), String> {
    const SETTING: &str = "snowflake.etcd_credentials_file";
    let text = key_file::read_private(path, 4096).map_err(|p| p.message_for(SETTING, path))?;
    parse_credentials(&text).map_err(|why| format!("{SETTING} \"{path}\": {why}"))
}

/// The TLS set-up of https:// endpoints (their CA; the client certificate and its key, the key
/// read as every secret of ours), or why not.
fn tls(config: &EtcdConfig) -> Result<Option<Tls>, String> {
    if !config.endpoints[0].tls {
        return Ok(None);
    }
    let client = match (&config.cert_file, &config.key_file) {
        (Some(cert_file), Some(key_file)) => {
            const SETTING: &str = "snowflake.etcd_key_file";
            let key_pem = key_file::read_private(key_file, 64 * 1024).map_err(|p| p.message_for(SETTING, key_file))?;
            Some(ClientCert { cert_file, key_pem, key_file })
        }
        _ => None,
    };
    Tls::new(config.ca_file.as_deref(), client).map(Some)
}

/// How the worker reaches etcd: TLS and credentials set up from their files. Read once, at the
/// worker's start: a changed file takes a restart of the worker (pg_terminate_backend() on it) or
/// of the server.
fn gateway(config: &EtcdConfig) -> Result<Gateway<Tcp>, String> {
    let mut etcd = Gateway::new(config.endpoints.clone(), Tcp::new(tls(config)?));
    if id_source::fault_errors_by_key() {
        etcd = etcd.reading_errors_as_before();
    }
    Ok(match &config.credentials_file {
        Some(path) => {
            let (user, password) = credentials(path)?;
            etcd.with_credentials(user, password)
        }
        None => etcd,
    })
}

/// Whether ids may be issued at `now` (an id held, before its deadline); when that changes from
/// `was`, one line in the log: ids stopped (the deadline passed without a renewal, or the lease was
/// lost), or ids resume (after a stop; the first claim says so itself). `ever`: ids were issued.
fn say_whether_issuing(claimer: &Claimer, now: i64, was: bool, ever: &mut bool) -> bool {
    let held = claimer.held().filter(|h| now < h.deadline_ms);
    match (was, held) {
        (true, None) => match claimer.held() {
            Some(h) => pgrx::log!(
                "pg_snowflake: ids stopped: the lease of machine id {} reached its local deadline without a renewal; they resume once a renewal succeeds",
                h.id
            ),
            None => pgrx::log!("pg_snowflake: ids stopped: no machine id is held; they resume once one is claimed"),
        },
        (false, Some(h)) if *ever => pgrx::log!("pg_snowflake: ids resume, under machine id {}", h.id),
        _ => {}
    }
    *ever |= held.is_some();
    held.is_some()
}

/// How the worker reaches etcd, once its files can be used (said until fixed, read again every
/// second); None at SIGTERM.
fn gateway_when_ready(config: &EtcdConfig, shared: &SharedState) -> Option<Gateway<Tcp>> {
    let mut said = String::new();
    loop {
        match gateway(config) {
            Ok(etcd) => return Some(etcd),
            Err(e) => {
                shared.claim.set_error(Some(&e), Trouble::Setup, wall_clock_ms());
                if e != said {
                    pgrx::warning!("pg_snowflake: {e}");
                    said = e;
                }
                if !BackgroundWorker::wait_latch(Some(Duration::from_secs(1))) {
                    return None;
                }
                reload_if_asked();
            }
        }
    }
}

/// Reserves the machine id `id`, set by hand, in the id space, and holds the server to it
/// (`Claimer::hold_reserved`: no id under it until the reservation is confirmed, none while a
/// leasing server holds it or another server reserved it) until SIGTERM: looked at again every
/// TTL, and while it is refused or not confirmed yet, from one second on, backing off up to a TTL.
/// A confirmation is remembered beside the mark before any id is issued under it (the next start
/// of this data directory issues at once); each change is said once in the log, a refusal as a
/// WARNING.
fn reserve(config: &EtcdConfig, shared: &SharedState, mut claimer: Claimer, id: i64) {
    let Some(mut etcd) = gateway_when_ready(config, shared) else { return };
    let space = claimer.space.clone();
    let exchange = Duration::from_millis(space.step_budget_ms() as u64);
    let step = Duration::from_millis(space.renew_every_ms().max(space.step_budget_ms()) as u64);
    let (mut said, mut failures, mut next_ms) = (String::new(), 0u32, 0i64);
    // Whether the log says the id is reserved: once, and again when the reservation had to be
    // made again (removed by hand meanwhile) or came after an error.
    let mut reported = false;
    let mut kept = record(config);
    while BackgroundWorker::wait_latch(Some(PERIOD)) && !etcd_transport::stop_requested() {
        reload_if_asked();
        let now = wall_clock_ms();
        if now < next_ms {
            continue;
        }
        etcd.transport().begin(step, exchange, true);
        let (me, layout) = (claimer.me.clone(), claimer.layout.describe());
        let remember = |machine_id, taken: Option<i64>| {
            let r = Some(ReservedRecord { machine_id, by: me, layout, taken_ms: taken.unwrap_or(-1) });
            if kept.reserved != r {
                kept.reserved = r;
                if let Err(e) = etcd_record::write(&kept) {
                    // Ids are safe to issue all the same: the next start waits for a confirmation.
                    pgrx::log!("pg_snowflake: {e}");
                }
            }
        };
        match claimer.hold_reserved(&mut etcd, shared, id, now, remember) {
            Ok((done, notes)) => {
                for note in notes {
                    pgrx::log!("pg_snowflake: {note}");
                }
                if let Some(from) = claimer.taken_over_from() {
                    reported = true;
                    pgrx::warning!(
                        "pg_snowflake: machine id {id} (set by hand) was reserved in {} by another server of this cluster (the same system identifier), {}: taken over. If that server was this one's primary before a failover, nothing is to be done; if this server is a copy of it (a base backup, a cloned machine) and both run as primaries, they issue the same ids: give this one its own snowflake.machine_id (that server refuses ids from its next check of the reservation on)",
                        config.describe(),
                        from.describe()
                    );
                } else if !reported || done != Reserved::Already {
                    let how = match done {
                        Reserved::Now => "reserved",
                        Reserved::Already => "is reserved (by this server already)",
                        Reserved::TakenOver => {
                            "reserved, taken over from an earlier run of this data directory (another port)"
                        }
                    };
                    pgrx::log!(
                        "pg_snowflake: machine id {id} (set by hand) {how} in {}: leasing servers of the id space pass it over; ids are issued under it",
                        config.describe()
                    );
                    reported = true;
                }
                shared.claim.reserved_id.store(id, Relaxed);
                shared.claim.reservations.store(claimer.reservations_seen, Relaxed);
                said.clear();
                failures = 0;
                next_ms = now + space.ttl_s * 1000;
            }
            Err(e) => {
                // Refused: the next start waits for a confirmation too (a crash-restart would
                // otherwise issue at once beside the other server until the first check).
                if matches!(e.trouble(), Trouble::Reserved | Trouble::SpaceLayout) && kept.reserved.is_some() {
                    kept.reserved = None;
                    if let Err(e) = etcd_record::write(&kept) {
                        pgrx::log!("pg_snowflake: {e}");
                    }
                }
                let text = e.message(&space);
                if matches!(e, ClaimError::ReservedIdHeld { .. } | ClaimError::ReservedByAnother { .. }) {
                    shared.claim.reserved_id.store(-1, Relaxed);
                }
                if claimer.reservations_seen >= 0 {
                    shared.claim.reservations.store(claimer.reservations_seen, Relaxed);
                }
                if text != said {
                    match e {
                        ClaimError::ReserveRaced { .. } => pgrx::log!("pg_snowflake: {text}"),
                        _ => pgrx::warning!("pg_snowflake: {text}"),
                    }
                    said = text;
                }
                reported = false;
                failures = failures.saturating_add(1);
                next_ms = now + space.retry_ms(failures);
            }
        }
    }
}

/// Claims and holds the id until SIGTERM, then releases it.
fn hold(config: &EtcdConfig, shared: &SharedState, mut claimer: Claimer) {
    let Some(mut etcd) = gateway_when_ready(config, shared) else { return };
    // Every exchange of a step ends within half the lease's margin, and a step within a renewal
    // period: an endpoint that hangs is given up on long before the deadline, and the next is asked.
    let space = claimer.space.clone();
    let exchange = Duration::from_millis(space.step_budget_ms() as u64);
    let step = Duration::from_millis(space.renew_every_ms().max(space.step_budget_ms()) as u64);
    let mut said = String::new();
    // Whether ids may be issued (an id held, its deadline ahead), as the log last said: one line
    // when they stop, one when they resume.
    let mut issuing = false;
    let mut ever = false;
    // What this server saw of etcd, as written beside the mark.
    let mut kept = record(config);
    // (wait_latch sees a SIGTERM that came while it waited; stop_requested one that came during a
    // step, whose exchange it ended.)
    while BackgroundWorker::wait_latch(Some(PERIOD)) && !etcd_transport::stop_requested() {
        // (A reload reaches this worker as every other process: the log's settings, and the test
        // builds' clock offset, by which the deadlines are reckoned as the backends read the clock.)
        reload_if_asked();
        let now = wall_clock_ms();
        issuing = say_whether_issuing(&claimer, now, issuing, &mut ever);
        if now < claimer.next_due_ms() && claimer.held().is_some_and(|h| now >= h.sent_ms) {
            continue;
        }
        etcd.transport().begin(step, exchange, true);
        if claimer.seen.is_none() || shared.claim.trouble() == Trouble::Restored {
            // Refused for a restore of etcd: dealt with once the record is removed (after the
            // marks were raised).
            claimer.seen = record(config).seen();
        }
        let result = claimer.step(&mut etcd, shared, now);
        if claimer.seen.is_some() && claimer.seen != kept.seen() {
            kept.set_seen(claimer.seen.unwrap_or_default());
            if let Err(e) = etcd_record::write(&kept) {
                pgrx::log!("pg_snowflake: {e}");
            }
        }
        match result {
            Ok(Step::Claimed(h, notes)) => {
                for note in notes {
                    pgrx::log!("pg_snowflake: {note}");
                }
                pgrx::log!(
                    "pg_snowflake: machine id {} claimed in {} (lease {:x}, TTL {} s); its mark in etcd is now {} (the lease's deadline); ids issued under it before this server's run: {}",
                    h.id,
                    config.describe(),
                    h.lease,
                    config.ttl_s,
                    format_utc(h.mark_ms),
                    if h.inherited_ms < 0 {
                        "none".to_string()
                    } else {
                        format!("up to {}, recorded by {}", format_utc(h.inherited_ms), h.inherited_from)
                    }
                );
                said.clear();
            }
            Ok(_) => said.clear(),
            Err(e) => {
                let text = e.message(&claimer.space);
                // Once per change: a server that cannot reach etcd does not fill its log.
                if text != said {
                    pgrx::warning!("pg_snowflake: {text}");
                    said = text;
                }
            }
        }
        issuing = say_whether_issuing(&claimer, wall_clock_ms(), issuing, &mut ever);
    }
    // SIGTERM: a clean stop (or pg_terminate_backend). Nothing more is issued under the id; the
    // final mark is recorded and the lease revoked, so the next holder starts at once: within a
    // budget of its own, whatever the endpoints do, so that a fast stop is never held long.
    // (Each exchange a third of it at most: a member that hangs, one whose cluster is electing a
    // leader say, leaves time to ask the others.)
    etcd.transport().begin(RELEASE_BUDGET, RELEASE_BUDGET / 3, false);
    let id = claimer.held().map(|h| h.id);
    let released = claimer.release(&mut etcd, shared, wall_clock_ms);
    match &released {
        Ok(()) => pgrx::log!("pg_snowflake: machine id released in {}", config.describe()),
        Err(e) => pgrx::log!(
            "pg_snowflake: machine id not released ({}); its lease expires by itself",
            e.message(&claimer.space)
        ),
    }
    // What the status and a refusal say until a worker holds an id again: held is false, and why.
    if let Some(id) = id {
        let now = wall_clock_ms();
        let text = format!(
            "{} machine id {id} at {} (a SIGTERM: pg_terminate_backend() of it, or the server's stop); it starts again within a second, but not at the server's stop",
            if released.is_ok() { "released" } else { "gave up (its lease ends by itself)" },
            format_utc(now)
        );
        shared.claim.set_error(Some(&text), Trouble::Released, now);
    }
}
