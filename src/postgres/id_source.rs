//! Where this server's machine id comes from: the settings (`snowflake.machine_id_source` and
//! those of each source), read once in the postmaster at start, and the generator they give. The
//! core decides (`pg_snowflake_core::machine_source`, `claim`); this reads the settings, the
//! environment and the hostname.

use super::settings::{self, RawSettings};
use pg_snowflake_core::claim::Space;
use pg_snowflake_core::etcd_gateway::{check_tls_settings, parse_endpoints, Endpoint};
use pg_snowflake_core::generator::Generator;
use pg_snowflake_core::machine_source::{self, Source};
use pg_snowflake_core::{Error, Layout};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CString;

static SOURCE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"manual"));
static ETCD_ENDPOINTS: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static ETCD_PREFIX: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"/pg_snowflake/default"));
static ETCD_LEASE_TTL: GucSetting<i32> = GucSetting::<i32>::new(10);
static ETCD_CREDENTIALS_FILE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static ETCD_CA_FILE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static ETCD_CERT_FILE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static ETCD_KEY_FILE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static POD_INDEX_VARIABLE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"POD_INDEX"));
static MACHINE_ID_OFFSET: GucSetting<i32> = GucSetting::<i32>::new(0);
#[cfg(feature = "fault_injection")]
static FAULT_NO_LEASE_DEADLINE: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_START_GRANT: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_MARK_UNGUARDED: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_SPACE_LAYOUT_OFF: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_ERRORS_BY_KEY: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_UNBOUNDED_ETCD: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_RESERVATIONS_OFF: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_CLAIM_WHOLE_MARK: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_INHERITED_MARK_OFF: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_SIGTERM_SENDER_IGNORED: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_HAND_SET_UNGUARDED: GucSetting<bool> = GucSetting::<bool>::new(false);
#[cfg(feature = "fault_injection")]
static FAULT_RESTORE_UNCHECKED: GucSetting<bool> = GucSetting::<bool>::new(false);

