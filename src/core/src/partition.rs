//! Range-partition bounds on the id itself: the ids that carry the times of each month, day or
//! other step, so that a table partitioned `BY RANGE (id)` is partitioned by time.

use crate::calendar::{add_months, utc_fields};
use crate::error::Error;
use crate::layout::Layout;

/// The most partitions one call returns: a step of a minute over years is a mistake, not a plan.
pub const MAX_PARTITIONS: usize = 10_000;

/// A step between partition bounds, as PostgreSQL's interval holds it: calendar months, days and
/// microseconds, added in that order, in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// One partition: the ids `from_id <= id < to_id` carry the times `from_ms <= t < to_ms` (to the
/// tick: a tick is never split between two partitions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub from_ms: i64,
    pub to_ms: i64,
    pub from_id: i64,
    pub to_id: i64,
    /// `YYYY_MM` for whole months, `YYYY_MM_DD` for whole days, else `YYYY_MM_DD_HHMMSS`.
    pub suffix: String,
}

impl Step {
    /// The step as PostgreSQL writes an interval (IntervalStyle `postgres`), quoted: `'1 mon'`,
    /// `'2 days 00:00:01.5'`, `'00:00:00'`.
    fn describe(&self) -> String {
        fn unit(n: i64, name: &str) -> String {
            format!("{n} {name}{}", if n == 1 { "" } else { "s" })
        }
        let mut parts = Vec::new();
        let (years, months) = (self.months / 12, self.months % 12);
        if years != 0 {
            parts.push(unit(years.into(), "year"));
        }
        if months != 0 {
            parts.push(unit(months.into(), "mon"));
        }
        if self.days != 0 {
            parts.push(unit(self.days.into(), "day"));
        }
        if self.micros != 0 || parts.is_empty() {
            let sign = if self.micros < 0 { "-" } else { "" };
            let us = self.micros.unsigned_abs();
            let (h, m, s, frac) = (us / 3_600_000_000, us / 60_000_000 % 60, us / 1_000_000 % 60, us % 1_000_000);
            let mut time = format!("{sign}{h:02}:{m:02}:{s:02}");
            if frac != 0 {
                time.push_str(format!(".{frac:06}").trim_end_matches('0'));
            }
            parts.push(time);
        }
        format!("'{}'", parts.join(" "))
    }

    /// The start of partition `k` after `from_ms`: computed from the start each time, so that
    /// monthly steps from January 31 give the last day of each shorter month, not a drifting day.
    fn nth(&self, from_ms: i64, k: i64) -> Option<i64> {
        let ms = add_months(from_ms, i64::from(self.months).checked_mul(k)?)?;
        let day_ms = i64::from(self.days).checked_mul(k)?.checked_mul(86_400_000)?;
        ms.checked_add(day_ms)?.checked_add(self.micros.checked_mul(k)? / 1000)
    }

    fn suffix(&self, unix_ms: i64) -> String {
        let (y, mo, d, h, mi, s, _) = utc_fields(unix_ms);
        if self.days == 0 && self.micros == 0 {
            format!("{y:04}_{mo:02}")
        } else if self.micros % 86_400_000_000 == 0 {
            format!("{y:04}_{mo:02}_{d:02}")
        } else {
            format!("{y:04}_{mo:02}_{d:02}_{h:02}{mi:02}{s:02}")
        }
    }
}

