//! The bit layout of an id: `0 | timestamp | machine id | sequence`, as pure arithmetic.
//!
//! The 63 value bits are a budget: `machine_bits` and `sequence_bits` are chosen, the timestamp field
//! gets the rest. The timestamp counts ticks of `tick_ms` milliseconds (the time unit, 1 by default)
//! since `epoch_ms` (milliseconds since 1970-01-01 UTC); the sequence counts ids within one tick.

use crate::calendar::format_utc;

/// Below this many timestamp bits a layout lasts barely a year (2^35 ms is 1.09 years).
pub const MIN_TIMESTAMP_BITS: u32 = 35;
/// The widest machine or sequence field the settings accept.
pub const MAX_FIELD_BITS: u32 = 24;
/// The narrowest machine or sequence field the settings accept.
pub const MIN_FIELD_BITS: u32 = 1;
/// The longest tick the settings accept: one minute.
pub const MAX_TICK_MS: i64 = 60_000;

/// Why a layout cannot work, or why a value has no place in it. Plain data: the wording is in
/// [`crate::error`], the SQLSTATE in the PostgreSQL shell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    FieldWidth {
        setting: &'static str,
        bits: u32,
    },
    TooFewTimestampBits {
        machine_bits: u32,
        sequence_bits: u32,
    },
    EpochBefore1970 {
        epoch_ms: i64,
    },
    TimeUnit {
        tick_ms: i64,
    },
    MachineIdUnset {
        max: i64,
    },
    MachineIdOutOfRange {
        machine_id: i64,
        machine_bits: u32,
    },
    /// The clock reads before the epoch: at start this is an epoch in the future.
    ClockBeforeEpoch {
        epoch_ms: i64,
        now_ms: i64,
    },
    TimestampExhausted {
        layout: Layout,
    },
    /// A time given to a helper lies before the epoch or past the end of the timestamp field.
    TimeOutsideLayout {
        unix_ms: i64,
        before: bool,
        layout: Layout,
    },
    /// A field given to `snowflake_compose` is out of its range.
    PartOutOfRange {
        part: &'static str,
        value: i64,
        max: i64,
    },
    NegativeId {
        id: i64,
    },
    /// A decoded time outside the range of `timestamptz`.
    TimeOutOfRange {
        id: i64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    epoch_ms: i64,
    tick_ms: i64,
    machine_bits: u32,
    sequence_bits: u32,
}

/// The fields of one id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    /// Milliseconds since 1970-01-01 UTC.
    pub unix_ms: i64,
    pub machine_id: i64,
    pub sequence: i64,
}

impl Layout {
    /// Checks a layout on its own terms (field widths, time unit, an epoch not before 1970).
    /// Whether the epoch lies in the future, or the field has already run out, depends on the
    /// clock: see [`Layout::check_clock`].
    pub fn new(epoch_ms: i64, tick_ms: i64, machine_bits: u32, sequence_bits: u32) -> Result<Layout, LayoutError> {
        if !(1..=MAX_TICK_MS).contains(&tick_ms) {
            return Err(LayoutError::TimeUnit { tick_ms });
        }
        for (setting, bits) in [("snowflake.machine_bits", machine_bits), ("snowflake.sequence_bits", sequence_bits)] {
            if !(MIN_FIELD_BITS..=MAX_FIELD_BITS).contains(&bits) {
                return Err(LayoutError::FieldWidth { setting, bits });
            }
        }
        if machine_bits + sequence_bits > 63 - MIN_TIMESTAMP_BITS {
            return Err(LayoutError::TooFewTimestampBits { machine_bits, sequence_bits });
        }
        if epoch_ms < 0 {
            return Err(LayoutError::EpochBefore1970 { epoch_ms });
        }
        Ok(Layout { epoch_ms, tick_ms, machine_bits, sequence_bits })
    }

    pub fn epoch_ms(&self) -> i64 {
        self.epoch_ms
    }
    pub fn tick_ms(&self) -> i64 {
        self.tick_ms
    }
    pub fn machine_bits(&self) -> u32 {
        self.machine_bits
    }
    pub fn sequence_bits(&self) -> u32 {
        self.sequence_bits
    }
    pub fn timestamp_bits(&self) -> u32 {
        63 - self.machine_bits - self.sequence_bits
    }
    pub fn max_tick(&self) -> i64 {
        (1_i64 << self.timestamp_bits()) - 1
    }
    pub fn max_machine_id(&self) -> i64 {
        (1_i64 << self.machine_bits) - 1
    }
    pub fn max_sequence(&self) -> i64 {
        (1_i64 << self.sequence_bits) - 1
    }

    /// The first millisecond of a tick, if it is within `i64` milliseconds.
    pub fn tick_start_ms(&self, tick: i64) -> Option<i64> {
        tick.checked_mul(self.tick_ms)?.checked_add(self.epoch_ms)
    }

