//! etcd's v3 API through its JSON gateway (`/v3/kv/range`, `/v3/kv/txn`, `/v3/lease/grant`,
//! `/v3/lease/keepalive`, `/v3/kv/lease/revoke`: single POSTs of JSON, keys and values in base64),
//! as the claim protocol's [`Etcd`]. Pure: the bytes of an HTTP/1.1 request and the reading of its
//! response are here; the shell only moves them over a socket ([`Transport`]).

use crate::claim::{Etcd, Guard, Kv, Put, Seen, Txn};
use serde_json::{json, Value};
use zeroize::Zeroizing;

/// The most bytes an answer may take (head and body): a range of a whole id space of 1,024 ids,
/// each with its claim and its mark, is about 600 kB. A longer answer is refused, never read on.
pub const MAX_ANSWER_BYTES: usize = 4 << 20;

/// Sends one request to one endpoint and returns the response's bytes (to the end of the
/// connection, at most [`MAX_ANSWER_BYTES`]), or why not: over TCP, in TLS when the endpoint is
/// `https://`. Each exchange is bounded in time by the transport (the worker's step has an
/// overall deadline, and a stop request ends it).
pub trait Transport {
    fn exchange(&mut self, endpoint: &Endpoint, request: &[u8]) -> Result<Vec<u8>, String>;
}

/// Why a call got no answer of etcd's saying it did what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Failure {
    /// No answer from any endpoint, or none that is etcd's (each endpoint and why).
    NoAnswer(String),
    /// etcd answered with an error: the endpoint, the HTTP status, the gRPC code (0: none given)
    /// and its message.
    Answered { url: String, status: u16, code: i64, message: String },
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::NoAnswer(why) => format!("etcd at {why}"),
            Failure::Answered { url, status, code, message } => {
                format!("etcd at {url}: HTTP {status}: {message} (code {code})")
            }
        }
    }

    /// etcd refused the token (expired, or unknown to a restarted etcd): gRPC's UNAUTHENTICATED,
    /// HTTP 401. Decided by the code, never by the text.
    fn unauthenticated(&self) -> bool {
        matches!(self, Failure::Answered { status, code, .. } if *status == 401 || *code == 16)
    }

    /// What was asked for does not exist (a lease etcd no longer has): gRPC's NOT_FOUND, HTTP 404.
    fn not_found(&self) -> bool {
        matches!(self, Failure::Answered { status, code, .. } if *status == 404 || *code == 5)
    }
}

/// gRPC codes an error answer of which another member may not give (no leader, a leader change, a
/// request timed out, a member out of resources): the next endpoint is asked.
fn member_trouble(status: u16, code: i64) -> bool {
    matches!(code, 4 | 8 | 14) || matches!(status, 502..=504)
}

/// etcd's answer in `text` (HTTP `status`), or the error it is. An answer is JSON with etcd's
/// response header (`header`, or in a stream's first message `result.header`); an error is any
/// status but 2xx, a non-zero `code` (etcd 3.6's gateway: `{"code": 14, "message": ...}`), or an
/// `error` (3.4 and 3.5: `{"error": "...", "code": 14, "message": ...}`; in a stream: `{"error":
/// {"grpc_code": 5, "http_code": 404, "message": ...}}`). Anything else is not an answer.
fn read_answer(url: &str, status: u16, text: &str, errors_by_status: bool) -> Result<Value, Failure> {
    let v = serde_json::from_str::<Value>(text)
        .map_err(|e| Failure::NoAnswer(format!("{url}: HTTP {status}, an answer that is not JSON ({e})")))?;
    let error = v.get("error");
    if !errors_by_status {
        // 0.2.0's betas (the test builds' negative control): an error only by a JSON "error".
        return match error {
            Some(e) => Err(Failure::Answered {
                url: url.into(),
                status,
                code: int(v.get("code")),
                message: e.as_str().unwrap_or("an error").into(),
            }),
            None => Ok(v),
        };
    }
    let code = int(v.get("code")).max(int(error.and_then(|e| e.get("grpc_code"))));
    if !(200..300).contains(&status) || code != 0 || error.is_some() {
        let message = [v.get("message"), error.and_then(|e| e.get("message")), error]
            .into_iter()
            .flatten()
            .find_map(Value::as_str)
            .unwrap_or("an error without a message")
            .to_string();
        let status = match error.and_then(|e| e.get("http_code")).map(|c| int(Some(c))) {
            Some(http) if status == 200 && http > 0 => http as u16,
            _ => status,
        };
        return Err(Failure::Answered { url: url.into(), status, code, message });
    }
    if !v.get("header").or_else(|| v.get("result").and_then(|r| r.get("header"))).is_some_and(Value::is_object) {
        return Err(Failure::NoAnswer(format!(
            "{url}: HTTP {status}, an answer without etcd's header: not etcd's answer"
        )));
    }
    Ok(v)
}

