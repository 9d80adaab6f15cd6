//! UTC calendar arithmetic for the epoch setting and for messages, in pure Rust.
//!
//! The epoch is parsed here rather than by PostgreSQL's `timestamptz_in` because it is read in the
//! postmaster while `shared_preload_libraries` load, and because an epoch must not depend on the
//! server's `TimeZone`: a zone change would silently shift every id's time. So the text must carry
//! its own UTC offset.

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day number since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS[.mmm]+00`, the way
/// PostgreSQL prints a timestamptz in UTC.
pub fn format_utc(unix_ms: i64) -> String {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, ms) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000);
    let frac = if ms == 0 { String::new() } else { format!(".{ms:03}") };
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}{frac}+00")
}

const DAY_MS: i64 = 86_400_000;

/// The UTC date and time of a moment: (year, month, day, hour, minute, second, millisecond).
pub fn utc_fields(unix_ms: i64) -> (i64, i64, i64, i64, i64, i64, i64) {
    let ms_of_day = unix_ms.rem_euclid(DAY_MS);
    let (y, mo, d) = civil_from_days(unix_ms.div_euclid(DAY_MS));
    (y, mo, d, ms_of_day / 3_600_000, ms_of_day / 60_000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000)
}

/// The same time of day, `months` calendar months later in UTC, the day clamped to the end of a
/// shorter month (January 31 + 1 month is February 28 or 29), as PostgreSQL adds an interval.
/// `None` past any representable time.
pub fn add_months(unix_ms: i64, months: i64) -> Option<i64> {
    let ms_of_day = unix_ms.rem_euclid(DAY_MS);
    let (y, m, d) = civil_from_days(unix_ms.div_euclid(DAY_MS));
    let total = (y.checked_mul(12)? + m - 1).checked_add(months)?;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    if ny.abs() > 100_000_000 {
        return None;
    }
    days_from_civil(ny, nm, d.min(days_in_month(ny, nm))).checked_mul(DAY_MS)?.checked_add(ms_of_day)
}

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`, the form JavaScript's
/// `Date.prototype.toISOString()` writes and `Date.parse` reads.
pub fn format_iso8601(unix_ms: i64) -> String {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, ms) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// Parses an ISO 8601 / PostgreSQL style timestamp with an explicit UTC offset into milliseconds
/// since the Unix epoch. Accepted: `2025-01-01 00:00:00+00`, `2025-01-01T00:00:00Z`,
/// `2025-01-01 00:00:00.250+05:30`, `2025-01-01 00:00-0800`. Seconds and up to three fraction
/// digits are optional; the offset is not.
pub fn parse_timestamptz(text: &str) -> Result<i64, String> {
    let mut p = Cursor { s: text.trim().as_bytes(), i: 0 };
    let year = p.digits(4, "a four-digit year")?;
    p.expect(b'-')?;
    let month = p.digits(2, "a two-digit month")?;
    p.expect(b'-')?;
    let day = p.digits(2, "a two-digit day")?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err(format!("{year:04}-{month:02}-{day:02} is not a calendar date"));
    }
    if !matches!(p.peek(), Some(b' ' | b'T' | b't')) {
        return Err("a time with a UTC offset must follow the date, as in 2025-01-01 00:00:00+00".into());
    }
    p.i += 1;
    let hour = p.digits(2, "a two-digit hour")?;
    p.expect(b':')?;
    let minute = p.digits(2, "two-digit minutes")?;
    let mut second = 0;
    let mut millis = 0;
    if p.peek() == Some(b':') {
        p.i += 1;
        second = p.digits(2, "two-digit seconds")?;
        if p.peek() == Some(b'.') {
            p.i += 1;
            let start = p.i;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.i += 1;
            }
            let frac = &p.s[start..p.i];
            if frac.is_empty() || frac.len() > 3 {
                return Err("the fraction of a second takes one to three digits (milliseconds)".into());
            }
            let digits: i64 = std::str::from_utf8(frac).unwrap().parse().unwrap();
            millis = digits * 10_i64.pow(3 - frac.len() as u32);
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(format!("{hour:02}:{minute:02}:{second:02} is not a time of day"));
    }
    let offset_minutes = match p.peek() {
        Some(b'Z' | b'z') => {
            p.i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            p.i += 1;
            let oh = p.digits(2, "a two-digit offset hour")?;
            let mut om = 0;
            if p.peek() == Some(b':') {
                p.i += 1;
                om = p.digits(2, "two-digit offset minutes")?;
            } else if p.peek().is_some_and(|c| c.is_ascii_digit()) {
                om = p.digits(2, "two-digit offset minutes")?;
            }
            if oh > 15 || om > 59 {
                return Err(format!("UTC offset {oh:02}:{om:02} is out of range"));
            }
            let m = oh * 60 + om;
            if sign == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return Err("the UTC offset is missing: end the value with +00 (or Z, or +HH:MM)".into()),
    };
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the UTC offset: {:?}", String::from_utf8_lossy(&p.s[p.i..])));
    }
    let days = days_from_civil(year, month, day);
    Ok(((days * 24 + hour) * 60 + minute - offset_minutes) * 60_000 + second * 1000 + millis)
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at position {}", c as char, self.i + 1))
        }
    }

    fn digits(&mut self, n: usize, what: &str) -> Result<i64, String> {
        let end = self.i + n;
        match self.s.get(self.i..end) {
            Some(d) if d.iter().all(u8::is_ascii_digit) => {
                self.i = end;
                Ok(std::str::from_utf8(d).unwrap().parse().unwrap())
            }
            _ => Err(format!("expected {what} at position {}", self.i + 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_default_epoch_and_known_instants() {
        assert_eq!(parse_timestamptz("2025-01-01 00:00:00+00"), Ok(1_735_689_600_000));
        assert_eq!(parse_timestamptz("1970-01-01T00:00:00Z"), Ok(0));
        // Twitter's epoch, 2010-11-04 01:42:54.657 UTC.
        assert_eq!(parse_timestamptz("2010-11-04T01:42:54.657Z"), Ok(1_288_834_974_657));
        assert_eq!(parse_timestamptz("2025-01-01 05:30:00+05:30"), Ok(1_735_689_600_000));
        assert_eq!(parse_timestamptz("2024-12-31 16:00-0800"), Ok(1_735_689_600_000));
        assert_eq!(parse_timestamptz(" 2000-02-29 00:00:00.5+00 "), Ok(951_782_400_500));
    }

    #[test]
    fn refuses_ambiguous_or_malformed_text() {
        for bad in [
            "2025-01-01 00:00:00",
            "2025-01-01",
            "yesterday",
            "2025-02-29 00:00:00+00",
            "2025-13-01 00:00:00+00",
            "2025-01-01 24:00:00+00",
            "2025-01-01 00:00:00.1234+00",
            "2025-01-01 00:00:00+00 extra",
            "2025-01-01 00:00:00+16",
            "",
        ] {
            assert!(parse_timestamptz(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_timestamptz("2025-01-01 00:00:00").unwrap_err().contains("offset is missing"));
    }

    #[test]
    fn formats_like_postgres_in_utc() {
        assert_eq!(format_utc(1_735_689_600_000), "2025-01-01 00:00:00+00");
        assert_eq!(format_utc(1_288_834_974_657), "2010-11-04 01:42:54.657+00");
        assert_eq!(format_utc(-1), "1969-12-31 23:59:59.999+00");
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(ms in -62_000_000_000_000_i64..250_000_000_000_000) {
            prop_assert_eq!(parse_timestamptz(&format_utc(ms)), Ok(ms));
        }
    }
}
