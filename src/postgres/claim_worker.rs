//! The background worker "pg_snowflake machine id": with `snowflake.machine_id_source = 'etcd'`,
//! it claims this server's machine id in etcd, keeps the lease alive, records the high-water mark
//! there, and at a clean stop records the final mark and releases the id. The protocol is the
//! core's (`pg_snowflake_core::claim`); this worker moves its bytes over TCP and sleeps between
//! steps. Backends never talk to etcd: they read the grant word the worker publishes. With the
//! machine id set by hand and etcd's settings beside it, the worker reserves that id in the id
//! space instead (`Claimer::reserve`), so that no leasing server takes it while a fleet moves to
//! etcd one server at a time, and says when a leasing server holds it already.

use super::clock::wall_clock_ms;
use super::etcd_transport::{self, Tcp};
use super::id_source::{self, hostname, EtcdConfig};
use super::lease_worker::reload_if_asked;
use super::tls::{ClientCert, Tls};
use super::{key_file, mark_store, server_config, shared_memory, worker_exit};
use pg_snowflake_core::claim::{Claimer, Holder, Reserved, Step, Switches};
use pg_snowflake_core::claim_status::Trouble;
use pg_snowflake_core::etcd_gateway::parse_credentials;
use pg_snowflake_core::etcd_gateway::Gateway;
use pg_snowflake_core::state::SharedState;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::prelude::*;
use std::time::Duration;
use zeroize::Zeroizing;

/// How often the worker looks at its lease (the core says when a renewal or a claim is due).
const PERIOD: Duration = Duration::from_millis(200);
/// How long the release at a stop may talk to etcd in all: a fast stop waits for it, whatever the
/// endpoints do.
const RELEASE_BUDGET: Duration = Duration::from_secs(4);

/// How often a reserved id is looked at again (a reservation removed by hand is made again).
const RESERVATION_CHECK: Duration = Duration::from_secs(60);

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
        .enable_shmem_access(None)
        // A standby holds nothing: at promotion it claims like a starting server.
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

fn claimer(config: &EtcdConfig, shared: &SharedState) -> Option<Claimer> {
    let layout = *server_config::layout().ok()?;
    let space = config.space_of(&layout);
    // SAFETY: settings and globals set before libraries load, read-only since.
    let (port, data_directory) = unsafe { (pg_sys::PostPortNumber, mark_store::data_dir()) };
    // SAFETY: set by the postmaster before it forks, read-only since.
    let (pid, started) = unsafe { (pg_sys::PostmasterPid, pg_sys::PgStartTime) };
    let postmaster = format!("{pid}@{started}");
    let me = Holder {
        system_identifier: mark_store::system_identifier().to_string(),
        host: hostname().unwrap_or_default(),
        port,
        data_directory: data_directory.to_string_lossy().into_owned(),
        postmaster,
    };
    let switches = Switches {
        deadline: !id_source::fault_no_lease_deadline(),
        mark_revision: !id_source::fault_mark_unguarded(),
        space_layout: !id_source::fault_space_layout_off(),
        reservations: !id_source::fault_reservations_off(),
        ..Switches::ALL_ON
    };
    let mut c = Claimer::new(space, me, layout, switches);
    c.resume(shared);
    Some(c)
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_snowflake_claim_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
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
    // Started again after its restart interval, unless the server is shutting down.
    worker_exit::exit_after_sigterm();
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

/// Reserves the machine id `id`, set by hand, in the id space, and looks at it again every
/// minute, until SIGTERM. The server issues under its id whatever etcd says: a leasing server that
/// holds it already is said (a WARNING, and the status's last error) for the operator to fix.
fn reserve(config: &EtcdConfig, shared: &SharedState, mut claimer: Claimer, id: i64) {
    let Some(mut etcd) = gateway_when_ready(config, shared) else { return };
    let space = claimer.space.clone();
    let exchange = Duration::from_millis(space.step_budget_ms() as u64);
    let step = Duration::from_millis(space.renew_every_ms().max(space.step_budget_ms()) as u64);
    let (mut said, mut failures, mut next_ms) = (String::new(), 0u32, 0i64);
    // Whether the log says the id is reserved: once, and again when the reservation had to be
    // made again (removed by hand meanwhile) or came after an error.
    let mut reported = false;
    while BackgroundWorker::wait_latch(Some(PERIOD)) && !etcd_transport::stop_requested() {
        reload_if_asked();
        let now = wall_clock_ms();
        if now < next_ms {
            continue;
        }
        etcd.transport().begin(step, exchange, true);
        match claimer.reserve(&mut etcd, id) {
            Ok((done, notes)) => {
                for note in notes {
                    pgrx::log!("pg_snowflake: {note}");
                }
                if !reported || done != Reserved::Already {
                    let how = match done {
                        Reserved::Now => "reserved",
                        Reserved::Already => "is reserved (by this server already)",
                        Reserved::TakenOver => "reserved, taken over from the server of this cluster that reserved it (its primary before a failover)",
                    };
                    pgrx::log!(
                        "pg_snowflake: machine id {id} (set by hand) {how} in {}: leasing servers of the id space pass it over",
                        config.describe()
                    );
                    reported = true;
                }
                shared.claim.set_error(None, Trouble::None, now);
                said.clear();
                failures = 0;
                next_ms = now + RESERVATION_CHECK.as_millis() as i64;
            }
            Err(e) => {
                let text = e.message(&space);
                shared.claim.set_error(Some(&text), e.trouble(), now);
                if text != said {
                    pgrx::warning!("pg_snowflake: {text}");
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
        match claimer.step(&mut etcd, shared, now) {
            Ok(Step::Claimed(h, notes)) => {
                for note in notes {
                    pgrx::log!("pg_snowflake: {note}");
                }
                pgrx::log!(
                    "pg_snowflake: machine id {} claimed in {} (lease {:x}, TTL {} s); recorded mark {}",
                    h.id,
                    config.describe(),
                    h.lease,
                    config.ttl_s,
                    h.mark_ms
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
    match claimer.release(&mut etcd, shared, wall_clock_ms) {
        Ok(()) => pgrx::log!("pg_snowflake: machine id released in {}", config.describe()),
        Err(e) => pgrx::log!(
            "pg_snowflake: machine id not released ({}); its lease expires by itself",
            e.message(&claimer.space)
        ),
    }
}