/// The endpoints of one etcd cluster, tried in turn from the last that answered.
pub struct Gateway<T> {
    endpoints: Vec<Endpoint>,
    current: usize,
    transport: T,
    /// etcd's user and password, when its authentication is on: exchanged for a token, which
    /// every request carries. Never in a message: errors name the user at most.
    credentials: Option<(String, Zeroizing<String>)>,
    token: Option<Zeroizing<String>>,
    /// Whether an answer's HTTP status, code and header decide that it is an error (always, but
    /// in the test builds' negative control: see [`Gateway::reading_errors_as_before`]).
    errors_by_status: bool,
    /// The header of the last answer to a range or a transaction (linearizable: never behind one
    /// given before, whichever member gave it; a keepalive's header is its member's, which may lag).
    seen: Option<Seen>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// As configured, for messages.
    pub url: String,
    /// host:port, for the socket and the Host header.
    pub authority: String,
    /// `https://`: TLS, etcd's certificate checked against the host's name or address.
    pub tls: bool,
}

impl Endpoint {
    /// The host alone (an IPv6 address without its brackets): what etcd's certificate must name.
    pub fn host(&self) -> &str {
        let host = self.authority.rsplit_once(':').map_or(self.authority.as_str(), |(h, _)| h);
        host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host)
    }
}

/// The endpoints of `snowflake.etcd_endpoints` (comma-separated `http://host:port` or
/// `https://host:port`, all of one scheme), or why not.
pub fn parse_endpoints(text: &str) -> Result<Vec<Endpoint>, String> {
    let mut out: Vec<Endpoint> = vec![];
    for url in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (tls, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => return Err(format!("{url}: an endpoint is written http://host:port or https://host:port")),
        };
        let authority = rest.trim_end_matches('/');
        let port_ok = authority.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !port_ok || authority.contains('/') || authority.contains('@') {
            return Err(format!("{url}: an endpoint is written http://host:port or https://host:port"));
        }
        // One scheme for all: a cluster reached in TLS through one member and in the clear
        // through another would send its token and the ids' holders in the clear.
        if out.first().is_some_and(|first| first.tls != tls) {
            return Err(format!("{url}: every endpoint of one etcd cluster is http:// or every one is https://"));
        }
        out.push(Endpoint { url: url.to_string(), authority: authority.to_string(), tls });
    }
    if out.is_empty() {
        return Err("no endpoint is set".into());
    }
    Ok(out)
}

/// Whether the TLS settings fit the endpoints: the CA, certificate and key files are for
/// `https://` endpoints only, and a client certificate comes with its key (and the key with its
/// certificate). The error is the setting at fault and why.
pub fn check_tls_settings(
    tls: bool,
    ca_file: bool,
    cert_file: bool,
    key_file: bool,
) -> Result<(), (&'static str, String)> {
    let files = [
        ("snowflake.etcd_ca_file", ca_file),
        ("snowflake.etcd_cert_file", cert_file),
        ("snowflake.etcd_key_file", key_file),
    ];
    if let Some((setting, _)) = files.iter().find(|(_, set)| *set).filter(|_| !tls) {
        return Err((setting, "it is set, but the endpoints are http://: TLS files are for https:// endpoints (write them https://host:port)".into()));
    }
    match (cert_file, key_file) {
        (true, false) => Err((
            "snowflake.etcd_key_file",
            "it is empty, but snowflake.etcd_cert_file is set: a client certificate needs its key".into(),
        )),
        (false, true) => Err((
            "snowflake.etcd_cert_file",
            "it is empty, but snowflake.etcd_key_file is set: a key needs its client certificate".into(),
        )),
        _ => Ok(()),
    }
}

