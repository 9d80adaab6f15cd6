//! TLS for the machine id's worker when etcd's endpoints are `https://`: the OpenSSL the server
//! itself is linked with (`libssl.so.3`), opened with `dlopen` the first time a TLS endpoint is
//! used. No TLS crate is built into the extension, and a server without `https://` endpoints never
//! loads anything. Verification is on, always: etcd's certificate must chain to the CA of
//! `snowflake.etcd_ca_file` (or to the system's trusted CAs when it is empty) and name the
//! endpoint's host (its DNS name or IP address); TLS 1.2 or later. A client certificate
//! (`snowflake.etcd_cert_file`, `snowflake.etcd_key_file`) answers etcd's `--client-cert-auth`; its
//! key is read as every secret of ours (`key_file::read_private`: the server's OS user's, 0600 or
//! stricter, zeroed after use) and handed to OpenSSL from memory, never from a path OpenSSL opens.

use std::ffi::{c_char, c_int, c_long, c_ulong, c_void, CStr, CString};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;
use zeroize::Zeroizing;

/// OpenSSL 3's libssl (libcrypto comes with it: its symbols are found through the same handle).
const LIBSSL: &CStr = c"libssl.so.3";

type Ptr = *mut c_void;

macro_rules! openssl_api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The OpenSSL functions used, resolved once per process.
        #[allow(non_snake_case)]
        struct Api { $($name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)* }

        impl Api {
            /// # Safety
            /// `handle` is a handle of libssl.so.3 (OpenSSL 3), whose functions have these types.
            unsafe fn resolve(handle: Ptr) -> Result<Api, String> {
                Ok(Api { $($name: {
                    let name = concat!(stringify!($name), "\0");
                    // SAFETY: a NUL-terminated name; the handle is dlopen's.
                    let symbol = unsafe { libc::dlsym(handle, name.as_ptr().cast()) };
                    if symbol.is_null() {
                        return Err(format!("{} has no {}", LIBSSL.to_string_lossy(), stringify!($name)));
                    }
                    // SAFETY: OpenSSL 3 declares this function with these argument types.
                    unsafe { std::mem::transmute::<Ptr, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(symbol) }
                },)* })
            }
        }
    };
}

openssl_api! {
    TLS_client_method: fn() -> *const c_void;
    SSL_CTX_new: fn(*const c_void) -> Ptr;
    SSL_CTX_free: fn(Ptr);
    SSL_CTX_ctrl: fn(Ptr, c_int, c_long, Ptr) -> c_long;
    SSL_CTX_set_verify: fn(Ptr, c_int, *const c_void);
    SSL_CTX_load_verify_locations: fn(Ptr, *const c_char, *const c_char) -> c_int;
    SSL_CTX_set_default_verify_paths: fn(Ptr) -> c_int;
    SSL_CTX_use_certificate_chain_file: fn(Ptr, *const c_char) -> c_int;
    SSL_CTX_use_PrivateKey: fn(Ptr, Ptr) -> c_int;
    SSL_CTX_check_private_key: fn(Ptr) -> c_int;
    SSL_new: fn(Ptr) -> Ptr;
    SSL_free: fn(Ptr);
    SSL_set_fd: fn(Ptr, c_int) -> c_int;
    SSL_ctrl: fn(Ptr, c_int, c_long, Ptr) -> c_long;
    SSL_get0_param: fn(Ptr) -> Ptr;
    X509_VERIFY_PARAM_set1_host: fn(Ptr, *const c_char, usize) -> c_int;
    X509_VERIFY_PARAM_set1_ip_asc: fn(Ptr, *const c_char) -> c_int;
    SSL_connect: fn(Ptr) -> c_int;
    SSL_write: fn(Ptr, *const c_void, c_int) -> c_int;
    SSL_read: fn(Ptr, Ptr, c_int) -> c_int;
    SSL_get_error: fn(Ptr, c_int) -> c_int;
    SSL_shutdown: fn(Ptr) -> c_int;
    SSL_get_verify_result: fn(Ptr) -> c_long;
    X509_verify_cert_error_string: fn(c_long) -> *const c_char;
    ERR_get_error: fn() -> c_ulong;
    ERR_error_string_n: fn(c_ulong, *mut c_char, usize);
    ERR_clear_error: fn();
    BIO_new_mem_buf: fn(*const c_void, c_int) -> Ptr;
    BIO_free: fn(Ptr) -> c_int;
    PEM_read_bio_PrivateKey: fn(Ptr, *mut Ptr, *const c_void, Ptr) -> Ptr;
    EVP_PKEY_free: fn(Ptr);
}

