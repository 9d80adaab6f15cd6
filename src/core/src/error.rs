//! Every error a user can meet, as plain data (which setting or value, and why), with the message
//! naming it and a hint saying what to do. The wording lives here so that it is unit-tested
//! without PostgreSQL; the PostgreSQL shell adds the SQLSTATE (`src/postgres/errors.rs`).

use crate::calendar::format_utc;
use crate::claim_status::Trouble;
use crate::layout::{Layout, LayoutError, MAX_FIELD_BITS, MAX_TICK_MS, MIN_FIELD_BITS, MIN_TIMESTAMP_BITS};
use crate::mark_writer::WriteStep;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The layout cannot work, or a value has no place in it.
    Layout(LayoutError),
    /// The library was loaded by a backend, not by `shared_preload_libraries`.
    NotPreloaded,
    /// The machine id is leased (`snowflake.machine_id_source = 'etcd'`) and not held now: not
    /// claimed yet, or its lease reached its local deadline. `source`: where it is leased from
    /// (the endpoints and the id space, filled in by the shell); `last_error`: the holder's last.
    MachineIdNotHeld {
        source: String,
        last_error: Option<String>,
        /// The id whose lease reached its local deadline with no renewal since (none: no id was
        /// claimed since the last one was lost or released).
        lapsed: Option<i64>,
        /// What kind of trouble the holder's last error was: the hint says what to do about it.
        trouble: Trouble,
    },
    /// The machine id is set by hand and reserved in an etcd id space (etcd's settings beside
    /// it), and no id is issued under it now: its reservation is not confirmed yet (a first
    /// reservation), or etcd says a leasing server holds the id or another server reserved it.
    /// `source`: the id space (filled in by the shell); `last_error`: the worker's last.
    HandSetIdRefused {
        id: i64,
        source: String,
        last_error: Option<String>,
        trouble: Trouble,
    },
    /// Where the machine id comes from could not give one at start.
    MachineIdSource {
        setting: &'static str,
        reason: String,
    },
    /// PostgreSQL refused the text of an integer setting and would have kept the default.
    SettingNotAccepted {
        setting: &'static str,
        text: String,
    },
    EpochUnparsable {
        text: String,
        reason: String,
    },
    UnknownPreset {
        name: String,
    },
    /// A partition step that is not positive, or finer than a millisecond.
    PartitionStep {
        step: String,
    },
    /// Partition bounds asked for an empty or reversed time range.
    PartitionRange {
        from_ms: i64,
        to_ms: i64,
    },
    TooManyPartitions {
        step: String,
        from_ms: i64,
        to_ms: i64,
        max: usize,
    },
    /// An IMMUTABLE function was given `server` or an unknown name instead of a preset.
    NotAFixedLayout {
        name: String,
    },
    /// A layout given as arguments to an IMMUTABLE function has an argument out of range.
    LayoutArgument {
        argument: &'static str,
        value: String,
        allowed: String,
    },
    /// The high-water mark file could not be read when shared memory was set up.
    MarkUnreadable,
    /// A new high-water mark could not be written; `os_error`: the system's error number, if
    /// the file system gave one (the SQLSTATE follows it, as PostgreSQL's own file errors do).
    MarkWrite {
        reason: String,
        os_error: Option<i32>,
    },
    /// Another process has been writing a new mark for longer than `snowflake.max_mark_wait`.
    MarkWriterBusy {
        pid: i32,
        step: Option<WriteStep>,
        limit_ms: i64,
    },
    /// Marks were written, but each took longer than its lease, for longer than
    /// `snowflake.max_mark_wait` in all.
    MarkWriteTooSlow {
        limit_ms: i64,
    },
    /// With `snowflake.lease_sync`, the synchronous standbys did not confirm a new lease within
    /// `snowflake.max_mark_wait`.
    StandbysDidNotConfirm {
        standby_names: String,
        limit_ms: i64,
    },
    /// The sequence of the current tick is used up and the clock did not reach the next tick
    /// within `snowflake.max_clock_wait`.
    ClockStalled {
        limit_ms: i64,
    },
    PublicKeyUnset,
    /// The key file named by `snowflake.public_key_file` cannot be used (its text is never repeated).
    KeyFile {
        path: String,
        problem: crate::key_file::KeyFileProblem,
        /// The server's OS user, by name (its user id where the system has no name for it): the
        /// hint's `chown` names it.
        server_user: String,
    },
    /// The key setting is not 32 or 64 hexadecimal characters (its text is never repeated).
    PublicKeyInvalid {
        setting: &'static str,
        length: usize,
    },
    /// A text that is not a public id: its spelling (`public_id::Spelling::reason`), or not made
    /// with this server's key.
    InvalidPublicId {
        token: String,
        reason: String,
    },
    /// The clock is behind the last issued tick, whose sequence is used up, and did not catch up
    /// within `snowflake.max_clock_wait`.
    ClockBehind {
        behind_ms: i64,
        waited_ms: i64,
        /// With a leased machine id, when the mark waited for is the one another holder (or this
        /// server's earlier run) recorded in etcd: who recorded it.
        mark_from: Option<String>,
    },
    HotStandby,
    /// The same on a standby whose machine id is leased from etcd (the shell tells which): it
    /// holds none, and claims one at its promotion.
    HotStandbyLeased,
    /// The wall clock jumped forward by more than `snowflake.max_clock_jump` since the last lease.
    ClockJumped {
        jump_ms: i64,
        limit_ms: i64,
    },
    /// `infinity` or `-infinity` given as the time of an id.
    InfiniteTime {
        negative: bool,
    },
    /// The mark on disk was written under another layout, and the change was not accepted.
    LayoutChanged {
        old: Layout,
        new: Layout,
    },
}