impl<T: Transport> Gateway<T> {
    pub fn new(endpoints: Vec<Endpoint>, transport: T) -> Gateway<T> {
        Gateway { endpoints, current: 0, transport, credentials: None, token: None, errors_by_status: true, seen: None }
    }

    /// Test builds only (the negative control of the error scenarios): errors known only by a JSON
    /// `error` key, as in 0.2.0's betas, so that etcd 3.6's error form passes for an answer.
    pub fn reading_errors_as_before(mut self) -> Gateway<T> {
        self.errors_by_status = false;
        self
    }

    /// The transport, for the caller to set each step's budget.
    pub fn transport(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Authenticates as `user` with `password` (etcd's authentication on).
    pub fn with_credentials(mut self, user: String, password: Zeroizing<String>) -> Gateway<T> {
        self.credentials = Some((user, password));
        self
    }

    /// POSTs `body` to `path` with the token, authenticating first when there is none yet or
    /// etcd refuses the one held (it expired: etcd's simple tokens live 5 minutes; a restarted etcd
    /// knows none): the status code says so, never the error's text.
    fn call(&mut self, path: &str, body: Value) -> Result<Value, Failure> {
        if self.credentials.is_some() && self.token.is_none() {
            self.authenticate()?;
        }
        let body = body.to_string();
        match self.send(path, &body) {
            Err(e) if self.credentials.is_some() && e.unauthenticated() => {
                self.authenticate()?;
                self.send(path, &body)
            }
            other => other,
        }
    }

    fn authenticate(&mut self) -> Result<(), Failure> {
        self.token = None;
        let (user, password) = self.credentials.as_ref().expect("authenticate only with credentials");
        let quoted = Zeroizing::new(serde_json::to_string(password.as_str()).expect("a string is JSON"));
        let name = serde_json::to_string(user).expect("a string is JSON");
        let user = user.clone();
        let body = Zeroizing::new(format!("{{\"name\":{name},\"password\":{}}}", quoted.as_str()));
        let v = self.send("/v3/auth/authenticate", &body).map_err(|e| match e {
            Failure::NoAnswer(why) => Failure::NoAnswer(format!("{why} (authenticating as {user})")),
            Failure::Answered { url, status, code, message } => {
                Failure::Answered { url, status, code, message: format!("{message} (authenticating as {user})") }
            }
        })?;
        match v.get("token").and_then(Value::as_str) {
            Some(t) => {
                self.token = Some(Zeroizing::new(t.to_string()));
                Ok(())
            }
            None => Err(Failure::NoAnswer(format!("etcd gave no token to {user}"))),
        }
    }

    /// POSTs `body` to `path`: etcd's answer ([`read_answer`]), or why no endpoint gave one. An
    /// error answer ends the call, unless it is one another member may not give (no leader, a
    /// leader change, a time-out): then the next endpoint is asked.
    fn send(&mut self, path: &str, body: &str) -> Result<Value, Failure> {
        let auth = self.token.as_ref().map(|t| format!("Authorization: {}\r\n", t.as_str())).unwrap_or_default();
        let auth = Zeroizing::new(auth);
        let mut failures = vec![];
        for i in 0..self.endpoints.len() {
            let at = (self.current + i) % self.endpoints.len();
            let endpoint = self.endpoints[at].clone();
            let request = Zeroizing::new(format!(
                "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
                endpoint.authority,
                body.len(),
                auth.as_str(),
                body
            ));
            let answer = match self.transport.exchange(&endpoint, request.as_bytes()).and_then(|b| parse_response(&b)) {
                Ok((status, text)) => read_answer(&endpoint.url, status, &text, self.errors_by_status),
                Err(e) => Err(Failure::NoAnswer(format!("{}: {e}", endpoint.url))),
            };
            match answer {
                Ok(v) => {
                    self.current = at;
                    return Ok(v);
                }
                Err(e) if matches!(&e, Failure::Answered { status, code, .. } if member_trouble(*status, *code)) => {
                    failures.push(e)
                }
                Err(e @ Failure::Answered { .. }) => {
                    self.current = at;
                    return Err(e);
                }
                Err(e) => failures.push(e),
            }
        }
        // The last error answer if any (what etcd said), else every endpoint and why.
        if let Some(e) = failures.iter().rev().find(|f| matches!(f, Failure::Answered { .. })) {
            return Err(e.clone());
        }
        let each: Vec<String> =
            failures.into_iter().map(|f| if let Failure::NoAnswer(w) = f { w } else { f.text() }).collect();
        Err(Failure::NoAnswer(each.join("; ")))
    }
}

fn b64(s: &str) -> String {
    base64::encode(s.as_bytes())
}

/// The key just past every key starting with `prefix` (etcd's `range_end` of a prefix).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// What an answer's header says of the store (`cluster_id`, `revision`), if it has them.
fn header_of(v: &Value) -> Option<Seen> {
    let h = v.get("header")?;
    let cluster_id = match h.get("cluster_id")? {
        Value::String(s) => s.parse().ok()?,
        Value::Number(n) => n.as_u64()?,
        _ => return None,
    };
    Some(Seen { cluster_id, revision: int(h.get("revision")) })
}

/// A 64-bit integer as etcd's JSON gives it: a string of digits (or a number), absent is 0.
fn int(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

impl<T: Transport> Etcd for Gateway<T> {
    fn grant(&mut self, ttl_s: i64) -> Result<i64, String> {
        let v = self.call("/v3/lease/grant", json!({ "TTL": ttl_s.to_string() })).map_err(|e| e.text())?;
        match int(v.get("ID")) {
            0 => Err("etcd granted no lease: an answer without an ID".into()),
            id => Ok(id),
        }
    }

    fn keep_alive(&mut self, lease: i64) -> Result<i64, String> {
        // A stream of one answer: {"result": {..., "TTL": "n"}}; a lease etcd no longer has
        // comes back without a TTL (or as NOT_FOUND).
        match self.call("/v3/lease/keepalive", json!({ "ID": lease.to_string() })) {
            Ok(v) => Ok(int(v.get("result").and_then(|r| r.get("TTL")))),
            Err(e) if e.not_found() => Ok(0),
            Err(e) => Err(e.text()),
        }
    }

    fn revoke(&mut self, lease: i64) -> Result<(), String> {
        match self.call("/v3/kv/lease/revoke", json!({ "ID": lease.to_string() })) {
            // Gone already: what a revoke is for.
            Err(e) if e.not_found() => Ok(()),
            other => other.map(|_| ()).map_err(|e| e.text()),
        }
    }

    fn range(&mut self, prefix: &str) -> Result<Vec<Kv>, String> {
        let v = self
            .call("/v3/kv/range", json!({ "key": b64(prefix), "range_end": base64::encode(&prefix_end(prefix)) }))
            .map_err(|e| e.text())?;
        self.seen = header_of(&v).or(self.seen);
        let mut out = vec![];
        for kv in v.get("kvs").and_then(Value::as_array).into_iter().flatten() {
            let text = |name: &str| -> Result<String, String> {
                let raw = kv.get(name).and_then(Value::as_str).unwrap_or("");
                let bytes = base64::decode(raw).ok_or_else(|| format!("etcd gave a {name} that is not base64"))?;
                String::from_utf8(bytes).map_err(|_| format!("etcd gave a {name} that is not UTF-8"))
            };
            out.push(Kv {
                key: text("key")?,
                value: text("value")?,
                lease: int(kv.get("lease")),
                mod_revision: int(kv.get("mod_revision")),
            });
        }
        Ok(out)
    }

    fn txn_and_delete(&mut self, guards: &[Guard], puts: &[Put], deletes: &[String]) -> Result<Txn, String> {
        let compare: Vec<Value> = guards
            .iter()
            .map(|g| match g {
                Guard::Absent(k) => json!({ "target": "CREATE", "key": b64(k), "create_revision": "0" }),
                Guard::LeasedBy(k, lease) => json!({ "target": "LEASE", "key": b64(k), "lease": lease.to_string() }),
                Guard::Revision(k, rev) => json!({ "target": "MOD", "key": b64(k), "mod_revision": rev.to_string() }),
            })
            .collect();
        let success: Vec<Value> = puts
            .iter()
            .map(|p| json!({ "request_put": { "key": b64(&p.key), "value": b64(&p.value), "lease": p.lease.to_string() } }))
            .chain(deletes.iter().map(|k| json!({ "request_delete_range": { "key": b64(k) } })))
            .collect();
        let v = self.call("/v3/kv/txn", json!({ "compare": compare, "success": success })).map_err(|e| e.text())?;
        self.seen = header_of(&v).or(self.seen);
        Ok(Txn {
            succeeded: v.get("succeeded").and_then(Value::as_bool).unwrap_or(false),
            revision: int(v.get("header").and_then(|h| h.get("revision"))),
        })
    }

    fn seen(&self) -> Option<Seen> {
        self.seen
    }
}

/// The user and password of `snowflake.etcd_credentials_file`: the user on the first line, the
/// password on the second (the line's end is not part of it). The error never quotes the file.
pub fn parse_credentials(text: &str) -> Result<(String, Zeroizing<String>), String> {
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let user = lines.next().unwrap_or("").trim();
    let password = lines.next().unwrap_or("");
    if user.is_empty() || password.is_empty() {
        return Err("it must hold the etcd user on its first line and the password on its second".into());
    }
    if lines.any(|l| !l.trim().is_empty()) {
        return Err("it must hold two lines only: the etcd user and the password".into());
    }
    Ok((user.to_string(), Zeroizing::new(password.to_string())))
}

/// The status and body of an HTTP/1.1 response read to the end of the connection (a body of
/// `Content-Length` bytes, chunked, or up to the end).
pub fn parse_response(bytes: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Err(if bytes.is_empty() { "no answer".into() } else { "an answer that is not HTTP".into() });
    };
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.strip_prefix("HTTP/1."))
        .and_then(|l| l.get(2..5))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or("an answer that is not HTTP")?;
    let (mut chunked, mut length) = (false, None);
    for line in lines {
        let line = line.to_ascii_lowercase();
        if let Some(value) = line.strip_prefix("transfer-encoding:") {
            chunked |= value.contains("chunked");
        } else if let Some(value) = line.strip_prefix("content-length:") {
            length = Some(value.trim().parse::<usize>().map_err(|_| "an answer with a bad Content-Length")?);
        }
    }
    if !chunked {
        // A connection cut early (a TLS stream closed without its end, a member gone) must not
        // pass for a shorter answer.
        return match length {
            Some(n) => body.get(..n).map(|b| (status, b.to_string())).ok_or_else(|| "an answer cut short".into()),
            None => Ok((status, body.to_string())),
        };
    }
    let (mut out, mut rest) = (String::new(), body);
    loop {
        let (size, after) = rest.split_once("\r\n").ok_or("a chunked answer cut short")?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "a chunked answer with a bad chunk size")?;
        if size == 0 {
            return Ok((status, out));
        }
        let chunk = after.get(..size).ok_or("a chunked answer cut short")?;
        out.push_str(chunk);
        rest = after.get(size..).and_then(|r| r.strip_prefix("\r\n")).ok_or("a chunked answer cut short")?;
    }
}

