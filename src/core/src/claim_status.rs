//! What the holder of a leased machine id tells every process: the lease, its last renewal, its
//! counters and the last error met, in shared memory. Written by one process (the worker that
//! holds the lease), read by any (`snowflake_machine_id_status()`, and a backend refused an id,
//! whose error names the last error). Never read on the hot path.

#[cfg(loom)]
use loom::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicU8};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicU8};

/// The longest error text kept (bytes); longer ones are cut at a character boundary.
pub const MESSAGE_BYTES: usize = 400;

/// What kind of trouble the last error was: a refusal for want of an id says what to do about
/// this one (its hint), not about every kind at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Trouble {
    None = 0,
    /// etcd could not be reached, or answered an error.
    Unreachable = 1,
    /// Every id of the space is held.
    Exhausted = 2,
    /// An earlier run of this server still holds its id, until its lease expires.
    OwnEarlierClaim = 3,
    /// The id space is of another layout.
    SpaceLayout = 4,
    /// The lease was lost (expired in etcd, or the claim key gone).
    Lost = 5,
    /// A key of the space could not be read.
    Unreadable = 6,
    /// The worker's set-up failed: a file of its settings (credentials, TLS) cannot be used.
    Setup = 7,
    /// The worker released the id at a SIGTERM (`pg_terminate_backend()`, or a stop of the
    /// server): it is started again, unless the server is stopping.
    Released = 8,
    /// A machine id set by hand is held in its id space by a leasing server, or reserved there by
    /// another server (or the space is of another layout): this server issues nothing under it.
    Reserved = 9,
    /// etcd answered with a lower revision than this server saw, or is another cluster: restored
    /// from a snapshot (its marks lowered), or another etcd.
    Restored = 10,
}

impl Trouble {
    fn from_u8(n: u8) -> Trouble {
        match n {
            1 => Trouble::Unreachable,
            2 => Trouble::Exhausted,
            3 => Trouble::OwnEarlierClaim,
            4 => Trouble::SpaceLayout,
            5 => Trouble::Lost,
            6 => Trouble::Unreadable,
            7 => Trouble::Setup,
            8 => Trouble::Released,
            9 => Trouble::Reserved,
            10 => Trouble::Restored,
            _ => Trouble::None,
        }
    }
}

#[repr(C)]
pub struct ClaimStatus {
    /// The etcd lease of the claim, 0 when none.
    pub lease_id: AtomicI64,
    /// The local deadline of the lease (ms since 1970): no id is issued from then on. -1: none.
    pub deadline_ms: AtomicI64,
    /// When the last renewal that succeeded was sent (ms since 1970), -1: none yet.
    pub renewed_ms: AtomicI64,
    /// The high-water mark recorded in etcd for the id held (ms since 1970), -1: none, and the
    /// revision of etcd's key it was recorded at (a worker started again writes over that one).
    pub recorded_mark_ms: AtomicI64,
    pub recorded_mark_rev: AtomicI64,
    /// Claims won, renewals that succeeded and failed, leases lost, calls refused for want of an id.
    pub claims: AtomicU64,
    pub renewals: AtomicU64,
    pub renewal_failures: AtomicU64,
    pub losses: AtomicU64,
    pub refusals: AtomicU64,
    /// When the last error was met (ms since 1970), -1: none since the id was last held.
    pub error_ms: AtomicI64,
    error_kind: AtomicU8,
    error: MessageCell,
    /// The mark this holder found recorded in etcd when it claimed the id (ms since 1970), -1:
    /// none, and who recorded it: a refusal for a clock behind that mark names them.
    pub inherited_mark_ms: AtomicI64,
    inherited_from: MessageCell,
    /// How many other servers held an id of the id space at this server's last claim, -1: no
    /// claim yet (0: a new prefix starts an empty space; a typo in it too).
    pub holders_at_claim: AtomicI64,
    /// How many ids of the id space servers set by hand had reserved, as this server last read
    /// them (at its last claim; set by hand, at its last look at its own reservation), -1: not
    /// read yet. With `holders_at_claim`, who else is in the space.
    pub reservations: AtomicI64,
    /// Set by hand: the machine id this server's worker last found reserved for it in the id space
    /// (reserved, or its reservation confirmed), -1: none (not yet, or refused).
    pub reserved_id: AtomicI64,
    /// The machine id this server held last (now, or before its lease was lost or released), -1:
    /// none since shared memory was set up: the machine id its mark file and lease records name.
    pub last_held: AtomicI64,
}

