//! The high-water mark on disk: one small file in the data directory promising that no id this
//! server issued carries a time above the mark. It is replaced durably (write a new file, fsync
//! it, rename it over the old one, fsync the directory), so after any crash the file holds either
//! the old promise or the new one, both of them true.
//!
//! Since version 2 the file is a small JSON document that also says who wrote it: the machine id,
//! the layout and the cluster's system identifier, so that a copied data directory or a changed
//! layout is recognised at start (see [`crate::start_check`]). Version 1 files (two lines: a
//! header and the mark) are still read. A server whose machine id is leased from etcd names the id
//! it held last and the id space (`leased_from`, the etcd prefix; absent in hand-set servers'
//! files, and in leased servers' files of 0.2.0's betas, which say machine id -1).

use crate::calendar::format_utc;
use crate::layout::{Layout, LayoutError};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub const FILE_NAME: &str = "pg_snowflake.mark";
const TEMP_NAME: &str = "pg_snowflake.mark.tmp";
const HEADER_V1: &str = "pg_snowflake high-water mark v1";
const FORMAT: &str = "pg_snowflake high-water mark";
const VERSION: u32 = 2;

/// A layout as the file records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutRecord {
    pub epoch_ms: i64,
    pub time_unit_ms: i64,
    pub machine_bits: u32,
    pub sequence_bits: u32,
}

impl From<&Layout> for LayoutRecord {
    fn from(l: &Layout) -> LayoutRecord {
        LayoutRecord {
            epoch_ms: l.epoch_ms(),
            time_unit_ms: l.tick_ms(),
            machine_bits: l.machine_bits(),
            sequence_bits: l.sequence_bits(),
        }
    }
}

impl LayoutRecord {
    pub fn layout(&self) -> Result<Layout, LayoutError> {
        Layout::new(self.epoch_ms, self.time_unit_ms, self.machine_bits, self.sequence_bits)
    }
}

/// What the file holds. Version 1 files have the mark only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkRecord {
    /// The promise: no id this server issued carries a time above this (ms since 1970).
    pub mark_unix_ms: i64,
    pub machine_id: Option<i64>,
    pub layout: Option<LayoutRecord>,
    /// The system identifier of the cluster that wrote the file (pg_controldata shows it).
    pub system_identifier: Option<u64>,
    /// The id space (etcd prefix) the machine id was leased from, when it was.
    pub leased_from: Option<String>,
}

/// The file's JSON form.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV2 {
    format: String,
    version: u32,
    mark_unix_ms: i64,
    /// The mark for people reading the file; not read back.
    #[serde(default)]
    mark: String,
    machine_id: i64,
    /// The etcd prefix the machine id was leased from (a hand-set server's file has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    leased_from: Option<String>,
    layout: LayoutRecord,
    system_identifier: u64,
}

/// The mark in `dir`: `Ok(None)` when there is no file (a server that never issued an id), an
/// error when the file exists but does not hold a mark.
pub fn read(dir: &Path) -> Result<Option<MarkRecord>, String> {
    let text = match fs::read_to_string(dir.join(FILE_NAME)) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    parse(&text).map(Some)
}

pub(crate) fn parse(text: &str) -> Result<MarkRecord, String> {
    if text.starts_with(HEADER_V1) {
        let mut lines = text.lines().skip(1);
        return match (lines.next().map(str::parse::<i64>), lines.next()) {
            (Some(Ok(ms)), None) if ms >= 0 => Ok(MarkRecord {
                mark_unix_ms: ms,
                machine_id: None,
                layout: None,
                system_identifier: None,
                leased_from: None,
            }),
            _ => Err("the second and last line is not a time in milliseconds since 1970".into()),
        };
    }
    let file: FileV2 = serde_json::from_str(text)
        .map_err(|e| format!("it is neither a version 1 file ({HEADER_V1:?}) nor a JSON mark: {e}"))?;
    if file.format != FORMAT {
        return Err(format!("its \"format\" is {:?}, not {FORMAT:?}", file.format));
    }
    if file.version != VERSION {
        return Err(format!("it is version {} (this pg_snowflake writes and reads version {VERSION})", file.version));
    }
    if file.mark_unix_ms < 0 {
        return Err(format!("its mark {} is before 1970", file.mark_unix_ms));
    }
    Ok(MarkRecord {
        mark_unix_ms: file.mark_unix_ms,
        machine_id: Some(file.machine_id),
        layout: Some(file.layout),
        system_identifier: Some(file.system_identifier),
        leased_from: file.leased_from,
    })
}

/// Who writes a mark: the machine id it issues under (leased: the one it held last, -1 none), and
/// the etcd prefix it is leased from, if it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writer<'a> {
    pub machine_id: i64,
    pub leased_from: Option<&'a str>,
}

pub(crate) fn render(mark_unix_ms: i64, writer: Writer, layout: &Layout, system_identifier: u64) -> String {
    let file = FileV2 {
        format: FORMAT.into(),
        version: VERSION,
        mark_unix_ms,
        mark: format_utc(mark_unix_ms),
        machine_id: writer.machine_id,
        leased_from: writer.leased_from.map(str::to_string),
        layout: layout.into(),
        system_identifier,
    };
    serde_json::to_string_pretty(&file).expect("a mark serialises") + "\n"
}

