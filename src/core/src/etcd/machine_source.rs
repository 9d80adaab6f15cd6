//! Where a server's machine id comes from (`snowflake.machine_id_source`): typed by hand
//! (`manual`, `snowflake.machine_id`), leased from etcd (`etcd`, see [`crate::etcd::claim`]), or read
//! from a Kubernetes StatefulSet's pod index (`pod_index`). Never a hash, an IP address or a MAC:
//! none is unique by construction.

use crate::error::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Manual,
    Etcd,
    PodIndex,
}

pub const SETTING: &str = "snowflake.machine_id_source";

impl Source {
    pub fn parse(text: &str) -> Result<Source, Error> {
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "manual" => Ok(Source::Manual),
            "etcd" => Ok(Source::Etcd),
            "pod_index" => Ok(Source::PodIndex),
            other => Err(Error::MachineIdSource {
                setting: SETTING,
                reason: format!("'{other}' is not a source; the sources are 'manual', 'etcd' and 'pod_index'"),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Source::Manual => "manual",
            Source::Etcd => "etcd",
            Source::PodIndex => "pod_index",
        }
    }
}

/// The machine id of a StatefulSet's pod: the environment variable `variable` (the Downward
/// API's `apps.kubernetes.io/pod-index` label) if it is set, else the ordinal that ends the
/// hostname (`db-3`), plus `offset` (several StatefulSets in one id space). Absent, empty or not
/// a number: an error, never a default.
pub fn pod_index(variable: &str, value: Option<&str>, hostname: Option<&str>, offset: i64) -> Result<i64, Error> {
    let refuse =
        |reason: String| Error::MachineIdSource { setting: "snowflake.machine_id_source = 'pod_index'", reason };
    let index = match value {
        Some(v) => v.trim().parse::<i64>().ok().filter(|i| *i >= 0).ok_or_else(|| {
            refuse(format!("the environment variable {variable} is '{v}', not a pod index (0, 1, 2, ...)"))
        })?,
        None => {
            let host = hostname.unwrap_or("");
            host.rsplit_once('-')
                .and_then(|(name, n)| (!name.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(n))
                .and_then(|n| n.parse::<i64>().ok())
                .ok_or_else(|| {
                    refuse(format!(
                        "the environment variable {variable} is not set, and the hostname '{host}' does not end in a StatefulSet pod's ordinal (-0, -1, ...)"
                    ))
                })?
        }
    };
    index.checked_add(offset).filter(|id| *id >= 0).ok_or_else(|| {
        refuse(format!("the pod index {index} plus snowflake.machine_id_offset {offset} is not a machine id"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_by_name_and_nothing_else() {
        assert_eq!(Source::parse("ETCD"), Ok(Source::Etcd));
        assert_eq!(Source::parse(""), Ok(Source::Manual));
        assert_eq!(Source::parse("pod_index").map(Source::name), Ok("pod_index"));
        let e = Source::parse("ip").unwrap_err();
        assert!(e.message().contains("'ip' is not a source"), "{}", e.message());
    }

    #[test]
    fn the_pod_index_from_the_label_or_the_hostname_plus_the_offset_never_a_default() {
        assert_eq!(pod_index("POD_INDEX", Some("3"), Some("web-7"), 0), Ok(3), "the label first");
        assert_eq!(pod_index("POD_INDEX", None, Some("pg-shard-a-12"), 100), Ok(112));
        for (value, host, says) in [
            (Some(""), Some("web-1"), "is '', not a pod index"),
            (Some("x"), None, "is 'x', not a pod index"),
            (Some("-2"), None, "not a pod index"),
            (None, Some("db"), "the hostname 'db' does not end"),
            (None, Some("db-"), "does not end"),
            (None, Some("-4"), "does not end"),
            (None, Some("db-1a"), "does not end"),
            (None, None, "the hostname '' does not end"),
        ] {
            let e = pod_index("POD_INDEX", value, host, 0).unwrap_err();
            assert!(e.message().contains(says), "{value:?} {host:?}: {}", e.message());
        }
        assert!(pod_index("POD_INDEX", Some("1"), None, -2).unwrap_err().message().contains("offset -2"));
        let overflow = pod_index("POD_INDEX", Some("9223372036854775807"), None, 1).unwrap_err();
        assert!(overflow
            .message()
            .contains("the pod index 9223372036854775807 plus snowflake.machine_id_offset 1 is not a machine id"));
    }
}
