//! What a server remembers of its etcd id space, durably, beside its mark: the file
//! `pg_snowflake.etcd` in the data directory (JSON, replaced as the mark file is: a temporary
//! file, synced, renamed over it, the directory synced). Written by the machine id's worker only;
//! read by it at its start and by the postmaster when shared memory is set up.
//!
//! - A leasing server's: the highest revision of etcd's answers it saw in the id space, and the
//!   cluster that gave them. An etcd restored from a snapshot answers with the snapshot's
//!   revision, lower: the worker refuses it (`claim::ClaimError::Restored`) until the marks are
//!   raised and the file removed, or the id space is another (a record of another prefix is none).
//! - A hand-set server's (etcd's settings beside `snowflake.machine_id`): the machine id whose
//!   reservation it saw confirmed, who it was then, and the mark it took as used. At its next
//!   start, the same data directory on the same host, set to the same id in the same id space,
//!   issues at once (the worker checks the reservation again in the background); any other start
//!   (a first reservation, another id, a copy of the data directory elsewhere, whose record names
//!   its original) issues nothing until the worker has confirmed the reservation.
//!
//! The file is copied with the data directory (a base backup, pg_rewind): a copy has seen what its
//! original saw.

use crate::claim::{Holder, Seen};
use crate::start_check::Reservation;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub const FILE_NAME: &str = "pg_snowflake.etcd";
const TEMP_NAME: &str = "pg_snowflake.etcd.tmp";
const FORMAT: &str = "pg_snowflake etcd record";
const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdRecord {
    format: String,
    version: u32,
    /// The id space (`snowflake.etcd_prefix`) the record is of.
    pub prefix: String,
    /// A leasing server's: the highest revision it saw, and the cluster (its id as text: a u64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<SeenRecord>,
    /// A hand-set server's: the reservation it saw confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<ReservedRecord>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeenRecord {
    pub cluster_id: String,
    pub revision: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservedRecord {
    pub machine_id: i64,
    /// The server that saw it confirmed, and its layout then (the space's: a confirmation checks it).
    pub by: Holder,
    pub layout: String,
    /// The mark it took as used then (the last leasing holder's), -1: none.
    pub taken_ms: i64,
}

impl EtcdRecord {
    /// An empty record of the id space `prefix`.
    pub fn new(prefix: &str) -> EtcdRecord {
        EtcdRecord { format: FORMAT.into(), version: VERSION, prefix: prefix.into(), seen: None, reserved: None }
    }

    /// The record of `prefix` in `found` (a record of another id space is none), or a new one.
    pub fn of(found: Option<EtcdRecord>, prefix: &str) -> EtcdRecord {
        found.filter(|r| r.prefix == prefix).unwrap_or_else(|| EtcdRecord::new(prefix))
    }

    /// What was seen of etcd in the id space, if anything.
    pub fn seen(&self) -> Option<Seen> {
        let s = self.seen.as_ref()?;
        Some(Seen { cluster_id: s.cluster_id.parse().ok()?, revision: s.revision })
    }

    pub fn set_seen(&mut self, seen: Seen) {
        self.seen = Some(SeenRecord { cluster_id: seen.cluster_id.to_string(), revision: seen.revision });
    }

    /// What the record says at the start of `me` (its holder: system identifier, host, data
    /// directory; the port and the postmaster do not count), set by hand to machine id `id` in
    /// the id space `prefix` beside, of `layout`: confirmed before only if this very data
    /// directory on this host saw this id confirmed in this id space, under this layout.
    pub fn reservation(found: Option<&EtcdRecord>, prefix: &str, me: &Holder, id: i64, layout: &str) -> Reservation {
        match found.filter(|r| r.prefix == prefix).and_then(|r| r.reserved.as_ref()) {
            Some(r) if r.machine_id == id && r.by.same_data_directory(me) && r.layout == layout => {
                Reservation::Confirmed { taken_ms: r.taken_ms }
            }
            _ => Reservation::Awaiting,
        }
    }
}

/// The record in `dir`: `Ok(None)` when there is none, an error when the file exists but is not
/// a record.
pub fn read(dir: &Path) -> Result<Option<EtcdRecord>, String> {
    let text = match fs::read_to_string(dir.join(FILE_NAME)) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let record: EtcdRecord = serde_json::from_str(&text).map_err(|e| format!("it is not a record: {e}"))?;
    if record.format != FORMAT || record.version != VERSION {
        return Err(format!(
            "its format is {:?} version {}, not {FORMAT:?} version {VERSION}",
            record.format, record.version
        ));
    }
    Ok(Some(record))
}

/// Replaces the record in `dir` by `record`, durably, before returning.
pub fn write(dir: &Path, record: &EtcdRecord) -> io::Result<()> {
    let text = serde_json::to_string_pretty(record).expect("a record serialises") + "\n";
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(dir.join(TEMP_NAME))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    fs::rename(dir.join(TEMP_NAME), dir.join(FILE_NAME))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me(host: &str, port: i32) -> Holder {
        Holder {
            system_identifier: "7400000000000000001".into(),
            host: host.into(),
            port,
            data_directory: "/var/lib/postgresql/15/main".into(),
            postmaster: "100@1".into(),
        }
    }

    #[test]
    fn a_record_reads_back_and_says_what_it_saw() {
        let dir = std::env::temp_dir().join(format!("pg_snowflake-etcd-record-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir), Ok(None));
        let mut r = EtcdRecord::new("/p");
        r.set_seen(Seen { cluster_id: u64::MAX - 1, revision: 42 });
        r.reserved = Some(ReservedRecord { machine_id: 3, by: me("db1", 5432), layout: "L".into(), taken_ms: 77 });
        write(&dir, &r).unwrap();
        let back = read(&dir).unwrap().unwrap();
        assert_eq!(back, r);
        assert_eq!(back.seen(), Some(Seen { cluster_id: u64::MAX - 1, revision: 42 }));
        assert_eq!(EtcdRecord::of(Some(back.clone()), "/q"), EtcdRecord::new("/q"), "another id space: none");
        // The same data directory on the same host, another port: confirmed; elsewhere (a copy),
        // another id or another id space: awaiting.
        assert_eq!(
            EtcdRecord::reservation(Some(&back), "/p", &me("db1", 5433), 3, "L"),
            Reservation::Confirmed { taken_ms: 77 }
        );
        assert_eq!(EtcdRecord::reservation(Some(&back), "/p", &me("db2", 5432), 3, "L"), Reservation::Awaiting);
        assert_eq!(EtcdRecord::reservation(Some(&back), "/p", &me("db1", 5432), 4, "L"), Reservation::Awaiting);
        assert_eq!(EtcdRecord::reservation(Some(&back), "/q", &me("db1", 5432), 3, "L"), Reservation::Awaiting);
        assert_eq!(EtcdRecord::reservation(None, "/p", &me("db1", 5432), 3, "L"), Reservation::Awaiting);
        assert_eq!(
            EtcdRecord::reservation(Some(&back), "/p", &me("db1", 5432), 3, "M"),
            Reservation::Awaiting,
            "another layout"
        );
        fs::write(dir.join(FILE_NAME), "{\"format\": 1}").unwrap();
        assert!(read(&dir).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