    /// The first millisecond that no longer fits in the timestamp field (saturating: with wide
    /// fields and long ticks that lies beyond any calendar).
    pub fn end_unix_ms(&self) -> i64 {
        self.tick_start_ms(self.max_tick() + 1).unwrap_or(i64::MAX)
    }

    /// The tick a time falls in, or `Err(true)` before the epoch, `Err(false)` past the field.
    #[inline]
    fn tick_of(&self, unix_ms: i64) -> Result<i64, bool> {
        let since = unix_ms - self.epoch_ms;
        if since < 0 {
            return Err(true);
        }
        // Division only for a longer tick: the default keeps the hot path to a subtraction.
        let tick = if self.tick_ms == 1 { since } else { since / self.tick_ms };
        if tick > self.max_tick() {
            return Err(false);
        }
        Ok(tick)
    }

    /// The tick of a wall-clock reading, or why none can be issued at that time.
    #[inline]
    pub fn tick_at(&self, unix_ms: i64) -> Result<i64, LayoutError> {
        self.tick_of(unix_ms).map_err(|before| {
            if before {
                LayoutError::ClockBeforeEpoch { epoch_ms: self.epoch_ms, now_ms: unix_ms }
            } else {
                LayoutError::TimestampExhausted { layout: *self }
            }
        })
    }

    /// The tick of a time given by a user, or why it has none.
    pub fn tick_of_time(&self, unix_ms: i64) -> Result<i64, LayoutError> {
        self.tick_of(unix_ms).map_err(|before| LayoutError::TimeOutsideLayout { unix_ms, before, layout: *self })
    }

    /// The tick of a high-water mark, held within the field: a mark before the epoch counts as
    /// tick 0, one past the field as the last tick (a mark only ever makes ticks used up).
    pub fn tick_of_mark(&self, unix_ms: i64) -> i64 {
        self.tick_of(unix_ms).unwrap_or_else(|before| if before { 0 } else { self.max_tick() })
    }

    /// The check made at server start, so that a layout that can issue nothing is reported there.
    pub fn check_clock(&self, now_ms: i64) -> Result<(), LayoutError> {
        self.tick_at(now_ms).map(|_| ())
    }

    pub fn check_machine_id(&self, machine_id: i64) -> Result<(), LayoutError> {
        if machine_id == -1 {
            return Err(LayoutError::MachineIdUnset { max: self.max_machine_id() });
        }
        if !(0..=self.max_machine_id()).contains(&machine_id) {
            return Err(LayoutError::MachineIdOutOfRange { machine_id, machine_bits: self.machine_bits });
        }
        Ok(())
    }

    /// Packs fields that the caller has checked to be in range.
    #[inline]
    pub fn compose(&self, tick: i64, machine_id: i64, sequence: i64) -> i64 {
        debug_assert!((0..=self.max_tick()).contains(&tick));
        debug_assert!((0..=self.max_machine_id()).contains(&machine_id));
        debug_assert!((0..=self.max_sequence()).contains(&sequence));
        (tick << (self.machine_bits + self.sequence_bits)) | (machine_id << self.sequence_bits) | sequence
    }

    /// The id with these fields, the time rounded down to its tick; every field checked.
    pub fn compose_checked(&self, unix_ms: i64, machine_id: i64, sequence: i64) -> Result<i64, LayoutError> {
        let tick = self.tick_of_time(unix_ms)?;
        for (part, value, max) in
            [("machine_id", machine_id, self.max_machine_id()), ("sequence", sequence, self.max_sequence())]
        {
            if !(0..=max).contains(&value) {
                return Err(LayoutError::PartOutOfRange { part, value, max });
            }
        }
        Ok(self.compose(tick, machine_id, sequence))
    }

    /// Splits an id into its fields. Every non-negative bigint is some id of this layout.
    pub fn decode(&self, id: i64) -> Result<Parts, LayoutError> {
        if id < 0 {
            return Err(LayoutError::NegativeId { id });
        }
        // `let-else`, not `ok_or(LayoutError)`: that builds an error and drops it on every call.
        let Some(unix_ms) = self.tick_start_ms(id >> (self.machine_bits + self.sequence_bits)) else {
            return Err(LayoutError::TimeOutOfRange { id });
        };
        Ok(Parts {
            unix_ms,
            machine_id: (id >> self.sequence_bits) & self.max_machine_id(),
            sequence: id & self.max_sequence(),
        })
    }