/// Defines the settings; from `settings::define`, while libraries preload.
pub fn define() {
    GucRegistry::define_string_guc(
        c"snowflake.machine_id_source",
        c"Where the machine id comes from: manual (snowflake.machine_id), etcd (a lease) or pod_index (a StatefulSet's pod).",
        c"etcd: claimed at start from snowflake.etcd_endpoints, unique by construction; pod_index: the Downward API's apps.kubernetes.io/pod-index label in the environment variable snowflake.pod_index_variable, or the hostname's ordinal, plus snowflake.machine_id_offset.",
        &SOURCE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.etcd_endpoints",
        c"The etcd cluster that leases machine ids: http://host:port or https://host:port (TLS), comma-separated.",
        c"Used with snowflake.machine_id_source = 'etcd'; beside snowflake.machine_id (manual), the id set by hand is reserved in the id space, so that no leasing server takes it. Patroni's etcd can be shared: the ids live under snowflake.etcd_prefix.",
        &ETCD_ENDPOINTS,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.etcd_prefix",
        c"The etcd key prefix that names this id space: every server that must never share an id uses the same one.",
        c"Claims live under <prefix>/claim/<id>, high-water marks under <prefix>/mark/<id>.",
        &ETCD_PREFIX,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake.etcd_lease_ttl",
        c"Seconds the etcd lease of the machine id lives without a renewal.",
        c"Renewed three times a TTL; ids stop a fifth of it (at least half a second) before it can have expired.",
        &ETCD_LEASE_TTL,
        2,
        3600,
        GucContext::Postmaster,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_string_guc(
        c"snowflake.etcd_credentials_file",
        c"A file holding the etcd user (first line) and password (second line), when etcd's authentication is on.",
        c"Owned by the server's OS user, mode 0600 or stricter, as snowflake.public_key_file; relative paths are relative to the data directory. Read by the machine id's worker only; the password is never logged or shown.",
        &ETCD_CREDENTIALS_FILE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.etcd_ca_file",
        c"The CA certificates (PEM) that etcd's certificate must chain to, for https:// endpoints.",
        c"Empty: the system's trusted CAs. etcd's certificate must also name the endpoint's host (DNS name or IP address). Relative paths are relative to the data directory.",
        &ETCD_CA_FILE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.etcd_cert_file",
        c"This server's client certificate (PEM, with its chain) for etcd's --client-cert-auth.",
        c"Set with snowflake.etcd_key_file. Relative paths are relative to the data directory.",
        &ETCD_CERT_FILE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.etcd_key_file",
        c"The private key (PEM, unencrypted) of snowflake.etcd_cert_file.",
        c"Owned by the server's OS user, mode 0600 or stricter, as snowflake.public_key_file; read by the machine id's worker only, never logged or shown.",
        &ETCD_KEY_FILE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"snowflake.pod_index_variable",
        c"The environment variable that holds the StatefulSet pod index (snowflake.machine_id_source = 'pod_index').",
        c"Set it from the apps.kubernetes.io/pod-index label with the Downward API; when it is not set, the hostname's trailing ordinal is used.",
        &POD_INDEX_VARIABLE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake.machine_id_offset",
        c"Added to the pod index: several StatefulSets in one id space each get a range of their own.",
        c"Used with snowflake.machine_id_source = 'pod_index'.",
        &MACHINE_ID_OFFSET,
        0,
        i32::MAX,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    #[cfg(feature = "fault_injection")]
    GucRegistry::define_bool_guc(
        c"snowflake.fault_no_lease_deadline",
        c"TEST BUILDS ONLY: a leased machine id is used past its lease's local deadline.",
        c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the paused-holder test.",
        &FAULT_NO_LEASE_DEADLINE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    #[cfg(feature = "fault_injection")]
    for (name, short, long, setting) in [
        (
            c"snowflake.fault_start_grant",
            c"TEST BUILDS ONLY: a leased server that finds a mark file starts holding machine id 0 for ever.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_restarts scenario (issue 51's finding 1, the start before its fix).",
            &FAULT_START_GRANT,
        ),
        (
            c"snowflake.fault_mark_unguarded",
            c"TEST BUILDS ONLY: a leased id's mark is written in etcd under the claim's guard alone, not the revision last seen.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_faults scenario (a mark write applied late lowers the mark).",
            &FAULT_MARK_UNGUARDED,
        ),
        (
            c"snowflake.fault_space_layout_off",
            c"TEST BUILDS ONLY: the id space's layout is neither recorded nor compared at a claim.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_restarts scenario (two layouts in one id space).",
            &FAULT_SPACE_LAYOUT_OFF,
        ),
        (
            c"snowflake.fault_errors_by_key",
            c"TEST BUILDS ONLY: an answer of etcd's is an error only when it has a JSON error key.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_faults scenario (etcd 3.6's error form read as an answer).",
            &FAULT_ERRORS_BY_KEY,
        ),
        (
            c"snowflake.fault_reservations_off",
            c"TEST BUILDS ONLY: a claim neither passes over nor is guarded by the ids hand-set servers reserved.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_fleet_move scenario (a leasing server takes a hand-set server's id).",
            &FAULT_RESERVATIONS_OFF,
        ),
        (
            c"snowflake.fault_hand_set_unguarded",
            c"TEST BUILDS ONLY: a hand-set server reserving its id issues under it whatever etcd says.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_guards scenario (a hand-set server beside a leasing one holding its id).",
            &FAULT_HAND_SET_UNGUARDED,
        ),
        (
            c"snowflake.fault_restore_unchecked",
            c"TEST BUILDS ONLY: etcd's revision and cluster are not compared with those seen before.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_guards scenario (etcd restored from a snapshot).",
            &FAULT_RESTORE_UNCHECKED,
        ),
        (
            c"snowflake.fault_unbounded_etcd",
            c"TEST BUILDS ONLY: the worker's exchanges with etcd have no deadline, no size cap and do not stop at SIGTERM.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the etcd_faults scenario (a dripping endpoint holds a fast stop).",
            &FAULT_UNBOUNDED_ETCD,
        ),
        (
            c"snowflake.fault_claim_whole_mark",
            c"TEST BUILDS ONLY: a claim takes the whole mark recorded in etcd as used, this very run's own included.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the control of the crash_leased scenario (a crash-restart waits out its old lease's deadline, as before issue 57).",
            &FAULT_CLAIM_WHOLE_MARK,
        ),
        (
            c"snowflake.fault_inherited_mark_off",
            c"TEST BUILDS ONLY: a claim of an id this very run held before takes nothing as used.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the negative control of the crash_leased scenario (the holder before forgotten at a crash-restart).",
            &FAULT_INHERITED_MARK_OFF,
        ),
        (
            c"snowflake.fault_sigterm_sender_ignored",
            c"TEST BUILDS ONLY: the extension's workers end for good at any SIGTERM while the server is stopping.",
            c"Exists only when pg_snowflake is built with the fault_injection feature: the control of the etcd_smart_shutdown scenario (a worker terminated while a smart shutdown waits is not started again).",
            &FAULT_SIGTERM_SENDER_IGNORED,
        ),
    ] {
        GucRegistry::define_bool_guc(name, short, long, setting, GucContext::Postmaster, GucFlags::default());
    }
}

fn text(s: &GucSetting<Option<CString>>) -> String {
    s.get().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The etcd id space, as configured.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    pub endpoints: Vec<Endpoint>,
    pub prefix: String,
    pub ttl_s: i64,
    /// snowflake.etcd_credentials_file, if set (its path: the worker reads it).
    pub credentials_file: Option<String>,
    /// snowflake.etcd_ca_file, snowflake.etcd_cert_file, snowflake.etcd_key_file, if set: for
    /// https:// endpoints (the worker reads them).
    pub ca_file: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
}

impl EtcdConfig {
    /// The id space of this configuration for `layout` (its size: 2 ^ machine bits).
    pub fn space_of(&self, layout: &Layout) -> Space {
        Space { prefix: self.prefix.clone(), ttl_s: self.ttl_s, size: 1 << layout.machine_bits() }
    }

    /// For messages: where the id is leased from.
    pub fn describe(&self) -> String {
        let urls: Vec<&str> = self.endpoints.iter().map(|e| e.url.as_str()).collect();
        format!("etcd at {} (id space {})", urls.join(","), self.prefix)
    }
}

/// The source, the generator it gives (a leased id is OR-ed in at each call: the generator's own
/// is 0), and the etcd space when leased.
pub fn resolve(raw: &RawSettings, layout: &Layout) -> Result<(Source, Generator, Option<EtcdConfig>), Error> {
    let source = Source::parse(&text(&SOURCE))?;
    let by_hand = settings::machine_id_if_set();
    let refuse = |reason: String| Error::MachineIdSource { setting: machine_source::SETTING, reason };
    if source != Source::Manual && by_hand.is_some() {
        return Err(refuse(format!(
            "it is '{}', and snowflake.machine_id is set too ({}): remove one of them",
            source.name(),
            by_hand.unwrap_or(-1)
        )));
    }
    match source {
        // By hand; with etcd's settings beside, the id is reserved in that id space (a fleet moved
        // to etcd one server at a time: see `claim_worker`).
        Source::Manual => {
            let reserve_in = if text(&ETCD_ENDPOINTS).trim().is_empty() { None } else { Some(etcd_config()?) };
            Ok((source, Generator::new(*layout, settings::machine_id(raw)?)?, reserve_in))
        }
        Source::PodIndex => {
            let variable = text(&POD_INDEX_VARIABLE);
            let value = std::env::var(&variable).ok();
            let id = machine_source::pod_index(
                &variable,
                value.as_deref(),
                hostname().as_deref(),
                i64::from(MACHINE_ID_OFFSET.get()),
            )?;
            Ok((source, Generator::new(*layout, id)?, None))
        }
        Source::Etcd => Ok((source, Generator::new(*layout, 0)?, Some(etcd_config()?))),
    }
}

/// The etcd id space of snowflake.etcd_endpoints, snowflake.etcd_prefix and the files beside.
fn etcd_config() -> Result<EtcdConfig, Error> {
    let endpoints = parse_endpoints(&text(&ETCD_ENDPOINTS))
        .map_err(|why| Error::MachineIdSource { setting: "snowflake.etcd_endpoints", reason: why })?;
    let prefix = text(&ETCD_PREFIX).trim_end_matches('/').to_string();
    if !prefix.starts_with('/') || prefix.len() < 2 {
        return Err(Error::MachineIdSource {
            setting: "snowflake.etcd_prefix",
            reason: format!("'{prefix}' is not a key prefix such as /pg_snowflake/prod"),
        });
    }
    let file = |s| Some(text(s)).filter(|f| !f.is_empty());
    let (ca_file, cert_file, key_file) = (file(&ETCD_CA_FILE), file(&ETCD_CERT_FILE), file(&ETCD_KEY_FILE));
    check_tls_settings(endpoints[0].tls, ca_file.is_some(), cert_file.is_some(), key_file.is_some())
        .map_err(|(setting, reason)| Error::MachineIdSource { setting, reason })?;
    Ok(EtcdConfig {
        endpoints,
        prefix,
        ttl_s: i64::from(ETCD_LEASE_TTL.get()),
        credentials_file: file(&ETCD_CREDENTIALS_FILE),
        ca_file,
        cert_file,
        key_file,
    })
}

/// snowflake.machine_id_source as written (trimmed, lower case; empty is `manual`): what the
/// status reports when the source could not give a machine id (a source that does not exist
/// included), so that a leasing server misconfigured is still seen as one.
pub fn configured_source() -> String {
    let written = text(&SOURCE).trim().to_ascii_lowercase();
    if written.is_empty() {
        "manual".into()
    } else {
        written
    }
}

/// This machine's hostname.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: a buffer we own and its length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    (rc == 0).then(|| {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    })
}

/// Test builds only: whether the lease's deadline is switched off; false in every other build.
#[inline(always)]
pub fn fault_no_lease_deadline() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_NO_LEASE_DEADLINE.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: a leased server that finds a mark starts with machine id 0 held for ever (the
/// start of issue 51's finding 1); false in every other build.
#[inline(always)]
pub fn fault_start_grant() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_START_GRANT.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: mark writes in etcd guarded by the claim alone; false in every other build.
#[inline(always)]
pub fn fault_mark_unguarded() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_MARK_UNGUARDED.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: the id space's layout neither recorded nor compared; false in every other build.
#[inline(always)]
pub fn fault_space_layout_off() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_SPACE_LAYOUT_OFF.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: etcd's errors known by a JSON error key alone; false in every other build.
#[inline(always)]
pub fn fault_errors_by_key() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_ERRORS_BY_KEY.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: claims ignore the reservations of hand-set ids; false in every other build.
#[inline(always)]
pub fn fault_reservations_off() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_RESERVATIONS_OFF.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: a hand-set server issues whatever etcd says of its reservation; false in
/// every other build.
#[inline(always)]
pub fn fault_hand_set_unguarded() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_HAND_SET_UNGUARDED.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: etcd's revision and cluster not compared with those seen; false in every
/// other build.
#[inline(always)]
pub fn fault_restore_unchecked() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_RESTORE_UNCHECKED.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: the worker's exchanges with etcd unbounded; false in every other build.
#[inline(always)]
pub fn fault_unbounded_etcd() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_UNBOUNDED_ETCD.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: a claim takes the whole recorded mark as used (before issue 57); false in
/// every other build.
#[inline(always)]
pub fn fault_claim_whole_mark() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_CLAIM_WHOLE_MARK.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: a claim of an id this run held before takes nothing as used; false in every
/// other build.
#[inline(always)]
pub fn fault_inherited_mark_off() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_INHERITED_MARK_OFF.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}

/// Test builds only: a worker's SIGTERM ends it for good whenever the server is stopping, whoever
/// sent it (before issue 57); false in every other build.
#[inline(always)]
pub fn fault_sigterm_sender_ignored() -> bool {
    #[cfg(feature = "fault_injection")]
    return FAULT_SIGTERM_SENDER_IGNORED.get();
    #[cfg(not(feature = "fault_injection"))]
    false
}
