//! How the machine id's worker moves the gateway's bytes (`pg_snowflake_core::etcd_gateway`): one
//! HTTP/1.1 request over a fresh TCP connection (in TLS for `https://` endpoints), every exchange
//! bounded whatever the endpoint does:
//! - in time, by a deadline of its own (the step's budget, see [`Tcp::begin`]): the connect, each
//!   write and each read wait at most a short slice, and between slices the deadline and a stop
//!   request (SIGTERM, when the step honours it) are looked at, so an endpoint that sends its status
//!   line and then a byte every half second holds the worker no longer than the deadline, and a
//!   fast stop is not held at all;
//! - in size, by the gateway's `MAX_ANSWER_BYTES`: a longer answer is refused, never read on;
//! - in its name lookup: each endpoint's host is resolved once and its addresses kept (refreshed
//!   after every address failed), in a thread of its own that is waited for until the deadline
//!   only (getaddrinfo has no time-out; a lookup that hangs is waited for again at the next
//!   exchange, never started again while it runs: one under way per endpoint, the core's
//!   `name_lookup`; its thread with every signal blocked, so that PostgreSQL's handlers never run
//!   there).

use super::tls::Tls;
use pg_snowflake_core::etcd_gateway::{Endpoint, Transport, MAX_ANSWER_BYTES};
use pg_snowflake_core::name_lookup::{Found, Lookups};
use pgrx::pg_sys;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The longest a read or write waits before the deadline and a stop are looked at again.
const SLICE: Duration = Duration::from_millis(50);
/// The same for a connect attempt (tried again while the deadline allows).
const CONNECT_SLICE: Duration = Duration::from_secs(1);

pub struct Tcp {
    tls: Option<Tls>,
    /// The current step's end, and each exchange's longest time within it.
    step_end: Instant,
    exchange_max: Duration,
    /// Whether SIGTERM ends an exchange (not during the release, which has a budget of its own).
    stop_on_term: bool,
    /// Each endpoint's addresses, by its host:port, and the lookups under way.
    resolved: HashMap<String, Vec<SocketAddr>>,
    lookups: Lookups<SocketAddr>,
    /// Test builds only (`snowflake.fault_unbounded_etcd`, the negative control): no deadline, no
    /// size cap, no stop, as in 0.2.0's betas.
    unbounded: bool,
}

/// Whether the worker was asked to stop (SIGTERM: a clean stop of the server, or
/// pg_terminate_backend()): PostgreSQL's `ShutdownRequestPending`, which pgrx's SIGTERM handler
/// sets and nothing clears. Never pgrx's `BackgroundWorker::sigterm_received()`, which clears the
/// flag it reads: an exchange that read it there took the stop away from the worker's loop (whose
/// `wait_latch` reads the same flag), and the worker went on renewing while the postmaster waited
/// for it; a fast stop that came during an exchange never ended (found by the etcd_faults scenario:
/// a fast stop while etcd dripped a keepalive's answer).
pub fn stop_requested() -> bool {
    // SAFETY: a sig_atomic_t written by this process's signal handler.
    unsafe { std::ptr::read_volatile(&raw const pg_sys::ShutdownRequestPending) != 0 }
}

/// The addresses of `authority` (host:port), as getaddrinfo gives them.
fn resolve(authority: &str) -> Found<SocketAddr> {
    authority.to_socket_addrs().map(|a| a.collect()).map_err(|e| format!("cannot resolve {authority}: {e}"))
}

/// Runs `job` in a thread of its own that starts with every signal blocked, so that PostgreSQL's
/// signal handlers never run there.
fn spawn_without_signals(job: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
    // SAFETY: blocks every signal in this thread for the spawn, so that the new thread starts
    // with all of them blocked (it inherits the mask), then restores this thread's mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let spawned = std::thread::Builder::new().name("etcd lookup".into()).spawn(job);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        spawned.map(|_| ())
    }
}

/// Why an exchange ended early: its deadline, or a stop request.
fn out_of_time(deadline: Instant, started: Instant, stop_on_term: bool) -> Result<(), String> {
    if stop_on_term && stop_requested() {
        return Err("the worker is stopping".into());
    }
    if Instant::now() >= deadline {
        return Err(format!("no answer within {} ms", deadline.duration_since(started).as_millis()));
    }
    Ok(())
}

