//! Layouts of snowflake ids minted by other systems, for `snowflake_decode(id, layout)`. Each is
//! written down from its publisher's documentation; the tests use their published examples.

use crate::layout::{LayoutError, Parts};

/// How another system cuts its ids, from the most significant bit down: timestamp, then machine
/// and sequence in the order given.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub epoch_ms: i64,
    pub tick_ms: i64,
    pub timestamp_bits: u32,
    pub machine_bits: u32,
    pub sequence_bits: u32,
    /// Sonyflake puts the sequence above the machine id.
    pub sequence_above_machine: bool,
}

pub const PRESETS: &[Preset] = &[
    // 41 | 10 (5 datacenter + 5 worker) | 12, epoch 2010-11-04 01:42:54.657 UTC.
    Preset {
        name: "twitter",
        epoch_ms: 1_288_834_974_657,
        tick_ms: 1,
        timestamp_bits: 41,
        machine_bits: 10,
        sequence_bits: 12,
        sequence_above_machine: false,
    },
    // 42 | 10 (5 worker + 5 process) | 12, epoch 2015-01-01 00:00:00 UTC; all 64 bits.
    Preset {
        name: "discord",
        epoch_ms: 1_420_070_400_000,
        tick_ms: 1,
        timestamp_bits: 42,
        machine_bits: 10,
        sequence_bits: 12,
        sequence_above_machine: false,
    },
    // 41 | 13 (logical shard) | 10, epoch 2011-08-24 21:07:01.721 UTC; all 64 bits.
    Preset {
        name: "instagram",
        epoch_ms: 1_314_220_021_721,
        tick_ms: 1,
        timestamp_bits: 41,
        machine_bits: 13,
        sequence_bits: 10,
        sequence_above_machine: false,
    },
    // 39 (10 ms ticks) | 8 sequence | 16 machine, epoch 2014-09-01 00:00:00 UTC.
    Preset {
        name: "sonyflake",
        epoch_ms: 1_409_529_600_000,
        tick_ms: 10,
        timestamp_bits: 39,
        machine_bits: 16,
        sequence_bits: 8,
        sequence_above_machine: true,
    },
    // pgEdge's snowflake extension (its snowflake.c: SNOWFLAKE_EPOCH_OFFSET 1672531200 s,
    // SNOWFLAKE_MSEC_SHIFT 22 with a 41-bit mask, SNOWFLAKE_NODE_SHIFT 12 with a 10-bit mask, the
    // count in bits 0-11): 41 ms | 10 node (snowflake.node) | 12 count, epoch 2023-01-01 UTC.
    Preset {
        name: "pgedge",
        epoch_ms: 1_672_531_200_000,
        tick_ms: 1,
        timestamp_bits: 41,
        machine_bits: 10,
        sequence_bits: 12,
        sequence_above_machine: false,
    },
];

/// The name that stands for this server's own layout.
pub const SERVER: &str = "server";

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).chain([SERVER]).collect()
}

/// The preset of this name (any case, spaces around it ignored); `None` for an unknown name, which
/// the caller reports as [`crate::Error::UnknownPreset`] (its message lists [`names`]).
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(name.trim()))
}

impl Preset {
    pub fn decode(&self, id: i64) -> Result<Parts, LayoutError> {
        let total = self.timestamp_bits + self.machine_bits + self.sequence_bits;
        // A 64-bit layout uses the sign bit for time; a 63-bit one never mints a negative id.
        if total == 63 && id < 0 {
            return Err(LayoutError::NegativeId { id });
        }
        let bits = id as u64;
        let field = |shift: u32, width: u32| ((bits >> shift) & ((1_u64 << width) - 1)) as i64;
        let (machine, sequence) = if self.sequence_above_machine {
            (field(0, self.machine_bits), field(self.machine_bits, self.sequence_bits))
        } else {
            (field(self.sequence_bits, self.machine_bits), field(0, self.sequence_bits))
        };
        let tick = (bits >> (self.machine_bits + self.sequence_bits)) as i64;
        Ok(Parts { unix_ms: self.epoch_ms + tick * self.tick_ms, machine_id: machine, sequence })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calendar::{format_utc, parse_timestamptz};

    fn decode(name: &str, id: i64) -> (String, i64, i64) {
        let p = find(name).unwrap().decode(id).unwrap();
        (format_utc(p.unix_ms), p.machine_id, p.sequence)
    }

    #[test]
    fn epochs_are_the_published_ones() {
        for (name, text) in [
            ("twitter", "2010-11-04 01:42:54.657+00"),
            ("discord", "2015-01-01 00:00:00+00"),
            ("instagram", "2011-08-24 21:07:01.721+00"),
            ("sonyflake", "2014-09-01 00:00:00+00"),
            ("pgedge", "2023-01-01 00:00:00+00"),
        ] {
            assert_eq!(find(name).unwrap().epoch_ms, parse_timestamptz(text).unwrap(), "{name}");
        }
    }

    #[test]
    fn discord_documented_example() {
        // Discord's developer documentation: 175928847299117063 was created 2016-04-30
        // 11:18:25.796 UTC by internal worker 1, process 0, increment 7.
        assert_eq!(decode("discord", 175_928_847_299_117_063), ("2016-04-30 11:18:25.796+00".into(), 1 << 5, 7));
    }

    #[test]
    fn twitter_instagram_and_sonyflake_bit_positions() {
        // Twitter: time << 22 | datacenter << 17 | worker << 12 | sequence.
        let id = (1_000_i64 << 22) | (3 << 17) | (9 << 12) | 42;
        assert_eq!(decode("twitter", id), ("2010-11-04 01:42:55.657+00".into(), (3 << 5) | 9, 42));
        // Instagram: time << 23 | shard << 10 | sequence (its engineering blog's scheme).
        let id = (5_i64 << 23) | (5001 << 10) | 1023;
        assert_eq!(decode("instagram", id), ("2011-08-24 21:07:01.726+00".into(), 5001, 1023));
        // Sonyflake: 10 ms ticks << 24 | sequence << 16 | machine.
        let id = (100_i64 << 24) | (7 << 16) | 65_535;
        assert_eq!(decode("sonyflake", id), ("2014-09-01 00:00:01+00".into(), 65_535, 7));
    }

    #[test]
    fn pgedge_id_decodes_to_its_node_count_and_time() {
        // An id of pgEdge's snowflake.nextval(), which its snowflake.format() shows as node 5,
        // count 109, minted on 2026-12-01.
        let (ts, node, count) = decode("pgedge", 518_514_394_326_388_845);
        assert!(ts.starts_with("2026-12-01 "), "{ts}");
        assert_eq!((node, count), (5, 109));
        // Bit by bit: ms since 2023-01-01 << 22 | node << 12 | count.
        let id = (86_400_000_i64 << 22) | (1023 << 12) | 4095;
        assert_eq!(decode("pgedge", id), ("2023-01-02 00:00:00+00".into(), 1023, 4095));
        assert!(matches!(find("pgedge").unwrap().decode(-1), Err(LayoutError::NegativeId { .. })));
    }

    #[test]
    fn sixty_four_bit_layouts_accept_the_sign_bit() {
        let (ts, _, _) = decode("discord", -1);
        assert!(ts.starts_with("2154-"), "{ts}");
        assert!(matches!(find("twitter").unwrap().decode(-1), Err(LayoutError::NegativeId { .. })));
    }

    #[test]
    fn names_are_found_in_any_case() {
        assert!(find("snowflake").is_none());
        assert!(find(" Discord ").is_some());
    }
}
