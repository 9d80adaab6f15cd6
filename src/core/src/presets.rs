//! Layouts of snowflake ids minted by other systems, for `snowflake_decode(id, layout)` and the
//! IMMUTABLE readers. Each is written down from its publisher's documentation or source, named in
//! `source`; `example` is the publisher's own decoded id where it shows one, and the tests decode
//! every example. This list is the only one: the SQL function `snowflake_presets()` shows it, and
//! the messages, the manual and the fuzzer read it from there (the check `lists.py` names
//! any copy of it that is not up to date).

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
    /// Where the publisher documents the layout (and how it splits the machine field, if it does).
    pub source: &'static str,
    /// An id the publisher shows decoded, if it shows one.
    pub example: Option<Example>,
}

/// An id and its fields as its publisher shows them.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    pub id: i64,
    /// Its time in UTC, as precisely as the publisher gives it (`2016-04-30 11:18:25.796`, or a
    /// date alone).
    pub utc: &'static str,
    pub machine_id: i64,
    pub sequence: i64,
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
        source: "Twitter's snowflake, IdWorker.scala: machine = 5 bits datacenter, 5 bits worker",
        example: None,
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
        source: "Discord's API reference, Snowflakes: machine = 5 bits worker, 5 bits process",
        example: Some(Example {
            id: 175_928_847_299_117_063,
            utc: "2016-04-30 11:18:25.796",
            machine_id: 1 << 5,
            sequence: 7,
        }),
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
        source: "Instagram Engineering, Sharding & IDs at Instagram: machine = logical shard",
        example: None,
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
        source: "Sony's sonyflake, README: 10 ms ticks, sequence above machine",
        example: None,
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
        source: "pgEdge snowflake, snowflake.c: machine = snowflake.node",
        example: Some(Example { id: 518_514_394_326_388_845, utc: "2026-12-01", machine_id: 5, sequence: 109 }),
    },
    // Baidu's uid-generator, its defaults (DefaultUidGenerator.java): sign | 28 s | 22 worker | 13
    // sequence, epoch 1463673600000 ms: 2016-05-20 00:00 in Beijing (+08), 2016-05-19 16:00 UTC.
    Preset {
        name: "baidu",
        epoch_ms: 1_463_673_600_000,
        tick_ms: 1000,
        timestamp_bits: 28,
        machine_bits: 22,
        sequence_bits: 13,
        sequence_above_machine: false,
        source: "Baidu's uid-generator, DefaultUidGenerator.java (its defaults): machine = worker id",
        example: None,
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
    /// Its fields from the most significant bit down, with their widths: `41 ms, 10 machine, 12
    /// sequence`, `39 of 10 ms, 8 sequence, 16 machine`, `28 s, 22 machine, 13 sequence`.
    pub fn fields(&self) -> String {
        let tick = match self.tick_ms {
            1 => "ms".to_string(),
            1000 => "s".to_string(),
            ms => format!("of {ms} ms"),
        };
        let (machine, sequence) =
            (format!("{} machine", self.machine_bits), format!("{} sequence", self.sequence_bits));
        let (middle, low) = if self.sequence_above_machine { (sequence, machine) } else { (machine, sequence) };
        format!("{} {tick}, {middle}, {low}", self.timestamp_bits)
    }

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
    use crate::calendar::format_utc;
    use crate::layout::MAX_FIELD_BITS;

    fn decode(name: &str, id: i64) -> (String, i64, i64) {
        let p = find(name).unwrap().decode(id).unwrap();
        (format_utc(p.unix_ms), p.machine_id, p.sequence)
    }

    #[test]
    fn every_example_decodes_as_its_publisher_says() {
        let mut examples = 0;
        for p in PRESETS {
            if let Some(e) = p.example {
                let (utc, machine_id, sequence) = decode(p.name, e.id);
                assert!(utc.starts_with(e.utc), "{}: {utc} is not {}", p.name, e.utc);
                assert_eq!((machine_id, sequence), (e.machine_id, e.sequence), "{}", p.name);
                examples += 1;
            }
        }
        assert!(examples >= 2);
    }

    #[test]
    fn every_preset_fills_its_bits_and_fits_the_sql_types() {
        let mut names: Vec<_> = PRESETS.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len(), "two presets share a name");
        for p in PRESETS {
            let total = p.timestamp_bits + p.machine_bits + p.sequence_bits;
            assert!(total == 63 || total == 64, "{}: {total} bits", p.name);
            // The machine id and the sequence are SQL integers.
            assert!(p.machine_bits <= MAX_FIELD_BITS && p.sequence_bits <= MAX_FIELD_BITS, "{}", p.name);
            assert!(!p.name.eq_ignore_ascii_case(SERVER) && p.name == p.name.trim().to_lowercase(), "{}", p.name);
            assert!(!p.source.is_empty(), "{}: say where the layout is published", p.name);
            // The largest id decodes to a time within timestamptz's range.
            let largest = if total == 64 { -1 } else { i64::MAX };
            assert!(p.decode(largest).is_ok(), "{}", p.name);
        }
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
            assert_eq!(format_utc(find(name).unwrap().epoch_ms), text, "{name}");
        }
    }

    #[test]
    fn fields_read_from_the_top() {
        assert_eq!(find("twitter").unwrap().fields(), "41 ms, 10 machine, 12 sequence");
        assert_eq!(find("sonyflake").unwrap().fields(), "39 of 10 ms, 8 sequence, 16 machine");
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
    fn baidu_readme_example_under_its_tests_settings() {
        // Baidu's README (Quick Start, step 4) parses 180363646902239241 as timestamp 2017-01-19
        // 12:15:46, workerId 4, sequence 9, made under its tests' settings
        // (src/test/resources/uid/default-uid-spring.xml: timeBits 29, workerBits 21, seqBits 13,
        // epochStr 2016-09-20, read and shown in the JVM's zone, Beijing's: +08). The preset's
        // fields, order and tick, with those widths and that epoch, decode it so.
        let tests =
            Preset { timestamp_bits: 29, machine_bits: 21, epoch_ms: 1_474_300_800_000, ..*find("baidu").unwrap() };
        let p = tests.decode(180_363_646_902_239_241).unwrap();
        assert_eq!((format_utc(p.unix_ms), p.machine_id, p.sequence), ("2017-01-19 04:15:46+00".into(), 4, 9));
        // Its defaults: a 63-bit layout of 1 s ticks, ending 8.5 years after its epoch.
        assert!(matches!(find("baidu").unwrap().decode(-1), Err(LayoutError::NegativeId { .. })));
        assert_eq!(decode("baidu", (1 << 35) | (4 << 13) | 9), ("2016-05-19 16:00:01+00".into(), 4, 9));
    }

    #[test]
    fn pgedge_bit_positions() {
        // ms since 2023-01-01 << 22 | node << 12 | count.
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