/// The partitions covering `from_ms` (inclusive) to `to_ms`, each one `step` long; the last ends
/// at or after `to_ms`. Every bound must be a time the layout can carry.
pub fn bounds(layout: &Layout, from_ms: i64, to_ms: i64, step: Step) -> Result<Vec<Bounds>, Error> {
    let infinite = step.months == i32::MAX || step.days == i32::MAX || step.micros == i64::MAX;
    let negative = step.months < 0 || step.days < 0 || step.micros < 0;
    // Whole milliseconds: ids carry no finer time.
    let zero = step.months == 0 && step.days == 0 && step.micros < 1000;
    if infinite || negative || zero || step.micros % 1000 != 0 {
        return Err(Error::PartitionStep { step: step.describe() });
    }
    if from_ms >= to_ms {
        return Err(Error::PartitionRange { from_ms, to_ms });
    }
    let id_at = |ms: i64| layout.compose_checked(ms, 0, 0);
    let mut out = Vec::new();
    let mut start = from_ms;
    for k in 1.. {
        if start >= to_ms {
            break;
        }
        if out.len() == MAX_PARTITIONS {
            return Err(Error::TooManyPartitions { step: step.describe(), from_ms, to_ms, max: MAX_PARTITIONS });
        }
        let end = step.nth(from_ms, k).unwrap_or(i64::MAX);
        out.push(Bounds {
            from_ms: start,
            to_ms: end,
            from_id: id_at(start)?,
            to_id: id_at(end)?,
            suffix: step.suffix(start),
        });
        start = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calendar::{format_utc, parse_timestamptz};
    use crate::layout::tests::EPOCH_2025;
    use crate::layout::LayoutError;

    fn t(text: &str) -> i64 {
        parse_timestamptz(text).unwrap()
    }

    #[test]
    fn steps_are_written_as_postgresql_writes_intervals() {
        let cases = [
            ((1, 0, 0), "'1 mon'"),
            ((14, 0, 0), "'1 year 2 mons'"),
            ((-1, 0, 0), "'-1 mons'"),
            ((0, 1, 0), "'1 day'"),
            ((0, 2, 1_500_000), "'2 days 00:00:01.5'"),
            ((0, 0, 60_000_000), "'00:01:00'"),
            ((0, 0, 1500), "'00:00:00.0015'"),
            ((0, 0, -3_600_000_000), "'-01:00:00'"),
            ((0, 0, 0), "'00:00:00'"),
        ];
        for ((months, days, micros), text) in cases {
            assert_eq!(Step { months, days, micros }.describe(), text);
        }
    }
    const MONTH: Step = Step { months: 1, days: 0, micros: 0 };
    const DAY: Step = Step { months: 0, days: 1, micros: 0 };

    fn layout() -> Layout {
        Layout::new(EPOCH_2025, 1, 10, 12).unwrap()
    }

    #[test]
    fn monthly_bounds_are_contiguous_and_carry_their_months() {
        let b = bounds(&layout(), t("2025-01-31 00:00:00+00"), t("2025-05-01 00:00:00+00"), MONTH).unwrap();
        let months: Vec<_> = b.iter().map(|b| (b.suffix.as_str(), format_utc(b.from_ms))).collect();
        assert_eq!(
            months,
            [
                ("2025_01", "2025-01-31 00:00:00+00".to_string()),
                ("2025_02", "2025-02-28 00:00:00+00".to_string()),
                ("2025_03", "2025-03-31 00:00:00+00".to_string()),
                ("2025_04", "2025-04-30 00:00:00+00".to_string()),
            ]
        );
        for w in b.windows(2) {
            assert_eq!(w[0].to_id, w[1].from_id);
            assert_eq!(w[0].to_ms, w[1].from_ms);
        }
        let l = layout();
        for p in &b {
            // The last id of the partition's time is inside it, the first of the next outside.
            assert_eq!(p.from_id, l.compose_checked(p.from_ms, 0, 0).unwrap());
            let last = l.compose_checked(p.to_ms - 1, l.max_machine_id(), l.max_sequence()).unwrap();
            assert!(p.from_id <= last && last < p.to_id);
        }
    }

    #[test]
    fn daily_and_hourly_suffixes() {
        let b = bounds(&layout(), t("2025-03-01 00:00:00+00"), t("2025-03-03 12:00:00+00"), DAY).unwrap();
        assert_eq!(b.iter().map(|b| b.suffix.as_str()).collect::<Vec<_>>(), ["2025_03_01", "2025_03_02", "2025_03_03"]);
        assert_eq!(format_utc(b[2].to_ms), "2025-03-04 00:00:00+00");
        let hour = Step { months: 0, days: 0, micros: 3_600_000_000 };
        let b = bounds(&layout(), t("2025-03-01 00:00:00+00"), t("2025-03-01 02:00:00+00"), hour).unwrap();
        assert_eq!(b.iter().map(|b| b.suffix.as_str()).collect::<Vec<_>>(), ["2025_03_01_000000", "2025_03_01_010000"]);
    }

    #[test]
    fn bad_steps_ranges_and_times_are_refused() {
        let l = layout();
        let (a, b) = (t("2025-03-01 00:00:00+00"), t("2025-04-01 00:00:00+00"));
        for step in [
            Step { months: 0, days: 0, micros: 0 },
            Step { months: -1, days: 0, micros: 0 },
            Step { months: 1, days: -1, micros: 0 },
            Step { months: 0, days: 0, micros: 999 },
            Step { months: 0, days: 0, micros: 1500 },
            Step { months: i32::MAX, days: i32::MAX, micros: i64::MAX },
        ] {
            assert!(matches!(bounds(&l, a, b, step), Err(Error::PartitionStep { .. })), "{step:?}");
        }
        assert_eq!(bounds(&l, b, a, MONTH), Err(Error::PartitionRange { from_ms: b, to_ms: a }));
        assert_eq!(bounds(&l, a, a, MONTH), Err(Error::PartitionRange { from_ms: a, to_ms: a }));
        let minute = Step { months: 0, days: 0, micros: 60_000_000 };
        assert!(matches!(
            bounds(&l, a, t("2026-03-01 00:00:00+00"), minute),
            Err(Error::TooManyPartitions { max: MAX_PARTITIONS, .. })
        ));
        assert!(matches!(
            bounds(&l, t("2024-12-01 00:00:00+00"), b, MONTH),
            Err(Error::Layout(LayoutError::TimeOutsideLayout { before: true, .. }))
        ));
        // The last bound lies past the end of the timestamp field (2094-09-07).
        assert!(matches!(
            bounds(&l, t("2094-01-01 00:00:00+00"), t("2094-12-01 00:00:00+00"), MONTH),
            Err(Error::Layout(LayoutError::TimeOutsideLayout { before: false, .. }))
        ));
        let e = bounds(&l, a, b, Step { months: 0, days: 0, micros: 0 }).unwrap_err();
        assert_eq!(e.message(), "partition step '00:00:00' is not a positive interval of whole milliseconds");
        assert!(e.hint().contains("interval '1 month'"));
    }
}