/// Standard base64 (RFC 4648, with padding): what etcd's gateway uses for bytes.
pub mod base64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    pub fn decode(text: &str) -> Option<Vec<u8>> {
        let text = text.trim_end_matches('=');
        let mut out = Vec::with_capacity(text.len() * 3 / 4);
        let (mut n, mut bits) = (0u32, 0);
        for c in text.bytes() {
            n = n << 6 | ALPHABET.iter().position(|&a| a == c)? as u32;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((n >> bits) as u8);
                n &= (1 << bits) - 1;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn base64_round_trips_and_matches_the_standard() {
        assert_eq!(base64::encode(b"/p/claim/0"), "L3AvY2xhaW0vMA==");
        assert_eq!(base64::encode(b"hello"), "aGVsbG8=");
        assert_eq!(base64::encode(b"m"), "bQ==");
        assert_eq!(base64::decode("L3AvbWFyay8w").unwrap(), b"/p/mark/0");
        for n in 0..300 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            assert_eq!(base64::decode(&base64::encode(&bytes)).unwrap(), bytes);
        }
        assert_eq!(base64::decode("a*b"), None);
    }

    #[test]
    fn endpoints_are_http_or_https_host_port_and_nothing_else() {
        let e = parse_endpoints("http://10.0.0.1:2379, http://etcd-2:2379/").unwrap();
        assert_eq!(e[1], Endpoint { url: "http://etcd-2:2379/".into(), authority: "etcd-2:2379".into(), tls: false });
        assert_eq!(e[0].host(), "10.0.0.1");
        let e = parse_endpoints("https://etcd-1.example:2379,https://[::1]:2379").unwrap();
        assert!(e.iter().all(|e| e.tls));
        assert_eq!((e[0].host(), e[1].host(), e[1].authority.as_str()), ("etcd-1.example", "::1", "[::1]:2379"));
        assert!(parse_endpoints("https://e1:2379,http://e2:2379").unwrap_err().contains("every endpoint"));
        assert!(parse_endpoints("http://e1:2379,https://e2:2379").unwrap_err().contains("every endpoint"));
        assert!(parse_endpoints("ftp://e:2379").unwrap_err().contains("https://host:port"));
        assert!(parse_endpoints("http://e").unwrap_err().contains("http://host:port"));
        assert!(parse_endpoints("http://user:pw@e:2379").is_err());
        assert!(parse_endpoints(" , ").unwrap_err().contains("no endpoint"));
    }

