//! The JSON form of an id, for clients whose JSON numbers are doubles (JavaScript, and many
//! parsers): above 2^53 a double loses digits, so the id travels as a decimal string.

use crate::calendar::format_iso8601;
use crate::layout::Parts;
use serde::{Serialize, Serializer};

/// `{"id": "<decimal>", "ts": "<ISO 8601, UTC>", "machine_id": n, "sequence": n}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IdJson {
    #[serde(serialize_with = "decimal_string")]
    pub id: i64,
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, as JavaScript's `Date.prototype.toISOString()` writes it.
    pub ts: String,
    pub machine_id: i64,
    pub sequence: i64,
}

fn decimal_string<S: Serializer>(id: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

impl IdJson {
    pub fn new(id: i64, parts: &Parts) -> IdJson {
        IdJson { id, ts: format_iso8601(parts.unix_ms), machine_id: parts.machine_id, sequence: parts.sequence }
    }

    /// As a JSON value. A struct of strings and integers always serializes: `Null` is unreachable.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_id_is_a_string_and_the_rest_are_plain() {
        let parts = Parts { unix_ms: 1_748_781_296_789, machine_id: 7, sequence: 0 };
        let json = IdJson::new(253_178_563_728_011_264, &parts).to_value();
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            r#"{"id":"253178563728011264","machine_id":7,"sequence":0,"ts":"2025-06-01T12:34:56.789Z"}"#
        );
    }

    proptest! {
        /// The string form round-trips every id, through its JSON text too.
        #[test]
        fn the_string_round_trips(id in 0_i64..=i64::MAX) {
            let text = serde_json::to_string(&IdJson::new(id, &Parts { unix_ms: 0, machine_id: 0, sequence: 0 })).unwrap();
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back["id"].as_str().unwrap().parse::<i64>().unwrap(), id);
        }
    }

    #[test]
    fn an_odd_id_above_2_53_loses_its_last_digit_as_a_double() {
        let id = (1_i64 << 53) + 1;
        assert_ne!((id as f64) as i64, id);
        let json = IdJson::new(id, &Parts { unix_ms: 0, machine_id: 0, sequence: 0 }).to_value();
        assert_eq!(json["id"], serde_json::Value::String("9007199254740993".into()));
    }
}