// From OpenSSL 3's ssl.h, tls1.h, x509_vfy.h.
const SSL_VERIFY_PEER: c_int = 0x01;
const SSL_CTRL_SET_TLSEXT_HOSTNAME: c_int = 55;
const TLSEXT_NAMETYPE_HOST_NAME: c_long = 0;
const SSL_CTRL_SET_MIN_PROTO_VERSION: c_int = 123;
const TLS1_2_VERSION: c_long = 0x0303;
const SSL_ERROR_WANT_READ: c_int = 2;
const SSL_ERROR_WANT_WRITE: c_int = 3;
const SSL_ERROR_SYSCALL: c_int = 5;
const SSL_ERROR_ZERO_RETURN: c_int = 6;
const X509_V_OK: c_long = 0;

/// OpenSSL's functions, or why they cannot be had (no libssl.so.3 on this machine).
fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        // SAFETY: dlopen of a library by name; RTLD_NOW resolves it whole or fails. The server is
        // usually linked with it already: then this is the copy it has.
        let handle = unsafe { libc::dlopen(LIBSSL.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(format!(
                "https:// endpoints need OpenSSL 3 ({}), which this machine does not have",
                LIBSSL.to_string_lossy()
            ));
        }
        // SAFETY: the handle is libssl.so.3's, OpenSSL 3's ABI.
        unsafe { Api::resolve(handle) }
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// OpenSSL's error queue, emptied into one line (it holds no secret: key text is never in it).
fn openssl_errors(api: &Api) -> String {
    let mut out: Vec<String> = vec![];
    loop {
        // SAFETY: reads this thread's queue; the buffer is ours with its length.
        let code = unsafe { (api.ERR_get_error)() };
        if code == 0 {
            break;
        }
        let mut buf = [0 as c_char; 256];
        unsafe { (api.ERR_error_string_n)(code, buf.as_mut_ptr(), buf.len()) };
        // SAFETY: ERR_error_string_n NUL-terminates within the length.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        // "error:0A000086:SSL routines::certificate verify failed": the reason is the last part.
        let reason = text.rsplit(':').next().unwrap_or(&text).to_string();
        if !out.contains(&reason) {
            out.push(reason);
        }
    }
    if out.is_empty() {
        "no reason given".into()
    } else {
        out.join("; ")
    }
}

fn c_path(setting: &str, path: &str) -> Result<CString, String> {
    CString::new(path).map_err(|_| format!("{setting} \"{}\" holds a NUL byte", path.escape_debug()))
}

/// A client's TLS set-up (OpenSSL's `SSL_CTX`): the trusted CAs and, when given, this server's
/// certificate and key. One per worker; a connection per request.
pub struct Tls {
    api: &'static Api,
    ctx: Ptr,
    /// Whether a client certificate is set (a handshake etcd refuses says what is missing).
    client_cert: bool,
}

/// The client certificate: the chain's file (public, read by OpenSSL) and the key's PEM text
/// (read by us as a secret).
pub struct ClientCert<'a> {
    pub cert_file: &'a str,
    pub key_pem: Zeroizing<String>,
    pub key_file: &'a str,
}

/// A password callback that gives none: an encrypted key is refused, never prompted for.
unsafe extern "C" fn no_passphrase(_buf: *mut c_char, _size: c_int, _rw: c_int, _u: Ptr) -> c_int {
    -1
}