    /// One line naming the layout, for messages:
    /// `41|10|12 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00`.
    pub fn describe(&self) -> String {
        let unit = if self.tick_ms == 1 { String::new() } else { format!(", {} ms ticks", self.tick_ms) };
        format!(
            "{}|{}|{} bits (timestamp|machine|sequence) from {}{unit}",
            self.timestamp_bits(),
            self.machine_bits,
            self.sequence_bits,
            format_utc(self.epoch_ms)
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub const EPOCH_2025: i64 = 1_735_689_600_000;
    /// The seed's table: Twitter's original, low traffic & long life, high burst, many devices.
    pub const SEED_LAYOUTS: [(u32, u32, u32); 4] = [(41, 10, 12), (42, 7, 14), (40, 8, 15), (38, 16, 9)];

    pub fn seed_layout(i: usize) -> Layout {
        let (t, m, s) = SEED_LAYOUTS[i];
        let l = Layout::new(EPOCH_2025, 1, m, s).unwrap();
        assert_eq!(l.timestamp_bits(), t);
        l
    }

    #[test]
    fn every_seed_layout_has_the_promised_capacity() {
        // (years of lifespan, machines, ids per ms), from the seed's table.
        let promised = [(69.0, 1024, 4096), (139.0, 128, 16_384), (34.8, 256, 32_768), (8.7, 65_536, 512)];
        for (i, (years, machines, per_ms)) in promised.into_iter().enumerate() {
            let l = seed_layout(i);
            let lifespan_years = (l.max_tick() + 1) as f64 / (365.25 * 86_400_000.0);
            assert!((lifespan_years - years).abs() < 0.1 * years, "layout {i}: {lifespan_years} years");
            assert_eq!(l.max_machine_id() + 1, machines);
            assert_eq!(l.max_sequence() + 1, per_ms);
        }
    }

    #[test]
    fn extremes_round_trip_and_stay_positive() {
        for i in 0..SEED_LAYOUTS.len() {
            let l = seed_layout(i);
            let top = l.compose(l.max_tick(), l.max_machine_id(), l.max_sequence());
            assert_eq!(top, i64::MAX, "all 63 bits are used");
            let p = l.decode(top).unwrap();
            assert_eq!(
                (p.unix_ms, p.machine_id, p.sequence),
                (l.end_unix_ms() - 1, l.max_machine_id(), l.max_sequence())
            );
            assert_eq!(l.decode(0).unwrap(), Parts { unix_ms: EPOCH_2025, machine_id: 0, sequence: 0 });
        }
    }

    #[test]
    fn twitter_layout_bit_positions() {
        let l = seed_layout(0);
        assert_eq!(l.compose(1, 0, 0), 1 << 22);
        assert_eq!(l.compose(0, 1, 0), 1 << 12);
        assert_eq!(l.compose(0, 0, 1), 1);
        assert_eq!(l.compose(5, 7, 9), (5 << 22) | (7 << 12) | 9);
    }

    #[test]
    fn refuses_layouts_that_cannot_work() {
        assert!(matches!(
            Layout::new(EPOCH_2025, 1, 0, 12),
            Err(LayoutError::FieldWidth { setting: "snowflake.machine_bits", .. })
        ));
        assert!(matches!(
            Layout::new(EPOCH_2025, 1, 10, 25),
            Err(LayoutError::FieldWidth { setting: "snowflake.sequence_bits", .. })
        ));
        assert!(matches!(Layout::new(EPOCH_2025, 1, 16, 13), Err(LayoutError::TooFewTimestampBits { .. })));
        assert!(Layout::new(EPOCH_2025, 1, 16, 12).is_ok(), "35 timestamp bits is the minimum, and allowed");
        assert!(matches!(Layout::new(-1, 1, 10, 12), Err(LayoutError::EpochBefore1970 { .. })));
    }

    #[test]
    fn clock_checks_name_the_problem() {
        let l = seed_layout(3); // 38 bits: 8.7 years
        assert!(matches!(l.tick_at(EPOCH_2025 - 1), Err(LayoutError::ClockBeforeEpoch { .. })));
        assert_eq!(l.tick_at(EPOCH_2025), Ok(0));
        assert_eq!(l.tick_at(l.end_unix_ms() - 1), Ok(l.max_tick()));
        assert!(matches!(l.tick_at(l.end_unix_ms()), Err(LayoutError::TimestampExhausted { .. })));
        let old = Layout::new(0, 1, 16, 9).unwrap(); // a 1970 epoch ran out in 1978
        assert!(matches!(old.check_clock(EPOCH_2025), Err(LayoutError::TimestampExhausted { .. })));
    }

    #[test]
    fn machine_id_must_be_set_and_fit() {
        let l = seed_layout(1); // 7 machine bits
        assert!(matches!(l.check_machine_id(-1), Err(LayoutError::MachineIdUnset { max: 127 })));
        assert!(matches!(l.check_machine_id(128), Err(LayoutError::MachineIdOutOfRange { .. })));
        assert!(l.check_machine_id(0).is_ok() && l.check_machine_id(127).is_ok());
    }

    #[test]
    fn a_longer_tick_counts_time_in_its_unit() {
        // Sonyflake-like: 10 ms ticks give ten times the lifespan.
        let l = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        assert_eq!(l.tick_at(EPOCH_2025 + 9), Ok(0));
        assert_eq!(l.tick_at(EPOCH_2025 + 10), Ok(1));
        assert_eq!(l.tick_at(EPOCH_2025 + 12_345), Ok(1234));
        assert_eq!(l.end_unix_ms(), EPOCH_2025 + (1_i64 << 41) * 10);
        assert_eq!(
            l.decode(l.compose(1234, 3, 4)).unwrap(),
            Parts { unix_ms: EPOCH_2025 + 12_340, machine_id: 3, sequence: 4 }
        );
        assert!(l.describe().ends_with(", 10 ms ticks"));
        assert!(matches!(Layout::new(EPOCH_2025, 0, 10, 12), Err(LayoutError::TimeUnit { tick_ms: 0 })));
        assert!(matches!(Layout::new(EPOCH_2025, 60_001, 10, 12), Err(LayoutError::TimeUnit { .. })));
    }

    #[test]
    fn times_outside_the_field_are_refused_with_their_side() {
        let l = seed_layout(3);
        assert!(matches!(l.tick_of_time(EPOCH_2025 - 1), Err(LayoutError::TimeOutsideLayout { before: true, .. })));
        assert!(matches!(l.tick_of_time(l.end_unix_ms()), Err(LayoutError::TimeOutsideLayout { before: false, .. })));
        assert_eq!(l.tick_of_time(l.end_unix_ms() - 1), Ok(l.max_tick()));
    }

    #[test]
    fn compose_checked_rounds_to_the_tick_and_checks_each_field() {
        let l = Layout::new(EPOCH_2025, 10, 10, 12).unwrap();
        assert_eq!(l.compose_checked(EPOCH_2025 + 12_345, 3, 4), Ok(l.compose(1234, 3, 4)));
        assert_eq!(
            l.compose_checked(EPOCH_2025, 1024, 0),
            Err(LayoutError::PartOutOfRange { part: "machine_id", value: 1024, max: 1023 })
        );
        assert_eq!(
            l.compose_checked(EPOCH_2025, 0, -1),
            Err(LayoutError::PartOutOfRange { part: "sequence", value: -1, max: 4095 })
        );
        assert!(matches!(
            l.compose_checked(EPOCH_2025 - 1, 0, 0),
            Err(LayoutError::TimeOutsideLayout { before: true, .. })
        ));
    }

    #[test]
    fn negative_ids_do_not_decode() {
        assert!(matches!(seed_layout(0).decode(-1), Err(LayoutError::NegativeId { id: -1 })));
    }

    fn any_layout() -> impl Strategy<Value = Layout> {
        (1..=24_u32, 1..=24_u32, 0..2_000_000_000_000_i64, prop_oneof![Just(1_i64), 1..=MAX_TICK_MS])
            .prop_filter("leaves enough timestamp bits", |(m, s, _, _)| m + s <= 63 - MIN_TIMESTAMP_BITS)
            .prop_map(|(m, s, e, u)| Layout::new(e, u, m, s).unwrap())
    }

    proptest! {
        #[test]
        fn decode_inverts_compose(l in any_layout(), t in any::<u64>(), m in any::<u64>(), s in any::<u64>()) {
            let (t, m, s) = ((t % (l.max_tick() as u64 + 1)) as i64, (m % (l.max_machine_id() as u64 + 1)) as i64, (s % (l.max_sequence() as u64 + 1)) as i64);
            let id = l.compose(t, m, s);
            prop_assert!(id >= 0);
            match l.tick_start_ms(t) {
                Some(ms) => prop_assert_eq!(l.decode(id).unwrap(), Parts { unix_ms: ms, machine_id: m, sequence: s }),
                None => prop_assert_eq!(l.decode(id), Err(LayoutError::TimeOutOfRange { id })),
            }
        }

        #[test]
        fn ids_sort_by_time_first(l in any_layout(), a in any::<(u32, u32, u32)>(), b in any::<(u32, u32, u32)>()) {
            let fit = |(t, m, s): (u32, u32, u32)| (i64::from(t) % (l.max_tick() + 1), i64::from(m) % (l.max_machine_id() + 1), i64::from(s) % (l.max_sequence() + 1));
            let (a, b) = (fit(a), fit(b));
            prop_assert_eq!(l.compose(a.0, a.1, a.2).cmp(&l.compose(b.0, b.1, b.2)), a.cmp(&b));
        }
    }
}
