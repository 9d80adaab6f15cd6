//! The lease as a WAL record: a primary logs each new high-water mark, and a server that replays
//! its WAL (a standby, a restored backup, crash recovery) learns the mark from it. The bytes are
//! fixed: a magic word, a format version, the writer's machine id and the mark.

use crate::calendar::format_utc;

const MAGIC: [u8; 4] = *b"SFLK";
const VERSION: u8 = 1;
/// The size of a record's data.
pub const LEN: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The machine id of the server that wrote the mark; -1 when it had none set.
    pub machine_id: i64,
    /// The mark: no id of that server carries a time above this (ms since 1970).
    pub mark_unix_ms: i64,
}

impl LeaseRecord {
    pub fn encode(&self) -> [u8; LEN] {
        let mut bytes = [0_u8; LEN];
        bytes[..4].copy_from_slice(&MAGIC);
        bytes[4] = VERSION;
        bytes[8..16].copy_from_slice(&self.machine_id.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.mark_unix_ms.to_le_bytes());
        bytes
    }

    /// The record in `bytes`, or why they are not one.
    pub fn decode(bytes: &[u8]) -> Result<LeaseRecord, String> {
        if bytes.len() != LEN || bytes[..4] != MAGIC {
            return Err(format!("not a pg_snowflake lease record ({} bytes)", bytes.len()));
        }
        if bytes[4] != VERSION {
            return Err(format!(
                "a lease record of version {}, newer than this pg_snowflake reads ({VERSION})",
                bytes[4]
            ));
        }
        let word = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(LeaseRecord { machine_id: word(8), mark_unix_ms: word(16) })
    }

    /// How `pg_walinspect` and the server log show the record.
    pub fn describe(&self) -> String {
        format!(
            "mark {} ({} ms since 1970), machine id {}",
            format_utc(self.mark_unix_ms),
            self.mark_unix_ms,
            self.machine_id
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_describes_itself() {
        let r = LeaseRecord { machine_id: 7, mark_unix_ms: 1_764_000_000_123 };
        assert_eq!(LeaseRecord::decode(&r.encode()), Ok(r));
        assert_eq!(r.describe(), "mark 2025-11-24 16:00:00.123+00 (1764000000123 ms since 1970), machine id 7");
    }

    #[test]
    fn other_bytes_are_refused() {
        let good = LeaseRecord { machine_id: -1, mark_unix_ms: 5 }.encode();
        assert!(LeaseRecord::decode(&good[..LEN - 1]).is_err());
        let mut other = good;
        other[0] = b'X';
        assert!(LeaseRecord::decode(&other).is_err());
        let mut newer = good;
        newer[4] = 2;
        assert!(LeaseRecord::decode(&newer).unwrap_err().contains("version 2"));
    }
}