/// Replaces the mark in `dir` by `mark_unix_ms`, written by this server (its machine id, layout
/// and system identifier), durably, before returning; `before_rename` runs once the temporary
/// file is durable, before it replaces the mark.
pub fn write(
    dir: &Path,
    mark_unix_ms: i64,
    writer: Writer,
    layout: &Layout,
    system_identifier: u64,
    before_rename: impl FnOnce(),
) -> io::Result<()> {
    write_temp(dir, &render(mark_unix_ms, writer, layout, system_identifier))?;
    before_rename();
    replace(dir)
}

/// The first half of a write: `text` (a rendered mark) in the temporary file, synced.
pub fn write_temp(dir: &Path, text: &str) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(dir.join(TEMP_NAME))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// The second half: the temporary file renamed over the mark, and the directory synced.
pub fn replace(dir: &Path) -> io::Result<()> {
    fs::rename(dir.join(TEMP_NAME), dir.join(FILE_NAME))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const EPOCH_2025: i64 = 1_735_689_600_000;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pg_snowflake-mark-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn layout() -> Layout {
        Layout::new(EPOCH_2025, 1, 10, 12).unwrap()
    }

    fn by_hand(machine_id: i64) -> Writer<'static> {
        Writer { machine_id, leased_from: None }
    }

    #[test]
    fn no_file_is_no_mark_and_a_written_mark_reads_back_with_its_writer() {
        let dir = scratch("roundtrip");
        assert_eq!(read(&dir), Ok(None));
        write(&dir, 1_764_000_000_123, by_hand(7), &layout(), 7_312_345_678_901_234_567, || {}).unwrap();
        let expected = MarkRecord {
            mark_unix_ms: 1_764_000_000_123,
            machine_id: Some(7),
            layout: Some((&layout()).into()),
            system_identifier: Some(7_312_345_678_901_234_567),
            leased_from: None,
        };
        assert_eq!(read(&dir), Ok(Some(expected)));
        assert!(!fs::read_to_string(dir.join(FILE_NAME)).unwrap().contains("leased_from"), "as before issue 57");
        write(&dir, 1_764_000_001_000, by_hand(8), &layout(), 1, || {}).unwrap();
        assert_eq!(read(&dir).unwrap().unwrap().mark_unix_ms, 1_764_000_001_000);
        assert!(!dir.join(TEMP_NAME).exists(), "the temporary file is renamed away");
        let text = fs::read_to_string(dir.join(FILE_NAME)).unwrap();
        assert!(text.contains("\"mark\": \"2025-11-24 16:00:01+00\""), "readable by people: {text}");
        assert_eq!(read(&dir).unwrap().unwrap().layout.unwrap().layout(), Ok(layout()));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn version_1_files_are_still_read() {
        let r = parse("pg_snowflake high-water mark v1\n1764000000123\n").unwrap();
        assert_eq!(
            r,
            MarkRecord {
                mark_unix_ms: 1_764_000_000_123,
                machine_id: None,
                layout: None,
                system_identifier: None,
                leased_from: None
            }
        );
    }

    #[test]
    fn a_leased_server_s_file_names_the_id_it_held_and_its_id_space() {
        let leased = Writer { machine_id: 3, leased_from: Some("/pg_snowflake/prod") };
        let text = render(5, leased, &layout(), 9);
        assert!(text.contains("\"machine_id\": 3,\n  \"leased_from\": \"/pg_snowflake/prod\""), "{text}");
        let r = parse(&text).unwrap();
        assert_eq!((r.machine_id, r.leased_from.as_deref()), (Some(3), Some("/pg_snowflake/prod")));
        // A leased server's file of 0.2.0's betas: machine id -1, no id space.
        let beta = render(5, by_hand(-1), &layout(), 9);
        assert_eq!(parse(&beta).unwrap().leased_from, None);
    }

    #[test]
    fn a_damaged_file_is_an_error_not_a_mark() {
        let dir = scratch("damaged");
        let good = render(5, by_hand(7), &layout(), 9);
        for bad in [
            "".to_string(),
            "garbage\n".into(),
            "pg_snowflake high-water mark v1\n".into(),
            "pg_snowflake high-water mark v1\n12x\n".into(),
            "pg_snowflake high-water mark v1\n-5\n".into(),
            "pg_snowflake high-water mark v1\n5\n6\n".into(),
            good.replace("\"version\": 2", "\"version\": 3"),
            good.replace("\"mark_unix_ms\": 5", "\"mark_unix_ms\": -5"),
            good.replace("high-water mark\"", "something else\""),
            good.replace("\"machine_id\": 7,", ""),
            good[..good.len() / 2].to_string(),
        ] {
            fs::write(dir.join(FILE_NAME), &bad).unwrap();
            assert!(read(&dir).is_err(), "{bad:?} was read as a mark");
        }
        fs::write(dir.join(FILE_NAME), &good).unwrap();
        assert!(read(&dir).is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_error() {
        let e =
            write(Path::new("/nonexistent/pg_snowflake"), 1, by_hand(7), &layout(), 1, || panic!("no temporary file"));
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::NotFound, "the system's error is kept");
    }
}
