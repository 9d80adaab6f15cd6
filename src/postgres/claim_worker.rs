//! The background worker "pg_snowflake machine id": with `snowflake.machine_id_source = 'etcd'`,
//! it claims this server's machine id in etcd, keeps the lease alive, records the high-water mark
//! there, and at a clean stop records the final mark and releases the id. The protocol is the
//! core's (`pg_snowflake_core::claim`); this worker moves its bytes over TCP and sleeps between
//! steps. Backends never talk to etcd: they read the grant word the worker publishes.

use super::clock::wall_clock_ms;
use super::id_source::{self, hostname, EtcdConfig};
use super::tls::{ClientCert, Tls};
use super::{key_file, mark_store, server_config, shared_memory};
use pg_snowflake_core::claim::{Claimer, Holder, Space, Step, Switches};
use pg_snowflake_core::etcd_gateway::parse_credentials;
use pg_snowflake_core::etcd_gateway::{Endpoint, Gateway, Transport};
use pg_snowflake_core::state::SharedState;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::prelude::*;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;
use zeroize::Zeroizing;

/// How often the worker looks at its lease (the core says when a renewal is due).
const PERIOD: Duration = Duration::from_millis(200);
/// How long after a failed claim the next one is tried.
const RETRY_MS: i64 = 1_000;
/// A step's network calls never take longer than this each, nor longer than a tenth of the TTL:
/// a member that does not answer leaves time to ask the others before the deadline.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Registers the worker when the machine id is leased; from `_PG_init` while libraries preload.
pub fn register() {
    if server_config::etcd().is_none() {
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

/// HTTP/1.1 over a fresh TCP connection per request, with timeouts; in TLS for `https://`
/// endpoints.
struct Tcp {
    timeout: Duration,
    tls: Option<Tls>,
}

impl Transport for Tcp {
    fn exchange(&mut self, endpoint: &Endpoint, request: &[u8]) -> Result<Vec<u8>, String> {
        let authority = endpoint.authority.as_str();
        let addrs = authority.to_socket_addrs().map_err(|e| format!("cannot resolve {authority}: {e}"))?;
        let timed_out = format!("no answer within {} s", self.timeout.as_secs_f32());
        let mut last = format!("{authority} has no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.timeout) {
                Ok(mut stream) => {
                    let io = |e: std::io::Error| match e.kind() {
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => timed_out.clone(),
                        _ => e.to_string(),
                    };
                    stream.set_read_timeout(Some(self.timeout)).map_err(io)?;
                    stream.set_write_timeout(Some(self.timeout)).map_err(io)?;
                    if endpoint.tls {
                        let tls = self.tls.as_ref().ok_or("an https:// endpoint without TLS set up")?;
                        return tls.exchange(&stream, endpoint.host(), request, &timed_out);
                    }
                    stream.write_all(request).map_err(io)?;
                    let mut answer = Vec::new();
                    stream.read_to_end(&mut answer).map_err(io)?;
                    return Ok(answer);
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    last = format!("no connection within {} s", self.timeout.as_secs_f32())
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }
}

fn claimer(config: &EtcdConfig, shared: &SharedState) -> Option<Claimer> {
    let layout = *server_config::layout().ok()?;
    let space = Space { prefix: config.prefix.clone(), ttl_s: config.ttl_s, size: 1 << layout.machine_bits() };
    // SAFETY: settings and globals set before libraries load, read-only since.
    let (port, data_directory) = unsafe { (pg_sys::PostPortNumber, mark_store::data_dir()) };
    let me = Holder {
        system_identifier: mark_store::system_identifier().to_string(),
        host: hostname().unwrap_or_default(),
        port,
        data_directory: data_directory.to_string_lossy().into_owned(),
    };
    let switches = Switches { deadline: !id_source::fault_no_lease_deadline(), ..Switches::ALL_ON };
    let mut c = Claimer::new(space, me, layout, switches);
    c.resume(shared);
    Some(c)
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_snowflake_claim_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let claimer = match (server_config::etcd(), shared_memory::shared()) {
        (Some(config), Some(shared)) => claimer(config, shared).map(|c| (config, shared, c)),
        _ => None,
    };
    match claimer {
        Some((config, shared, claimer)) => hold(config, shared, claimer),
        // No layout: nothing can be issued, nothing to claim (the start logged why). Stay, so
        // that the postmaster does not start the worker again every second.
        None => while BackgroundWorker::wait_latch(None) {},
    }
    // Code 1: started again after its restart interval unless the server is shutting down.
    // SAFETY: ends this process the way PostgreSQL's own processes end.
    unsafe { pg_sys::proc_exit(1) };
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
fn gateway(config: &EtcdConfig, timeout: Duration) -> Result<Gateway<Tcp>, String> {
    let etcd = Gateway::new(config.endpoints.clone(), Tcp { timeout, tls: tls(config)? });
    Ok(match &config.credentials_file {
        Some(path) => {
            let (user, password) = credentials(path)?;
            etcd.with_credentials(user, password)
        }
        None => etcd,
    })
}

/// Claims and holds the id until SIGTERM, then releases it.
fn hold(config: &EtcdConfig, shared: &SharedState, mut claimer: Claimer) {
    let timeout = IO_TIMEOUT.min(Duration::from_millis(config.ttl_s as u64 * 100));
    // A file that cannot be used: no id, said until fixed (read again every second).
    let mut said = String::new();
    let mut etcd = loop {
        match gateway(config, timeout) {
            Ok(etcd) => break etcd,
            Err(e) => {
                shared.claim.set_error(Some(&e), wall_clock_ms());
                if e != said {
                    pgrx::warning!("pg_snowflake: {e}");
                    said = e;
                }
                if !BackgroundWorker::wait_latch(Some(Duration::from_secs(1))) {
                    return;
                }
            }
        }
    };
    let mut next_try_ms = i64::MIN;
    let mut said = String::new();
    while BackgroundWorker::wait_latch(Some(PERIOD)) {
        let now = wall_clock_ms();
        if now < next_try_ms {
            continue;
        }
        match claimer.step(&mut etcd, shared, now) {
            Ok(Step::Claimed(h)) => {
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
                if claimer.held().is_none() {
                    next_try_ms = now + RETRY_MS;
                }
            }
        }
    }
    // SIGTERM: a clean stop (or pg_terminate_backend). Nothing more is issued under the id; the
    // final mark is recorded and the lease revoked, so the next holder starts at once.
    match claimer.release(&mut etcd, shared, wall_clock_ms) {
        Ok(()) => pgrx::log!("pg_snowflake: machine id released in {}", config.describe()),
        Err(e) => pgrx::log!(
            "pg_snowflake: machine id not released ({}); its lease expires by itself",
            e.message(&claimer.space)
        ),
    }
}