impl Default for ClaimStatus {
    fn default() -> ClaimStatus {
        ClaimStatus {
            lease_id: AtomicI64::new(0),
            deadline_ms: AtomicI64::new(-1),
            renewed_ms: AtomicI64::new(-1),
            recorded_mark_ms: AtomicI64::new(-1),
            recorded_mark_rev: AtomicI64::new(0),
            claims: AtomicU64::new(0),
            renewals: AtomicU64::new(0),
            renewal_failures: AtomicU64::new(0),
            losses: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
            error_ms: AtomicI64::new(-1),
            error_kind: AtomicU8::new(0),
            error: MessageCell::default(),
            inherited_mark_ms: AtomicI64::new(-1),
            inherited_from: MessageCell::default(),
            holders_at_claim: AtomicI64::new(-1),
            reservations: AtomicI64::new(-1),
            reserved_id: AtomicI64::new(-1),
            last_held: AtomicI64::new(-1),
        }
    }
}

impl ClaimStatus {
    /// Records the last error (the holder only) and its kind, at `now_ms`; `None` clears it.
    pub fn set_error(&self, message: Option<&str>, kind: Trouble, now_ms: i64) {
        self.error.set(message.unwrap_or(""));
        self.error_kind.store(if message.is_some() { kind as u8 } else { 0 }, Relaxed);
        self.error_ms.store(if message.is_some() { now_ms } else { -1 }, Relaxed);
    }

    /// The kind of the last error (`Trouble::None`: none).
    pub fn trouble(&self) -> Trouble {
        Trouble::from_u8(self.error_kind.load(Relaxed))
    }

    /// The last error, if any.
    pub fn error(&self) -> Option<String> {
        Some(self.error.get()).filter(|m| !m.is_empty())
    }

    /// Records the mark found in etcd at a claim and who recorded it (the holder only); `None`:
    /// none was found.
    pub fn set_inherited(&self, mark: Option<(i64, &str)>) {
        self.inherited_mark_ms.store(-1, Relaxed);
        self.inherited_from.set(mark.map_or("", |(_, from)| from));
        self.inherited_mark_ms.store(mark.map_or(-1, |(ms, _)| ms), Relaxed);
    }

    /// The mark found in etcd at the claim and who recorded it, if any.
    pub fn inherited(&self) -> Option<(i64, String)> {
        let ms = self.inherited_mark_ms.load(Relaxed);
        let from = self.inherited_from.get();
        (ms >= 0 && !from.is_empty()).then_some((ms, from))
    }
}

/// A short text written by one process and read by any, through a sequence counter that is odd
/// while the bytes change: a reader retries until it reads them unchanged.
#[repr(C)]
struct MessageCell {
    seq: AtomicU32,
    len: AtomicU32,
    bytes: [AtomicU8; MESSAGE_BYTES],
}

impl Default for MessageCell {
    fn default() -> MessageCell {
        MessageCell { seq: AtomicU32::new(0), len: AtomicU32::new(0), bytes: std::array::from_fn(|_| AtomicU8::new(0)) }
    }
}

impl MessageCell {
    fn set(&self, text: &str) {
        let mut end = text.len().min(MESSAGE_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let seq = self.seq.load(Relaxed);
        self.seq.store(seq.wrapping_add(1), Release);
        for (cell, b) in self.bytes.iter().zip(text[..end].bytes()) {
            cell.store(b, Release);
        }
        self.len.store(end as u32, Release);
        self.seq.store(seq.wrapping_add(2), Release);
    }

    fn get(&self) -> String {
        loop {
            let before = self.seq.load(Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let len = (self.len.load(Acquire) as usize).min(MESSAGE_BYTES);
            let bytes: Vec<u8> = self.bytes[..len].iter().map(|b| b.load(Acquire)).collect();
            if self.seq.load(Acquire) == before {
                return String::from_utf8_lossy(&bytes).into_owned();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_error_is_kept_whole_or_cut_at_a_character() {
        let s = ClaimStatus::default();
        assert_eq!(s.error(), None);
        s.set_error(Some("etcd at http://127.0.0.1:2379: connection refused"), Trouble::Unreachable, 5);
        assert_eq!(s.trouble(), Trouble::Unreachable);
        assert_eq!(s.error().as_deref(), Some("etcd at http://127.0.0.1:2379: connection refused"));
        assert_eq!(s.error_ms.load(Relaxed), 5);
        let long = "é".repeat(MESSAGE_BYTES);
        s.set_error(Some(&long), Trouble::Lost, 6);
        let kept = s.error().unwrap();
        assert!(kept.len() <= MESSAGE_BYTES && kept.chars().all(|c| c == 'é'), "{kept}");
        s.set_error(None, Trouble::Lost, 7);
        assert_eq!((s.error(), s.error_ms.load(Relaxed), s.trouble()), (None, -1, Trouble::None));
    }
}