impl Tls {
    /// The set-up, or why not, naming the setting and file at fault.
    pub fn new(ca_file: Option<&str>, client: Option<ClientCert>) -> Result<Tls, String> {
        let api = api()?;
        // SAFETY: each call below is OpenSSL's documented use; the context is freed by Drop once
        // made (so on every error return after this point).
        unsafe {
            (api.ERR_clear_error)();
            let ctx = (api.SSL_CTX_new)((api.TLS_client_method)());
            if ctx.is_null() {
                return Err(format!("OpenSSL could not make a TLS context: {}", openssl_errors(api)));
            }
            let mut tls = Tls { api, ctx, client_cert: false };
            (api.SSL_CTX_set_verify)(ctx, SSL_VERIFY_PEER, std::ptr::null());
            if (api.SSL_CTX_ctrl)(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, std::ptr::null_mut()) != 1 {
                return Err(format!("OpenSSL refused TLS 1.2 as the least version: {}", openssl_errors(api)));
            }
            match ca_file {
                Some(path) => {
                    const SETTING: &str = "snowflake.etcd_ca_file";
                    let c = c_path(SETTING, path)?;
                    if (api.SSL_CTX_load_verify_locations)(ctx, c.as_ptr(), std::ptr::null()) != 1 {
                        return Err(format!(
                            "{SETTING} \"{path}\" holds no CA certificate OpenSSL can read: {}",
                            openssl_errors(api)
                        ));
                    }
                }
                None => {
                    if (api.SSL_CTX_set_default_verify_paths)(ctx) != 1 {
                        return Err(format!("OpenSSL has no trusted CAs of the system: {}", openssl_errors(api)));
                    }
                }
            }
            if let Some(client) = client {
                tls.use_client_cert(client)?;
                tls.client_cert = true;
            }
            Ok(tls)
        }
    }

    fn use_client_cert(&self, client: ClientCert) -> Result<(), String> {
        let api = self.api;
        let cert = c_path("snowflake.etcd_cert_file", client.cert_file)?;
        // SAFETY: OpenSSL's documented use; the BIO reads our buffer, alive until freed below; the
        // key object is freed once the context holds its own reference.
        unsafe {
            if (api.SSL_CTX_use_certificate_chain_file)(self.ctx, cert.as_ptr()) != 1 {
                return Err(format!(
                    "snowflake.etcd_cert_file \"{}\" holds no certificate OpenSSL can read: {}",
                    client.cert_file,
                    openssl_errors(api)
                ));
            }
            let pem = client.key_pem.as_bytes();
            let len = c_int::try_from(pem.len()).map_err(|_| "the key is too long".to_string())?;
            let bio = (api.BIO_new_mem_buf)(pem.as_ptr().cast(), len);
            if bio.is_null() {
                return Err(format!("OpenSSL could not read from memory: {}", openssl_errors(api)));
            }
            let key = (api.PEM_read_bio_PrivateKey)(
                bio,
                std::ptr::null_mut(),
                no_passphrase as *const c_void,
                std::ptr::null_mut(),
            );
            (api.BIO_free)(bio);
            if key.is_null() {
                // The queue's reasons say what kind of text it was, never the text.
                return Err(format!(
                    "snowflake.etcd_key_file \"{}\" holds no unencrypted private key in PEM: {}",
                    client.key_file,
                    openssl_errors(api)
                ));
            }
            let used = (api.SSL_CTX_use_PrivateKey)(self.ctx, key);
            (api.EVP_PKEY_free)(key);
            if used != 1 || (api.SSL_CTX_check_private_key)(self.ctx) != 1 {
                return Err(format!(
                    "snowflake.etcd_key_file \"{}\" is not the key of snowflake.etcd_cert_file \"{}\": {}",
                    client.key_file,
                    client.cert_file,
                    openssl_errors(api)
                ));
            }
        }
        Ok(())
    }

