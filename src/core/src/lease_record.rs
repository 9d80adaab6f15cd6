//! The lease as a WAL record: a primary logs each new high-water mark, and a server that replays
//! its WAL (a standby, a restored backup, crash recovery) learns the mark from it. The bytes are
//! fixed: a magic word, a format version, the writer's machine id and the mark, and since version
//! 2 the writer's layout, so that a standby configured with another layout than its primary's
//! refuses to issue ids after a promotion instead of issuing ids that do not compare with its
//! primary's. Byte 7 holds flags, zero in every record written before there were any (a reader
//! that knows none ignores them, so no new version was needed): bit 0, the machine id was leased
//! from etcd (the record names the id held last; -1 when none was).

use crate::calendar::format_utc;
use crate::mark_file::LayoutRecord;

const MAGIC: [u8; 4] = *b"SFLK";
const VERSION: u8 = 2;
/// Byte 7, bit 0: the machine id is leased.
const LEASED: u8 = 1;
/// The size of a record's data (version 2); version 1 records had the first [`LEN_V1`] bytes.
pub const LEN: usize = 40;
pub const LEN_V1: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The machine id of the server that wrote the mark: set by hand, or leased (the id it held
    /// last); -1 when it had none (a leased server's records of 0.2.0's betas all say -1).
    pub machine_id: i64,
    /// The machine id was leased from etcd (byte 7's bit 0; false in every record before it).
    pub leased: bool,
    /// The mark: no id of that server carries a time above this (ms since 1970).
    pub mark_unix_ms: i64,
    /// The layout the writer issued its ids under (`None` in a version 1 record).
    pub layout: Option<LayoutRecord>,
}

impl LeaseRecord {
    /// The record's bytes (version 2; a record without a layout writes zeroes there).
    pub fn encode(&self) -> [u8; LEN] {
        let mut bytes = [0_u8; LEN];
        bytes[..4].copy_from_slice(&MAGIC);
        bytes[4] = VERSION;
        bytes[7] = if self.leased { LEASED } else { 0 };
        bytes[8..16].copy_from_slice(&self.machine_id.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.mark_unix_ms.to_le_bytes());
        if let Some(l) = self.layout {
            bytes[5] = l.machine_bits as u8;
            bytes[6] = l.sequence_bits as u8;
            bytes[24..32].copy_from_slice(&l.epoch_ms.to_le_bytes());
            bytes[32..40].copy_from_slice(&l.time_unit_ms.to_le_bytes());
        }
        bytes
    }

    /// The record in `bytes`, or why they are not one.
    pub fn decode(bytes: &[u8]) -> Result<LeaseRecord, String> {
        if bytes.len() < LEN_V1 || bytes[..4] != MAGIC {
            return Err(format!("not a pg_snowflake lease record ({} bytes)", bytes.len()));
        }
        let word = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let layout = match (bytes[4], bytes.len()) {
            (1, LEN_V1) => None,
            (2, LEN) => (word(32) != 0).then(|| LayoutRecord {
                epoch_ms: word(24),
                time_unit_ms: word(32),
                machine_bits: bytes[5] as u32,
                sequence_bits: bytes[6] as u32,
            }),
            (1 | 2, n) => return Err(format!("a lease record of version {} with {n} bytes", bytes[4])),
            (v, _) => {
                return Err(format!("a lease record of version {v}, newer than this pg_snowflake reads ({VERSION})"))
            }
        };
        let leased = bytes[4] == 2 && bytes[7] & LEASED != 0;
        Ok(LeaseRecord { machine_id: word(8), mark_unix_ms: word(16), layout, leased })
    }

    /// Who wrote the record, for the log and `pg_walinspect`: "machine id 7" (set by hand, as
    /// before), "machine id 3 (leased)", or what a leased server's record without an id says.
    pub fn writer(&self) -> String {
        match (self.machine_id, self.leased) {
            (id, false) if id >= 0 => format!("machine id {id}"),
            (id, true) if id >= 0 => format!("machine id {id} (leased)"),
            (_, true) => "a server leasing its machine id, none held then".into(),
            (_, false) => {
                "a server leasing its machine id (a record of 0.2.0's betas: which id, it does not say)".into()
            }
        }
    }

    /// How `pg_walinspect` and the server log show the record.
    pub fn describe(&self) -> String {
        let layout = match self.layout.map(|r| r.layout()) {
            Some(Ok(l)) => format!(", layout {}", l.describe()),
            Some(Err(_)) => ", an invalid layout".into(),
            None => String::new(),
        };
        format!(
            "mark {} ({} ms since 1970), {}{layout}",
            format_utc(self.mark_unix_ms),
            self.mark_unix_ms,
            self.writer()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::layout::Layout;

    #[test]
    fn a_record_round_trips_and_describes_itself() {
        let r = LeaseRecord { machine_id: 7, mark_unix_ms: 1_764_000_000_123, layout: None, leased: false };
        assert_eq!(LeaseRecord::decode(&r.encode()), Ok(r));
        assert_eq!(r.describe(), "mark 2025-11-24 16:00:00.123+00 (1764000000123 ms since 1970), machine id 7");
        let l = Layout::new(1_735_689_600_000, 10, 8, 14).unwrap();
        let r = LeaseRecord { layout: Some((&l).into()), ..r };
        assert_eq!(LeaseRecord::decode(&r.encode()), Ok(r));
        assert!(r.describe().ends_with(&format!("machine id 7, layout {}", l.describe())), "{}", r.describe());
        let leased = LeaseRecord { machine_id: 3, leased: true, ..r };
        assert_eq!(LeaseRecord::decode(&leased.encode()), Ok(leased));
        assert!(leased.describe().contains(", machine id 3 (leased), layout "), "{}", leased.describe());
        let none = LeaseRecord { machine_id: -1, ..leased };
        assert!(none.describe().contains("a server leasing its machine id, none held then"), "{}", none.describe());
    }

    #[test]
    fn a_leased_server_s_record_of_0_2_0_betas_still_decodes() {
        // Byte 7 was zero in every record written before it held flags.
        let l = Layout::new(1_735_689_600_000, 1, 10, 12).unwrap();
        let beta = LeaseRecord { machine_id: -1, mark_unix_ms: 99, layout: Some((&l).into()), leased: false };
        let bytes = beta.encode();
        assert_eq!(bytes[7], 0);
        assert_eq!(LeaseRecord::decode(&bytes), Ok(beta));
        assert!(beta.describe().contains("which id, it does not say"), "{}", beta.describe());
    }

    #[test]
    fn version_1_records_are_still_read() {
        let v2 = LeaseRecord { machine_id: 3, mark_unix_ms: 99, layout: None, leased: false }.encode();
        let mut v1 = v2[..LEN_V1].to_vec();
        v1[4] = 1;
        assert_eq!(
            LeaseRecord::decode(&v1),
            Ok(LeaseRecord { machine_id: 3, mark_unix_ms: 99, layout: None, leased: false })
        );
    }

    #[test]
    fn other_bytes_are_refused() {
        let good = LeaseRecord { machine_id: -1, mark_unix_ms: 5, layout: None, leased: false }.encode();
        assert!(LeaseRecord::decode(&good[..LEN - 1]).is_err());
        let mut other = good;
        other[0] = b'X';
        assert!(LeaseRecord::decode(&other).is_err());
        let mut newer = good;
        newer[4] = 3;
        assert!(LeaseRecord::decode(&newer).unwrap_err().contains("version 3"));
    }
}