    #[test]
    fn tls_files_are_for_https_and_a_certificate_comes_with_its_key() {
        assert_eq!(check_tls_settings(false, false, false, false), Ok(()));
        assert_eq!(check_tls_settings(true, false, false, false), Ok(()), "the system's CAs, no client certificate");
        assert_eq!(check_tls_settings(true, true, true, true), Ok(()));
        assert_eq!(check_tls_settings(false, true, false, false).unwrap_err().0, "snowflake.etcd_ca_file");
        assert_eq!(check_tls_settings(false, false, true, true).unwrap_err().0, "snowflake.etcd_cert_file");
        assert_eq!(check_tls_settings(true, true, true, false).unwrap_err().0, "snowflake.etcd_key_file");
        assert_eq!(check_tls_settings(true, false, false, true).unwrap_err().0, "snowflake.etcd_cert_file");
    }

    #[test]
    fn responses_plain_and_chunked_as_etcd_sends_them() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain).unwrap(), (200, "{}".into()));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n12}\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), (200, "{\"a\":12}".into()));
        assert!(parse_response(b"").unwrap_err().contains("no answer"));
        let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"ID\":\"9\"}";
        assert!(parse_response(cut).unwrap_err().contains("cut short"));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n{}").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{").is_err());
    }

    /// Answers as recorded from etcd's gateways: a body, with its HTTP status first when it is
    /// not 200 (`"503 {...}"`).
    struct Recorded(VecDeque<Result<&'static str, &'static str>>, Vec<String>);
    impl Transport for Recorded {
        fn exchange(&mut self, endpoint: &Endpoint, request: &[u8]) -> Result<Vec<u8>, String> {
            self.1.push(format!("{} {}", endpoint.url, String::from_utf8_lossy(request)));
            let answer = self.0.pop_front().expect("an answer for each request").map_err(String::from)?;
            let (status, body) = match answer.split_once(' ') {
                Some((code, body)) if code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit()) => (code, body),
                _ => ("200", answer),
            };
            Ok(format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes())
        }
    }

    #[test]
    fn credentials_are_two_lines_and_never_quoted() {
        let (user, password) = parse_credentials("snowflake\ns3cr:et\n").unwrap();
        assert_eq!((user.as_str(), password.as_str()), ("snowflake", "s3cr:et"));
        for bad in ["", "snowflake\n", "\ns3cret", "snowflake\ns3cret\nmore"] {
            let e = parse_credentials(bad).unwrap_err();
            assert!(!e.contains("s3cret") && !e.contains("more"), "{e}");
        }
    }

    #[test]
    fn with_credentials_every_request_carries_a_token_renewed_when_refused() {
        let answers = VecDeque::from([
            Ok(r#"{"header":{},"token":"tok1.1"}"#),
            Ok(r#"{"header":{},"ID":"9","TTL":"5"}"#),
            Ok(
                r#"401 {"error":"etcdserver: invalid auth token","code":16,"message":"etcdserver: invalid auth token"}"#,
            ),
            Ok(r#"{"header":{},"token":"tok2.2"}"#),
            Ok(r#"{"header":{},"ID":"10","TTL":"5"}"#),
            Ok(
                r#"400 {"error":"etcdserver: authentication failed, invalid user ID or password","code":3,"message":"etcdserver: authentication failed, invalid user ID or password"}"#,
            ),
        ]);
        let endpoints = parse_endpoints("http://a:1").unwrap();
        let mut g = Gateway::new(endpoints, Recorded(answers, vec![]))
            .with_credentials("snowflake".into(), Zeroizing::new("pa\"ss".into()));
        assert_eq!(g.grant(5), Ok(9));
        let sent = &g.transport.1;
        assert!(
            sent[0].contains("POST /v3/auth/authenticate ")
                && sent[0].ends_with(r#"{"name":"snowflake","password":"pa\"ss"}"#)
        );
        assert!(sent[1].contains("\r\nAuthorization: tok1.1\r\n"), "{}", sent[1]);
        assert_eq!(g.grant(5), Ok(10), "an expired token: authenticated again, the call repeated");
        assert!(g.transport.1[4].contains("Authorization: tok2.2"));
        g.token = None;
        let e = g.grant(5).unwrap_err();
        assert!(
            e.contains("authentication failed") && e.contains("(authenticating as snowflake)") && !e.contains("pa\"ss"),
            "{e}"
        );
    }

    #[test]
    fn an_error_in_any_version_s_form_is_an_error_never_an_answer() {
        let endpoints = parse_endpoints("http://a:1").unwrap();
        let answers = VecDeque::from([
            // etcd 3.6 (grpc-gateway v2): an HTTP status and a code, no "error" key.
            Ok(r#"503 {"code":14,"message":"etcdserver: leader changed","details":[]}"#),
            // A 200 with a code: an error too.
            Ok(r#"{"code":14,"message":"etcdserver: no leader"}"#),
            // An answer without etcd's header: not etcd's answer (a proxy's, a misconfigured port).
            Ok(r#"{}"#),
            Ok(r#"{"kvs":[]}"#),
            // A stream's error (the keepalive).
            Ok(
                r#"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}}"#,
            ),
            // Anything but 2xx, whatever the body.
            Ok(r#"502 <html>Bad Gateway</html>"#),
            Ok(r#"500 {"header":{"revision":"1"},"kvs":[]}"#),
            // A keepalive's answer without its header.
            Ok(r#"{"result":{"TTL":"5"}}"#),
        ]);
        let mut g = Gateway::new(endpoints, Recorded(answers, vec![]));
        let e = g.range("/p/mark/0").unwrap_err();
        assert_eq!(e, "etcd at http://a:1: HTTP 503: etcdserver: leader changed (code 14)");
        assert!(g.range("/p/mark/0").unwrap_err().contains("no leader (code 14)"));
        assert!(g.range("/p/mark/0").unwrap_err().contains("without etcd's header"));
        assert!(g.range("/p/mark/0").unwrap_err().contains("without etcd's header"));
        let e = g.keep_alive(7).unwrap_err();
        assert!(e.contains("HTTP 503: etcdserver: no leader (code 14)"), "{e}");
        assert!(g.range("/p/").unwrap_err().contains("not JSON"));
        assert!(g.range("/p/").unwrap_err().contains("HTTP 500"));
        assert!(g.keep_alive(7).unwrap_err().contains("without etcd's header"));
    }

    #[test]
    fn a_member_without_a_leader_sends_the_call_to_the_next_and_other_errors_end_it() {
        let endpoints = parse_endpoints("http://a:1,http://b:2").unwrap();
        let answers = VecDeque::from([
            Ok(r#"503 {"code":14,"message":"etcdserver: no leader","details":[]}"#),
            Ok(r#"{"header":{"revision":"9"},"kvs":[]}"#),
            Ok(
                r#"400 {"error":"etcdserver: key is not provided","code":3,"message":"etcdserver: key is not provided"}"#,
            ),
        ]);
        let mut g = Gateway::new(endpoints, Recorded(answers, vec![]));
        assert_eq!(g.range("/p/"), Ok(vec![]));
        assert!(g.transport.1[1].starts_with("http://b:2 "));
        let e = g.range("/p/").unwrap_err();
        assert!(e.starts_with("etcd at http://b:2: HTTP 400: etcdserver: key is not provided (code 3)"), "{e}");
        assert_eq!(g.transport.1.len(), 3, "not sent to a: another member would say the same");
    }

    #[test]
    fn a_token_refused_in_3_6_s_form_is_renewed_by_the_status_code() {
        let answers = VecDeque::from([
            Ok(r#"{"header":{},"token":"tok1.1"}"#),
            Ok(r#"401 {"code":16,"message":"etcdserver: invalid auth token","details":[]}"#),
            Ok(r#"{"header":{},"token":"tok2.2"}"#),
            Ok(r#"{"header":{"revision":"1"},"ID":"10","TTL":"5"}"#),
        ]);
        let endpoints = parse_endpoints("http://a:1").unwrap();
        let mut g = Gateway::new(endpoints, Recorded(answers, vec![]))
            .with_credentials("snowflake".into(), Zeroizing::new("pw".into()));
        assert_eq!(g.grant(5), Ok(10));
        assert!(g.transport.1[3].contains("Authorization: tok2.2"));
    }

    #[test]
    fn the_calls_speak_the_gateway_and_fail_over_between_endpoints() {
        let endpoints = parse_endpoints("http://a:1,http://b:2").unwrap();
        let answers = VecDeque::from([
            Err("connection refused"),
            Ok(r#"{"header":{"revision":"1"},"ID":"7587899326334851335","TTL":"5"}"#),
            Ok(r#"{"header":{"revision":"2"},"succeeded":true,"responses":[{"response_put":{}}]}"#),
            Ok(r#"{"header":{"revision":"3"}}"#),
            Ok(
                r#"{"header":{"revision":"3"},"kvs":[{"key":"L3AvY2xhaW0vMA==","create_revision":"2","mod_revision":"2","value":"aGVsbG8=","lease":"7587899326334851335"},{"key":"L3AvbWFyay8w","value":"bQ=="}],"count":"2"}"#,
            ),
            Ok(r#"{"result":{"header":{},"ID":"7587899326334851335","TTL":"5"}}"#),
            Ok(r#"{"result":{"header":{},"ID":"7587899326334851335"}}"#),
            Ok(
                r#"404 {"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5}"#,
            ),
            Err("connection refused"),
            Err("timed out"),
        ]);
        let mut g = Gateway::new(endpoints, Recorded(answers, vec![]));
        assert_eq!(g.grant(5), Ok(7587899326334851335));
        assert!(
            g.transport.1[1].starts_with("http://b:2 POST /v3/lease/grant HTTP/1.1\r\nHost: b:2\r\n"),
            "failed over"
        );
        let put = Put { key: "/p/claim/0".into(), value: "hello".into(), lease: 7 };
        assert_eq!(g.txn(&[Guard::Absent("/p/claim/0".into())], &[put]), Ok(Txn { succeeded: true, revision: 2 }));
        assert!(g.transport.1[2].starts_with("http://b:2 "), "stays on the endpoint that answered");
        assert!(g.transport.1[2]
            .contains(r#""compare":[{"create_revision":"0","key":"L3AvY2xhaW0vMA==","target":"CREATE"}]"#));
        assert_eq!(
            g.txn(&[Guard::LeasedBy("/p/claim/0".into(), 9)], &[]),
            Ok(Txn { succeeded: false, revision: 3 }),
            "a failed compare"
        );
        let kvs = g.range("/p/").unwrap();
        assert!(g.transport.1[4].contains(r#""range_end":"L3Aw""#), "the end of the prefix /p/ is /p0");
        assert_eq!(
            kvs[0],
            Kv { key: "/p/claim/0".into(), value: "hello".into(), lease: 7587899326334851335, mod_revision: 2 }
        );
        assert_eq!(kvs[1].lease, 0);
        assert_eq!(g.keep_alive(1), Ok(5));
        assert_eq!(g.keep_alive(1), Ok(0), "a lease etcd no longer has");
        assert_eq!(g.revoke(1), Ok(()), "revoking a lease already gone");
        let e = g.grant(5).unwrap_err();
        assert_eq!(e, "etcd at http://b:2: connection refused; http://a:1: timed out");
    }
}