impl Tcp {
    pub fn new(tls: Option<Tls>) -> Tcp {
        Tcp {
            tls,
            step_end: Instant::now(),
            exchange_max: Duration::ZERO,
            stop_on_term: true,
            resolved: HashMap::new(),
            lookups: Lookups::default(),
            unbounded: super::id_source::fault_unbounded_etcd(),
        }
    }

    /// A step begins: its exchanges end within `step` in all and `exchange` each; with
    /// `stop_on_term`, at once when SIGTERM arrives.
    pub fn begin(&mut self, step: Duration, exchange: Duration, stop_on_term: bool) {
        self.step_end = Instant::now() + step;
        self.exchange_max = exchange;
        self.stop_on_term = stop_on_term;
    }

    /// The addresses of `authority` (host:port): kept from the last lookup, or looked up now in a
    /// thread of its own, waited for until `deadline`.
    fn addresses(&mut self, authority: &str, deadline: Instant) -> Result<Vec<SocketAddr>, String> {
        if let Some(addrs) = self.resolved.get(authority) {
            return Ok(addrs.clone());
        }
        // An address needs no lookup (and no thread).
        if let Ok(addr) = authority.parse::<SocketAddr>() {
            self.resolved.insert(authority.into(), vec![addr]);
            return Ok(vec![addr]);
        }
        let addrs = self.lookups.get(authority, deadline, spawn_without_signals, resolve)?;
        if addrs.is_empty() {
            return Err(format!("{authority} has no address"));
        }
        self.resolved.insert(authority.into(), addrs.clone());
        Ok(addrs)
    }

    fn over_tcp(
        stream: &mut TcpStream,
        request: &[u8],
        limit: usize,
        go_on: &mut dyn FnMut() -> Result<(), String>,
    ) -> Result<Vec<u8>, String> {
        let mut sent = 0;
        while sent < request.len() {
            match stream.write(&request[sent..]) {
                Ok(0) => return Err("the connection ended early".into()),
                Ok(n) => sent += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    go_on()?
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        let mut answer = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return Ok(answer),
                Ok(n) => {
                    if answer.len() + n > limit {
                        return Err(format!("an answer longer than {limit} bytes: refused"));
                    }
                    answer.extend_from_slice(&buf[..n]);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    go_on()?
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl Transport for Tcp {
    fn exchange(&mut self, endpoint: &Endpoint, request: &[u8]) -> Result<Vec<u8>, String> {
        let started = Instant::now();
        let mut deadline = self.step_end.min(started + self.exchange_max);
        let mut stop_on_term = self.stop_on_term;
        let limit = if self.unbounded { usize::MAX } else { MAX_ANSWER_BYTES };
        if self.unbounded {
            (deadline, stop_on_term) = (started + Duration::from_secs(365 * 86_400), false);
        }
        out_of_time(deadline, started, stop_on_term)?;
        let authority = endpoint.authority.as_str();
        let addrs = self.addresses(authority, deadline)?;
        let mut last = format!("{authority} has no address");
        for addr in addrs {
            // The connect, in slices of at most a second between which the deadline and a stop
            // are looked at (a member that drops the handshake's packets answers nothing).
            let connected = loop {
                out_of_time(deadline, started, stop_on_term)?;
                let left =
                    deadline.saturating_duration_since(Instant::now()).clamp(Duration::from_millis(1), CONNECT_SLICE);
                match TcpStream::connect_timeout(&addr, left) {
                    Err(e) if e.kind() == ErrorKind::TimedOut && Instant::now() < deadline => continue,
                    other => break other,
                }
            };
            let mut stream = match connected {
                Ok(stream) => stream,
                Err(e) if e.kind() == ErrorKind::TimedOut => {
                    last = format!("no connection within {} ms", deadline.duration_since(started).as_millis());
                    continue;
                }
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            let io = |e: std::io::Error| e.to_string();
            stream.set_read_timeout(Some(SLICE)).map_err(io)?;
            stream.set_write_timeout(Some(SLICE)).map_err(io)?;
            let mut go_on = || out_of_time(deadline, started, stop_on_term);
            if endpoint.tls {
                let tls = self.tls.as_ref().ok_or("an https:// endpoint without TLS set up")?;
                return tls.exchange(&stream, endpoint.host(), request, limit, &mut go_on);
            }
            return Tcp::over_tcp(&mut stream, request, limit, &mut go_on);
        }
        // Every address failed: look the name up again next time.
        self.resolved.remove(authority);
        Err(last)
    }
}