    /// Sends `request` over `stream` in TLS, with etcd's certificate checked against `host`, and
    /// returns the answer to the end of the TLS stream. `timeout` words a socket timeout.
    pub fn exchange(
        &self,
        stream: &TcpStream,
        host: &str,
        request: &[u8],
        limit: usize,
        go_on: &mut dyn FnMut() -> Result<(), String>,
    ) -> Result<Vec<u8>, String> {
        let api = self.api;
        let host_c = CString::new(host).map_err(|_| "a host with a NUL byte".to_string())?;
        // SAFETY: OpenSSL's documented use; the connection object is freed by the guard; the socket
        // outlives it (the caller's).
        unsafe {
            (api.ERR_clear_error)();
            let ssl = (api.SSL_new)(self.ctx);
            if ssl.is_null() {
                return Err(format!("OpenSSL could not make a connection: {}", openssl_errors(api)));
            }
            let conn = Conn { api, ssl };
            let param = (api.SSL_get0_param)(ssl);
            let named = if host.parse::<std::net::IpAddr>().is_ok() {
                (api.X509_VERIFY_PARAM_set1_ip_asc)(param, host_c.as_ptr())
            } else {
                // SNI is for names, never addresses (RFC 6066).
                (api.SSL_ctrl)(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_HOST_NAME, host_c.as_ptr() as Ptr);
                (api.X509_VERIFY_PARAM_set1_host)(param, host_c.as_ptr(), 0)
            };
            if named != 1 || (api.SSL_set_fd)(ssl, stream.as_raw_fd()) != 1 {
                return Err(format!("OpenSSL could not set the connection up: {}", openssl_errors(api)));
            }
            // Each call returns within the socket's short time-out (SO_RCVTIMEO, SO_SNDTIMEO); while
            // it would block, `go_on` says whether the exchange's deadline and a stop allow more.
            let rc = loop {
                let rc = (api.SSL_connect)(ssl);
                if rc == 1 || !conn.would_block(rc) {
                    break rc;
                }
                go_on()?;
            };
            if rc != 1 {
                let verify = (api.SSL_get_verify_result)(ssl);
                return Err(if verify != X509_V_OK {
                    let why = CStr::from_ptr((api.X509_verify_cert_error_string)(verify)).to_string_lossy();
                    format!("etcd's certificate was not accepted: {why}")
                } else {
                    format!("no TLS connection: {}", self.refused(conn.failure(rc)))
                });
            }
            let mut sent = 0;
            while sent < request.len() {
                let len = c_int::try_from(request.len() - sent).map_err(|_| "a request too long".to_string())?;
                let rc = (api.SSL_write)(ssl, request[sent..].as_ptr().cast(), len);
                if rc > 0 {
                    sent += rc as usize;
                } else if conn.would_block(rc) {
                    go_on()?;
                } else {
                    return Err(self.refused(conn.failure(rc)));
                }
            }
            let mut answer = Vec::new();
            let mut buf = [0u8; 16 * 1024];
            loop {
                let rc = (api.SSL_read)(ssl, buf.as_mut_ptr().cast(), buf.len() as c_int);
                if rc > 0 {
                    if answer.len() + rc as usize > limit {
                        return Err(format!("an answer longer than {limit} bytes: refused"));
                    }
                    answer.extend_from_slice(&buf[..rc as usize]);
                    continue;
                }
                if (api.SSL_get_error)(ssl, rc) == SSL_ERROR_ZERO_RETURN {
                    // etcd closed the TLS stream properly: the whole answer is here.
                    (api.SSL_shutdown)(ssl);
                    return Ok(answer);
                }
                if conn.would_block(rc) {
                    go_on()?;
                    continue;
                }
                return Err(self.refused(conn.failure(rc)));
            }
        }
    }

    /// `why` a connection failed, and, when etcd sent an alert to a server without a client
    /// certificate (with TLS 1.3 it comes after the handshake, at the first read), what is missing.
    fn refused(&self, why: String) -> String {
        if !self.client_cert && why.contains("alert") {
            format!(
                "{why} (etcd may ask for a client certificate: snowflake.etcd_cert_file and snowflake.etcd_key_file)"
            )
        } else {
            why
        }
    }
}

impl Drop for Tls {
    fn drop(&mut self) {
        // SAFETY: made by SSL_CTX_new, freed once.
        unsafe { (self.api.SSL_CTX_free)(self.ctx) };
    }
}

/// One TLS connection, freed when dropped.
struct Conn {
    api: &'static Api,
    ssl: Ptr,
}

impl Conn {
    /// Why a call on the connection returned `rc`.
    /// Whether the call that returned `rc` only ran out of the socket's short time-out.
    fn would_block(&self, rc: c_int) -> bool {
        let os = std::io::Error::last_os_error();
        // SAFETY: the connection is alive; SSL_get_error reads its state and the thread's queue.
        let code = unsafe { (self.api.SSL_get_error)(self.ssl, rc) };
        let timed_out = matches!(os.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
        matches!(code, SSL_ERROR_WANT_READ | SSL_ERROR_WANT_WRITE) || (code == SSL_ERROR_SYSCALL && timed_out)
    }

    fn failure(&self, rc: c_int) -> String {
        let os = std::io::Error::last_os_error();
        // SAFETY: the connection is alive; SSL_get_error reads its state and the thread's queue.
        let code = unsafe { (self.api.SSL_get_error)(self.ssl, rc) };
        let queue = openssl_errors(self.api);
        match code {
            SSL_ERROR_SYSCALL if queue == "no reason given" => match os.raw_os_error() {
                Some(0) | None => "the connection ended early".into(),
                Some(_) => os.to_string(),
            },
            _ => queue,
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: made by SSL_new, freed once.
        unsafe { (self.api.SSL_free)(self.ssl) };
    }
}
