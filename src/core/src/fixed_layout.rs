//! Layouts fixed by the caller, for the IMMUTABLE functions (expression indexes, generated columns,
//! partition keys): a preset by name, or the four layout parameters given as arguments. Never the
//! server's layout, which can change after a restart.

use crate::error::Error;
use crate::layout::{Layout, LayoutError, Parts, MAX_FIELD_BITS, MAX_TICK_MS, MIN_FIELD_BITS, MIN_TIMESTAMP_BITS};
use crate::presets::{self, Preset};

/// A layout that never changes: an answer made under it holds forever.
#[derive(Clone, Copy, Debug)]
pub enum FixedLayout {
    Preset(&'static Preset),
    Explicit(Layout),
}

/// The preset of this name; `server` and unknown names are refused ([`Error::NotAFixedLayout`]).
pub fn preset(name: &str) -> Result<FixedLayout, Error> {
    presets::find(name).map(FixedLayout::Preset).ok_or_else(|| Error::NotAFixedLayout { name: name.to_string() })
}

/// The layout these arguments describe, each checked as [`Layout::new`] checks the settings, and
/// reported under the argument's name.
pub fn explicit(epoch_ms: i64, time_unit_ms: i32, machine_bits: i32, sequence_bits: i32) -> Result<FixedLayout, Error> {
    explicit_layout(epoch_ms, time_unit_ms, machine_bits, sequence_bits).map(FixedLayout::Explicit)
}

/// As [`explicit`], the [`Layout`] itself (for composing ids).
pub fn explicit_layout(
    epoch_ms: i64,
    time_unit_ms: i32,
    machine_bits: i32,
    sequence_bits: i32,
) -> Result<Layout, Error> {
    let bad =
        |argument: &'static str, value: String, allowed: String| Error::LayoutArgument { argument, value, allowed };
    let field_range = format!("{MIN_FIELD_BITS} to {MAX_FIELD_BITS}");
    let width = |argument: &'static str, bits: i32| {
        u32::try_from(bits)
            .ok()
            .filter(|b| (MIN_FIELD_BITS..=MAX_FIELD_BITS).contains(b))
            .ok_or_else(|| bad(argument, bits.to_string(), field_range.clone()))
    };
    let machine = width("machine_bits", machine_bits)?;
    let sequence = width("sequence_bits", sequence_bits)?;
    match Layout::new(epoch_ms, time_unit_ms.into(), machine, sequence) {
        Ok(layout) => Ok(layout),
        Err(LayoutError::TimeUnit { tick_ms }) => {
            Err(bad("time_unit_ms", tick_ms.to_string(), format!("1 to {MAX_TICK_MS} milliseconds")))
        }
        Err(LayoutError::TooFewTimestampBits { machine_bits, sequence_bits }) => Err(bad(
            "machine_bits + sequence_bits",
            format!("{machine_bits} + {sequence_bits}"),
            format!("at most {} together, leaving {MIN_TIMESTAMP_BITS} timestamp bits", 63 - MIN_TIMESTAMP_BITS),
        )),
        Err(LayoutError::EpochBefore1970 { epoch_ms }) => {
            Err(bad("epoch", crate::calendar::format_utc(epoch_ms), "1970-01-01 00:00:00+00 or later".into()))
        }
        Err(e) => Err(e.into()),
    }
}

impl FixedLayout {
    pub fn decode(&self, id: i64) -> Result<Parts, LayoutError> {
        match self {
            FixedLayout::Preset(p) => p.decode(id),
            FixedLayout::Explicit(l) => l.decode(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::EPOCH_2025;

    #[test]
    fn presets_are_fixed_but_the_server_is_not() {
        assert!(matches!(preset(" Twitter "), Ok(FixedLayout::Preset(p)) if p.name == "twitter"));
        for name in ["server", "SERVER", "snowflake", ""] {
            assert_eq!(preset(name).unwrap_err(), Error::NotAFixedLayout { name: name.into() });
        }
        let server = Error::NotAFixedLayout { name: "server".into() };
        assert!(server.message().contains("\"server\""), "{}", server.message());
        assert!(server.hint().contains("snowflake_layout()"), "{}", server.hint());
        let unknown = Error::NotAFixedLayout { name: "snowflak".into() };
        // Every preset, not server (the list is presets.rs's).
        let presets = presets::PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
        assert!(presets.starts_with("twitter, discord, ") && !presets.contains("server"), "{presets}");
        assert_eq!(
            unknown.message(),
            format!("unknown fixed snowflake layout \"snowflak\"; the presets are: {presets}")
        );
    }

    #[test]
    fn explicit_layouts_are_checked_argument_by_argument() {
        let l = explicit(EPOCH_2025, 1, 10, 12).unwrap();
        let id = (5_i64 << 22) | (7 << 12) | 3;
        assert_eq!(l.decode(id).unwrap(), Parts { unix_ms: EPOCH_2025 + 5, machine_id: 7, sequence: 3 });
        let message = |r: Result<FixedLayout, Error>| r.unwrap_err().message();
        assert_eq!(
            message(explicit(EPOCH_2025, 1, 0, 12)),
            "snowflake layout argument machine_bits = 0 is out of range (1 to 24)"
        );
        assert_eq!(
            message(explicit(EPOCH_2025, 1, 10, -3)),
            "snowflake layout argument sequence_bits = -3 is out of range (1 to 24)"
        );
        assert_eq!(
            message(explicit(EPOCH_2025, 0, 10, 12)),
            "snowflake layout argument time_unit_ms = 0 is out of range (1 to 60000 milliseconds)"
        );
        assert_eq!(
            message(explicit(EPOCH_2025, 1, 20, 20)),
            "snowflake layout argument machine_bits + sequence_bits = 20 + 20 is out of range (at most 28 together, leaving 35 timestamp bits)"
        );
        assert_eq!(
            message(explicit(-1, 1, 10, 12)),
            "snowflake layout argument epoch = 1969-12-31 23:59:59.999+00 is out of range (1970-01-01 00:00:00+00 or later)"
        );
        assert!(explicit(-1, 1, 10, 12).unwrap_err().hint().contains("snowflake_layout()"));
    }

    #[test]
    fn a_fixed_preset_decodes_as_the_preset() {
        let id = 175_928_847_299_117_063;
        assert_eq!(preset("discord").unwrap().decode(id), presets::find("discord").unwrap().decode(id));
    }
}
