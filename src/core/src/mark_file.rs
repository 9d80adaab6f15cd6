//! The high-water mark on disk: one small file in the data directory promising that no id this
//! server issued carries a time above the mark. It is replaced durably (write a new file, fsync
//! it, rename it over the old one, fsync the directory), so after any crash the file holds either
//! the old promise or the new one, both of them true.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub const FILE_NAME: &str = "pg_snowflake.mark";
const TEMP_NAME: &str = "pg_snowflake.mark.tmp";
const HEADER: &str = "pg_snowflake high-water mark v1";

/// The mark in `dir`, in milliseconds since 1970: `Ok(None)` when there is no file (a server that
/// never issued an id), an error when the file exists but does not hold a mark.
pub fn read(dir: &Path) -> Result<Option<i64>, String> {
    let text = match fs::read_to_string(dir.join(FILE_NAME)) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!("the first line is not {HEADER:?}"));
    }
    match (lines.next().map(str::parse::<i64>), lines.next()) {
        (Some(Ok(ms)), None) if ms >= 0 => Ok(Some(ms)),
        _ => Err("the second and last line is not a time in milliseconds since 1970".into()),
    }
}

/// Replaces the mark in `dir` by `unix_ms`, durably, before returning.
pub fn write(dir: &Path, unix_ms: i64) -> io::Result<()> {
    let temp = dir.join(TEMP_NAME);
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&temp)?;
    file.write_all(format!("{HEADER}\n{unix_ms}\n").as_bytes())?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, dir.join(FILE_NAME))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pg_snowflake-mark-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn no_file_is_no_mark_and_a_written_mark_reads_back() {
        let dir = scratch("roundtrip");
        assert_eq!(read(&dir), Ok(None));
        write(&dir, 1_764_000_000_123).unwrap();
        assert_eq!(read(&dir), Ok(Some(1_764_000_000_123)));
        write(&dir, 1_764_000_001_000).unwrap();
        assert_eq!(read(&dir), Ok(Some(1_764_000_001_000)));
        assert!(!dir.join(TEMP_NAME).exists(), "the temporary file is renamed away");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_file_is_an_error_not_a_mark() {
        let dir = scratch("damaged");
        for bad in [
            "",
            "garbage\n",
            "pg_snowflake high-water mark v1\n",
            "pg_snowflake high-water mark v1\n12x\n",
            "pg_snowflake high-water mark v1\n-5\n",
            "pg_snowflake high-water mark v1\n5\n6\n",
        ] {
            fs::write(dir.join(FILE_NAME), bad).unwrap();
            assert!(read(&dir).is_err(), "{bad:?} was read as a mark");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_error() {
        assert!(write(Path::new("/nonexistent/pg_snowflake"), 1).is_err());
    }
}