impl From<LayoutError> for Error {
    fn from(e: LayoutError) -> Error {
        Error::Layout(e)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Error {}

impl Error {
    pub fn message(&self) -> String {
        match self {
            Error::NotPreloaded => {
                "pg_snowflake is not loaded through shared_preload_libraries".into()
            }
            Error::MachineIdNotHeld { source, last_error, lapsed, trouble } => format!(
                "no machine id is held: it is leased from {source}, and {}",
                match (lapsed, last_error) {
                    (None, Some(e)) if *trouble == Trouble::Released => format!("its worker {e}"),
                    (Some(id), Some(e)) => format!(
                        "the lease of machine id {id} reached its local deadline without a renewal (the last attempt failed: {e})"
                    ),
                    (Some(id), None) => format!(
                        "the lease of machine id {id} reached its local deadline while a renewal was still under way"
                    ),
                    (None, Some(e)) => format!("the last attempt failed: {e}"),
                    (None, None) => "the server is still claiming one".into(),
                }
            ),
            Error::HandSetIdRefused { id, source, last_error, trouble } => match (last_error, trouble) {
                (Some(e), Trouble::Reserved | Trouble::SpaceLayout) => {
                    format!("no id is issued under machine id {id} (snowflake.machine_id), reserved in {source}: {e}")
                }
                (Some(e), _) => format!(
                    "machine id {id} (snowflake.machine_id) is not reserved yet in {source}, and no id is issued under it until it is: the last attempt failed: {e}"
                ),
                (None, _) => format!(
                    "machine id {id} (snowflake.machine_id) is not reserved yet in {source}, and no id is issued under it until it is: the server is reserving it"
                ),
            },
            Error::MachineIdSource { setting, reason } => format!("no machine id from {setting}: {reason}"),
            Error::SettingNotAccepted { setting, text } => {
                format!("{setting} = {text:?} is not an integer; refusing to fall back to the default")
            }
            Error::EpochUnparsable { text, reason } => {
                format!("snowflake.epoch {text:?} is not a timestamp with a UTC offset: {reason}")
            }
            Error::UnknownPreset { name } => format!(
                "unknown snowflake layout {name:?}; known layouts: {}",
                crate::presets::names().join(", ")
            ),
            Error::PartitionStep { step } => {
                format!("partition step {step} is not a positive interval of whole milliseconds")
            }
            Error::PartitionRange { from_ms, to_ms } => format!(
                "partition range from {} to {} is empty: the start must be before the end",
                format_utc(*from_ms),
                format_utc(*to_ms)
            ),
            Error::TooManyPartitions { step, from_ms, to_ms, max } => format!(
                "a partition step of {step} from {} to {} makes more than {max} partitions",
                format_utc(*from_ms),
                format_utc(*to_ms)
            ),
            Error::NotAFixedLayout { name } if name.trim().eq_ignore_ascii_case(crate::presets::SERVER) => {
                format!("layout {name:?} is not fixed: the server's layout can change, so an IMMUTABLE function cannot use it")
            }
            Error::NotAFixedLayout { name } => format!(
                "unknown fixed snowflake layout {name:?}; the presets are: {}",
                crate::presets::PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            ),
            Error::LayoutArgument { argument, value, allowed } => {
                format!("snowflake layout argument {argument} = {value} is out of range ({allowed})")
            }
            Error::ClockBehind { behind_ms, waited_ms, mark_from: None } => format!(
                "the system clock is {behind_ms} ms behind the last snowflake id this server may have issued; waited {waited_ms} ms (snowflake.max_clock_wait) for it to catch up"
            ),
            Error::ClockBehind { behind_ms, waited_ms, mark_from: Some(from) } => format!(
                "no snowflake id before the clock passes the mark of this machine id's holder before this server, recorded in etcd by {from}: {behind_ms} ms from now (that holder's last id, or the deadline of its lease if it did not release the id); waited {waited_ms} ms (snowflake.max_clock_wait)"
            ),
            Error::MarkUnreadable => format!(
                "the snowflake high-water mark file {:?} in the data directory could not be read",
                crate::mark_file::FILE_NAME
            ),
            Error::PublicKeyUnset => "snowflake.public_key_file is not set: public ids need a key".into(),
            Error::KeyFile { path, problem, .. } => problem.message(path),
            Error::PublicKeyInvalid { setting, length } => format!(
                "{setting} is not 32 or 64 hexadecimal characters (a 128- or 256-bit key); it has {length} characters"
            ),
            Error::InvalidPublicId { token, reason } => format!("invalid snowflake public id {token:?}: {reason}"),
            Error::MarkWrite { reason, .. } => format!(
                "could not make the snowflake high-water mark durable (the file {:?} and, on PostgreSQL 15 and later, its WAL record): {reason}",
                crate::mark_file::FILE_NAME
            ),
            Error::MarkWriterBusy { pid, step, limit_ms } => format!(
                "waited {limit_ms} ms (snowflake.max_mark_wait) for process {pid} to write the snowflake high-water mark; it is {}",
                step.map_or("not saying what it is doing", WriteStep::describe)
            ),
            Error::MarkWriteTooSlow { limit_ms } => format!(
                "no snowflake high-water mark written within {limit_ms} ms (snowflake.max_mark_wait) reached the clock: each write took longer than its lease"
            ),
            Error::StandbysDidNotConfirm { standby_names, limit_ms } => format!(
                "the synchronous standbys (synchronous_standby_names = '{standby_names}') did not confirm the new snowflake lease within {limit_ms} ms (snowflake.max_mark_wait); snowflake.lease_sync = on requires it"
            ),
            Error::ClockStalled { limit_ms } => format!(
                "the system clock did not reach the next tick within {limit_ms} ms (a tick and snowflake.max_clock_wait): the sequence of the current tick is used up"
            ),
            Error::HotStandby => "cannot generate snowflake ids on a hot standby".into(),
            Error::HotStandbyLeased => {
                "no snowflake ids on a hot standby: a standby holds no machine id leased from etcd".into()
            }
            Error::ClockJumped { jump_ms, limit_ms } => format!(
                "the system clock jumped {jump_ms} ms forward since the last snowflake high-water mark was written, more than snowflake.max_clock_jump ({limit_ms} ms); refusing to lease ids that far ahead"
            ),
            Error::LayoutChanged { old, new } => format!(
                "the snowflake layout changed since the high-water mark was written: it was {}, it is {}; ids of the two layouts do not compare and can collide",
                old.describe(),
                new.describe()
            ),
            Error::InfiniteTime { negative } => {
                format!("time {}infinity cannot be carried by a snowflake id", if *negative { "-" } else { "" })
            }
            Error::Layout(e) => e.message(),
        }
    }

    pub fn hint(&self) -> String {
        match self {
            Error::MachineIdNotHeld { trouble, .. } => match trouble {
                Trouble::None => "The server is claiming a machine id in etcd (its background worker \"pg_snowflake machine id\" does, from start and from promotion); ids begin once it holds one, and everything else is served meanwhile: retry. snowflake_machine_id_status() shows how it goes.",
                Trouble::Unreachable => "The server keeps claiming and serves everything else meanwhile; ids begin once it holds one. Check that etcd is up and reachable from this server (snowflake.etcd_endpoints) and answers without errors, and see snowflake_machine_id_status() and the server log.",
                Trouble::Exhausted => "Every machine id of the id space is held: stop a server of the space cleanly (its id is freed at once), or widen snowflake.machine_bits on every server of the space (a change of layout: see Copies and layout changes in the manual), or give this server an id space of its own (snowflake.etcd_prefix).",
                Trouble::OwnEarlierClaim => "An earlier run of this server (before a restart of the whole server that could not release it) still holds its machine id; it is claimed again by itself when that lease expires, at most snowflake.etcd_lease_ttl after its last renewal. Nothing to do but wait; another id is not taken meanwhile, so that restarts do not use up the id space.",
                Trouble::SpaceLayout => "The id space (snowflake.etcd_prefix) was set up by servers of another layout, whose ids could equal this server's: give servers of this layout an id space of their own (another snowflake.etcd_prefix), or set this server's layout to the space's (snowflake.epoch, time_unit, machine_bits, sequence_bits), and restart.",
                Trouble::Lost => "The lease expired in etcd (this server was paused, or cut off from etcd, past snowflake.etcd_lease_ttl) or its claim was removed: the server claims a machine id again by itself. If it happens often, raise snowflake.etcd_lease_ttl or look at what pauses the server.",
                Trouble::Unreadable => "A key of the id space holds what pg_snowflake did not write: the message names it. Remove that key from etcd (etcdctl del KEY) if nothing else uses it, or use another snowflake.etcd_prefix.",
                Trouble::Released => "The worker \"pg_snowflake machine id\" released the machine id at a SIGTERM (pg_terminate_backend() of it, or the server's stop): it starts again within a second and claims one again, but not at the server's stop. Retry; snowflake_machine_id_status() shows how it goes.",
                Trouble::Setup => "A file of the etcd settings cannot be used (the message names it and why): fix it (owner, mode 0600 for a key or the credentials, its contents) and restart the server, or its worker (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_snowflake machine id').",
                Trouble::Reserved => "Two servers would issue the same ids under one machine id. Give this server a snowflake.machine_id that no server of the id space holds or reserved (etcdctl get --prefix --keys-only PREFIX/ lists them) and restart it; or stop the other server (a leasing server gives its id back at a clean stop; the reservation of a retired server is removed with etcdctl del PREFIX/reserved/ID). The server looks again every few seconds and issues ids once etcd no longer shows the conflict; a reservation taken over by a copy of this server (the message says another server of this cluster) is never taken back: give one of the two another machine id.",
                Trouble::Restored => "etcd was restored from a snapshot (or the endpoints lead to another etcd): every mark recorded after the snapshot is lost, and a new holder whose clock is behind could issue ids issued before. No machine id is claimed until that is dealt with: raise every mark of the id space above the last id issued, then remove pg_snowflake.etcd from the data directory of each server of the space (the manual: Many servers, Restoring etcd); or give every server of the space a fresh snowflake.etcd_prefix and restart them.",
            }
            .into(),
            Error::HandSetIdRefused { trouble, .. } => match trouble {
                // The hint of the same trouble (a leased server never meets it).
                Trouble::Reserved => {
                    let same = Error::MachineIdNotHeld { source: String::new(), last_error: None, lapsed: None, trouble: Trouble::Reserved };
                    return same.hint();
                }
                Trouble::SpaceLayout => "The id space (snowflake.etcd_prefix) was set up by servers of another layout, whose ids could equal this server's: reserve this server's id in an id space of its own layout (another snowflake.etcd_prefix), or remove snowflake.etcd_endpoints from its settings, and restart.",
                _ => "This server's machine id is set by hand, with etcd's settings beside it: it issues the first id under it once etcd confirms its reservation, so that no leasing server of the id space issues under it too (an id this server reserved before is issued at once). Check that etcd is up and reachable from this server (snowflake.etcd_endpoints); ids begin by themselves once it answers. To run without etcd, remove snowflake.etcd_endpoints from the settings and restart.",
            }
            .into(),
            Error::MachineIdSource { setting, .. } => match *setting {
                "snowflake.machine_id_source = 'pod_index'" => "Give the server its StatefulSet pod index (the Downward API's apps.kubernetes.io/pod-index label in the environment variable snowflake.pod_index_variable names, or a hostname ending in -N), or choose another snowflake.machine_id_source, and restart. Never a default: two servers would share it.",
                "snowflake.etcd_ca_file" | "snowflake.etcd_cert_file" | "snowflake.etcd_key_file" => "The TLS files are for https:// endpoints: write snowflake.etcd_endpoints as https://host:port, name etcd's CA in snowflake.etcd_ca_file (empty: the system's trusted CAs), and set snowflake.etcd_cert_file and snowflake.etcd_key_file together (a client certificate and its key, the key owned by the server's OS user with mode 0600); then restart.",
                "snowflake.etcd_endpoints" | "snowflake.etcd_prefix" => "Write snowflake.etcd_endpoints as the etcd members' client URLs, http://host:port or https://host:port (all of one scheme) separated by commas, and snowflake.etcd_prefix as a key prefix such as /pg_snowflake/prod (the same on every server of the id space), and restart.",
                _ => "Set snowflake.machine_id_source to 'manual' with snowflake.machine_id, or to 'etcd' or 'pod_index' without it, and restart.",
            }
            .into(),
            Error::NotPreloaded => "Add pg_snowflake to shared_preload_libraries in postgresql.conf, set snowflake.machine_id, and restart the server.".into(),
            Error::SettingNotAccepted { .. } => "Write the setting as a plain integer (see the server log for why it was refused) and restart.".into(),
            Error::EpochUnparsable { .. } => "Write the epoch as in 2025-01-01 00:00:00+00, with an explicit UTC offset, and restart.".into(),
            Error::UnknownPreset { .. } => "Name one of the known layouts, or 'server' for this server's own.".into(),
            Error::PartitionStep { .. } | Error::PartitionRange { .. } | Error::TooManyPartitions { .. } => "Give a start before the end and a positive step such as interval '1 month' or interval '1 day'; create partitions ahead in batches (a year of days is 366).".into(),
            Error::NotAFixedLayout { .. } | Error::LayoutArgument { .. } => "Name a preset, or give this server's layout as arguments (epoch, machine_bits, sequence_bits, time_unit_ms: the values of SELECT * FROM snowflake_layout()), epoch with its UTC offset; the STABLE forms without a layout read the server's.".into(),
            Error::MarkUnreadable => "The server log says why. The file holds the time of the last id this server may have issued: restore it; or remove it and restart, only if the clock is certainly later than every id issued or with a snowflake.machine_id no server has used.".into(),
            Error::PublicKeyUnset => "Write a key into a file owned by the server's OS user with chmod 600 (openssl rand -hex 32 > keyfile), name it in postgresql.conf with snowflake.public_key_file, and reload. Keep it secret and keep it: tokens only decode with their key.".into(),
            Error::KeyFile { path, problem, server_user } => problem.hint(path, server_user),
            Error::PublicKeyInvalid { .. } => "Write the key as 32 or 64 hexadecimal characters (openssl rand -hex 16, or -hex 32) and reload.".into(),
            Error::InvalidPublicId { .. } => "Public ids are 26 characters made by snowflake_to_public() with this server's key; snowflake_try_from_public() returns NULL instead of raising.".into(),
            Error::MarkWrite { .. } => "Check the data directory's free space, permissions and disk (the server log may say more); ids resume by themselves as soon as the mark can be written.".into(),
            Error::MarkWriterBusy { .. } => "That process may be stalled (a disk or network file system that does not answer, a synchronous standby that is down): look at its pid in pg_stat_activity. Ids resume as soon as it finishes or ends; to wait longer, raise snowflake.max_mark_wait and reload.".into(),
            Error::MarkWriteTooSlow { .. } => "The data directory's storage (or this process) is very slow or was stopped: check the disk and the server log. The next lease is twice as long as the last write took (up to 10 s); ids resume as soon as a write is quick enough.".into(),
            Error::StandbysDidNotConfirm { .. } => "Check that a synchronous standby is connected and streaming (pg_stat_replication); ids resume as soon as one confirms. To issue ids without them, set snowflake.lease_sync = off and reload (a failover may then re-issue ids of the last lease).".into(),
            Error::ClockStalled { .. } => "Check the system clock and its time source (a clock that stands still: a paused virtual machine, a broken clock source); ids resume as soon as it moves on.".into(),
            Error::ClockBehind { mark_from: Some(_), .. } => "Ids resume by themselves once this server's clock passes that mark: retry. A holder that ended without releasing the id (its whole server crashed or was paused, or etcd was out of its reach) recorded its lease's deadline, at most snowflake.etcd_lease_ttl after its last renewal; one that released it recorded its last id, and a wait then means its clock was ahead of this server's: check both servers' time synchronisation (NTP). To wait longer at each call, raise snowflake.max_clock_wait and reload. Never remove the mark from etcd: ids issued under this machine id before would be issued again.".into(),
            Error::ClockBehind { mark_from: None, .. } => "The clock was stepped backwards. Check the server's time synchronisation (run NTP in slew mode); to wait longer, raise snowflake.max_clock_wait and reload. If instead the clock was wrong (ahead) when earlier ids were issued, do not just remove the mark file: give this server a snowflake.machine_id no server has used, then remove pg_snowflake.mark from the data directory and restart; ids of the new machine id cannot collide with the old ones.".into(),
            Error::HotStandby => "Generate ids on the primary. A standby carries the primary's machine id; give it its own before promoting it.".into(),
            Error::HotStandbyLeased => "Generate ids on the primary. Once promoted, the standby's worker claims a machine id from etcd by itself (its old primary's, if that one gave it back): nothing to set.".into(),
            Error::ClockJumped { .. } => "Check the clock (NTP). If it is right, raise snowflake.max_clock_jump, or set it to 0 to turn the guard off, and reload; if it is wrong, correct it and ids resume at once.".into(),
            Error::LayoutChanged { old, .. } => format!(
                "If the change is deliberate, set snowflake.accept_layout_change = '{}' and restart; the next mark records the new layout. Otherwise restore the old settings.",
                old.describe()
            ),
            Error::InfiniteTime { .. } => "Give a finite time, from snowflake.epoch to the end of the timestamp field; see snowflake_layout().".into(),
            Error::Layout(e) => e.hint(),
        }
    }
}

impl LayoutError {
    pub fn message(&self) -> String {
        match self {
            LayoutError::MachineIdUnset { .. } => "snowflake.machine_id is not set".into(),
            LayoutError::MachineIdOutOfRange { machine_id, machine_bits } => format!(
                "snowflake.machine_id {machine_id} does not fit in snowflake.machine_bits = {machine_bits} (0 to {})",
                (1_i64 << machine_bits) - 1
            ),
            LayoutError::FieldWidth { setting, bits } => {
                format!("{setting} = {bits} is out of range ({MIN_FIELD_BITS} to {MAX_FIELD_BITS})")
            }
            LayoutError::TooFewTimestampBits { machine_bits, sequence_bits } => format!(
                "snowflake.machine_bits = {machine_bits} and snowflake.sequence_bits = {sequence_bits} leave {} timestamp bits, fewer than {MIN_TIMESTAMP_BITS}",
                63 - (machine_bits + sequence_bits).min(63)
            ),
            LayoutError::EpochBefore1970 { epoch_ms } => {
                format!("snowflake.epoch {} is before 1970-01-01 00:00:00+00", format_utc(*epoch_ms))
            }
            LayoutError::ClockBeforeEpoch { epoch_ms, now_ms } => format!(
                "snowflake.epoch {} is in the future: the clock reads {}",
                format_utc(*epoch_ms),
                format_utc(*now_ms)
            ),
            LayoutError::TimestampExhausted { layout } => format!(
                "the {}-bit timestamp field from snowflake.epoch {} ran out at {}",
                layout.timestamp_bits(),
                format_utc(layout.epoch_ms()),
                format_utc(layout.end_unix_ms())
            ),
            LayoutError::TimeUnit { tick_ms } => {
                format!("snowflake.time_unit = {tick_ms} is out of range (1 to {MAX_TICK_MS} milliseconds)")
            }
            LayoutError::TimeOutsideLayout { unix_ms, before: true, layout } => format!(
                "time {} is before snowflake.epoch {}",
                format_utc(*unix_ms),
                format_utc(layout.epoch_ms())
            ),
            LayoutError::TimeOutsideLayout { unix_ms, before: false, layout } => format!(
                "time {} is past the end of the {}-bit timestamp field, {}",
                format_utc(*unix_ms),
                layout.timestamp_bits(),
                format_utc(layout.end_unix_ms())
            ),
            LayoutError::PartOutOfRange { part, value, max } => {
                format!("{part} {value} is out of range (0 to {max})")
            }
            LayoutError::NegativeId { id } => format!("snowflake id {id} is negative"),
            LayoutError::TimeOutOfRange { id } => {
                format!("the time of snowflake id {id} is outside the range of timestamptz")
            }
        }
    }

    pub fn hint(&self) -> String {
        match self {
            LayoutError::MachineIdUnset { max } => format!(
                "Set snowflake.machine_id (0 to {max}) in postgresql.conf, or with -c on the server's command line, to a value no other server uses, and restart. Derive it from something unique such as a StatefulSet ordinal; never copy it between servers."
            ),
            LayoutError::MachineIdOutOfRange { .. } => "Choose a machine id in range, or raise snowflake.machine_bits (every server must use the same layout), and restart.".into(),
            LayoutError::FieldWidth { setting, .. } => format!(
                "Set {setting} to {MIN_FIELD_BITS} to {MAX_FIELD_BITS} bits (the default machine and sequence widths are 10 and 12) and restart."
            ),
            LayoutError::TooFewTimestampBits { .. } => format!(
                "snowflake.machine_bits + snowflake.sequence_bits may total at most {}; the default 10 + 12 leaves 41 timestamp bits (69 years). Fix the settings and restart.",
                63 - MIN_TIMESTAMP_BITS
            ),
            LayoutError::EpochBefore1970 { .. } => "Choose an epoch close to, and before, the first id you issue, and restart.".into(),
            LayoutError::ClockBeforeEpoch { .. } => "Check the system clock; if it is right, choose an epoch in the past and restart.".into(),
            LayoutError::TimestampExhausted { .. } => "Choose a later snowflake.epoch or give the timestamp more bits (fewer machine or sequence bits), and restart. Ids already issued under the old layout will not decode under the new one.".into(),
            LayoutError::TimeUnit { .. } => "Set snowflake.time_unit to the length of one tick in milliseconds (1 by default, 10 for Sonyflake-like ticks) and restart.".into(),
            LayoutError::TimeOutsideLayout { .. } => "Ids can only carry times from snowflake.epoch to the end of the timestamp field; see snowflake_layout().".into(),
            LayoutError::PartOutOfRange { .. } => "Each field must fit its bits in the server's layout; see snowflake_layout().".into(),
            LayoutError::NegativeId { .. } => "Snowflake ids are never negative: check where this value came from.".into(),
            LayoutError::TimeOutOfRange { .. } => "The id was not made with this server's layout: check snowflake.epoch and the bit settings.".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;

    #[test]
    fn a_refusal_of_a_leased_id_says_which_case_it_is_with_the_hint_of_its_last_error() {
        let refusal = |last_error: Option<&str>, lapsed, trouble| Error::MachineIdNotHeld {
            source: "etcd at http://e:2379 (id space /s)".into(),
            last_error: last_error.map(Into::into),
            lapsed,
            trouble,
        };
        for (e, says, hint) in [
            (refusal(None, None, Trouble::None), "and the server is still claiming one", "is claiming a machine id"),
            (
                refusal(None, Some(3), Trouble::None),
                "machine id 3 reached its local deadline while a renewal was still under way",
                "is claiming",
            ),
            (
                refusal(Some("etcd at http://e:2379: no answer within 300 ms"), Some(3), Trouble::Unreachable),
                "machine id 3 reached its local deadline without a renewal (the last attempt failed: etcd at",
                "Check that etcd is up",
            ),
            (
                refusal(Some("released machine id 3 at T (pg_terminate_backend())"), None, Trouble::Released),
                "and its worker released machine id 3 at T",
                "released the machine id at a SIGTERM",
            ),
            (
                refusal(Some("the lease of machine id 3 was lost"), None, Trouble::Lost),
                "and the last attempt failed: the lease of machine id 3 was lost",
                "The lease expired in etcd",
            ),
        ] {
            assert!(
                e.message()
                    .starts_with("no machine id is held: it is leased from etcd at http://e:2379 (id space /s), "),
                "{}",
                e.message()
            );
            assert!(e.message().contains(says), "{}", e.message());
            assert!(e.hint().contains(hint), "{}", e.hint());
        }
    }

    #[test]
    fn a_refusal_of_a_hand_set_id_says_why_with_the_hint_of_its_trouble() {
        let refusal = |last_error: Option<&str>, trouble| Error::HandSetIdRefused {
            id: 7,
            source: "etcd at http://e:2379 (id space /s)".into(),
            last_error: last_error.map(Into::into),
            trouble,
        };
        for (e, says, hint) in [
            (
                refusal(None, Trouble::None),
                "machine id 7 (snowflake.machine_id) is not reserved yet in etcd at http://e:2379 (id space /s), and no id is issued under it until it is: the server is reserving it",
                "once etcd confirms its reservation",
            ),
            (
                refusal(Some("etcd at http://e:2379: Connection refused"), Trouble::Unreachable),
                "is not reserved yet in etcd at http://e:2379 (id space /s), and no id is issued under it until it is: the last attempt failed: etcd at http://e:2379: Connection refused",
                "Check that etcd is up",
            ),
            (
                refusal(Some("machine id 7 (snowflake.machine_id) is held in the id space /s by a leasing server, db1:5432 (...)"), Trouble::Reserved),
                "no id is issued under machine id 7 (snowflake.machine_id), reserved in etcd at http://e:2379 (id space /s): machine id 7",
                "Two servers would issue the same ids under one machine id",
            ),
            (
                refusal(Some("the id space /s is of another layout (..., recorded by ...); this server's: ..."), Trouble::SpaceLayout),
                "no id is issued under machine id 7 (snowflake.machine_id), reserved in etcd at http://e:2379 (id space /s): the id space /s is of another layout",
                "reserve this server's id in an id space of its own layout",
            ),
        ] {
            assert!(e.message().contains(says), "{}", e.message());
            assert!(e.hint().contains(hint), "{}", e.hint());
        }
        let restored =
            Error::MachineIdNotHeld { source: "s".into(), last_error: None, lapsed: None, trouble: Trouble::Restored };
        assert!(restored.hint().contains("raise every mark of the id space"), "{}", restored.hint());
    }

    #[test]
    fn messages_name_the_setting_or_value_at_fault() {
        let cases: [(Error, &str); 11] = [
            (LayoutError::MachineIdUnset { max: 1023 }.into(), "snowflake.machine_id"),
            (LayoutError::MachineIdOutOfRange { machine_id: 128, machine_bits: 7 }.into(), "128"),
            (
                LayoutError::FieldWidth { setting: "snowflake.sequence_bits", bits: 30 }.into(),
                "snowflake.sequence_bits = 30",
            ),
            (
                LayoutError::TooFewTimestampBits { machine_bits: 20, sequence_bits: 20 }.into(),
                "leave 23 timestamp bits",
            ),
            (
                LayoutError::ClockBeforeEpoch { epoch_ms: 1_735_689_600_000, now_ms: 0 }.into(),
                "snowflake.epoch 2025-01-01 00:00:00+00 is in the future",
            ),
            (LayoutError::NegativeId { id: -5 }.into(), "-5"),
            (Error::ClockBehind { behind_ms: 5000, waited_ms: 1000, mark_from: None }, "5000 ms behind"),
            (
                Error::ClockBehind {
                    behind_ms: 5000,
                    waited_ms: 1000,
                    mark_from: Some("pg-1:5432 (data directory /d, system identifier 7)".into()),
                },
                "mark of this machine id's holder before this server, recorded in etcd by pg-1:5432",
            ),
            (
                Error::MarkWriterBusy { pid: 4242, step: Some(WriteStep::StandbyWait), limit_ms: 5000 },
                "for process 4242 to write the snowflake high-water mark; it is waiting for the synchronous standbys",
            ),
            (
                Error::StandbysDidNotConfirm { standby_names: "nosuch".into(), limit_ms: 5000 },
                "synchronous_standby_names = 'nosuch'",
            ),
            (Error::ClockStalled { limit_ms: 1001 }, "snowflake.max_clock_wait"),
        ];
        for (e, needle) in cases {
            assert!(e.message().contains(needle), "{:?}: {}", e, e.message());
            assert!(e.hint().ends_with('.'));
        }
        assert!(Error::from(LayoutError::MachineIdUnset { max: 1023 }).hint().contains("0 to 1023"));
    }

    #[test]
    fn unknown_preset_names_list_the_known_ones() {
        // Every preset, then server (the list is presets.rs's).
        let known = crate::presets::PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
        assert!(known.starts_with("twitter, discord, "), "{known}");
        assert_eq!(
            Error::UnknownPreset { name: "snowflake".into() }.message(),
            format!("unknown snowflake layout \"snowflake\"; known layouts: {known}, server")
        );
    }

    #[test]
    fn exhaustion_message_gives_the_date() {
        let l = Layout::new(0, 1, 16, 9).unwrap();
        assert_eq!(
            Error::from(LayoutError::TimestampExhausted { layout: l }).message(),
            "the 38-bit timestamp field from snowflake.epoch 1970-01-01 00:00:00+00 ran out at 1978-09-17 10:58:26.944+00"
        );
    }
}
