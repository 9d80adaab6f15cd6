//! The key file of public ids (`snowflake.public_key_file`), as PostgreSQL treats `ssl_key_file`:
//! what its text may hold, and who may own it with which permissions, as pure functions. The
//! PostgreSQL shell opens the file, asks these, and keeps the keys.
//!
//! The text: one key per line, 32 or 64 hexadecimal characters (AES-128 or AES-256); the first
//! is the current key, an optional second one the previous key (its tokens still decode, for a
//! rotation). Blank lines and lines starting with `#` are ignored. A problem names the line and
//! the length, never the text. Everything read is zeroed when dropped.

use zeroize::Zeroizing;

/// The setting that names the file.
pub const SETTING: &str = "snowflake.public_key_file";

/// `S_IFMT` and `S_IFREG` of `st_mode`.
const S_IFMT: u32 = 0o170_000;
const S_IFREG: u32 = 0o100_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyFileProblem {
    /// The file could not be opened or read (the OS error, which never quotes the content).
    Unreadable {
        reason: String,
    },
    NotARegularFile,
    /// Longer than any key file.
    TooLarge {
        max: u64,
    },
    /// Owned by another OS user than the server's.
    WrongOwner {
        owner: u32,
        server: u32,
    },
    /// Group or others may read, write or execute it.
    LooseMode {
        mode: u32,
    },
    NoKey,
    TooManyKeys {
        count: usize,
    },
    /// A line that is not a key of 32 or 64 hexadecimal characters.
    InvalidKey {
        line: usize,
        length: usize,
    },
}

/// The file is a regular file: asked of its path before it is opened, since opening a FIFO waits
/// for a writer and opening a device can act on it.
pub fn check_file_type(st_mode: u32) -> Result<(), KeyFileProblem> {
    if st_mode & S_IFMT != S_IFREG {
        return Err(KeyFileProblem::NotARegularFile);
    }
    Ok(())
}

/// The file's type, owner and permissions are acceptable: a regular file owned by the server's
/// OS user, readable and writable by it alone (0600 or stricter), as PostgreSQL asks of
/// `ssl_key_file`.
pub fn check_permissions(st_mode: u32, owner_uid: u32, server_uid: u32) -> Result<(), KeyFileProblem> {
    check_file_type(st_mode)?;
    if owner_uid != server_uid {
        return Err(KeyFileProblem::WrongOwner { owner: owner_uid, server: server_uid });
    }
    if st_mode & 0o077 != 0 {
        return Err(KeyFileProblem::LooseMode { mode: st_mode & 0o7777 });
    }
    Ok(())
}

/// The keys a file holds, each made by `key_of` from its line (`None`: not a key): the current
/// one, and the previous one if given. (The caller makes the keys, so that this module needs no
/// cipher: `public_id` depends on the errors, which name the problems of this file.)
pub fn parse<K>(
    text: &Zeroizing<String>,
    key_of: impl Fn(&str) -> Option<K>,
) -> Result<(K, Option<K>), KeyFileProblem> {
    let mut keys = Vec::with_capacity(2);
    let mut count = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        count += 1;
        if count > 2 {
            continue;
        }
        let key = key_of(line).ok_or(KeyFileProblem::InvalidKey { line: n + 1, length: line.chars().count() })?;
        keys.push(key);
    }
    if count > 2 {
        return Err(KeyFileProblem::TooManyKeys { count });
    }
    let mut keys = keys.into_iter();
    let current = keys.next().ok_or(KeyFileProblem::NoKey)?;
    Ok((current, keys.next()))
}

impl KeyFileProblem {
    pub fn message(&self, path: &str) -> String {
        self.message_for(SETTING, path)
    }

    /// The message for the file of `setting` (the same rules hold for `snowflake.etcd_credentials_file`).
    pub fn message_for(&self, setting: &str, path: &str) -> String {
        match self {
            KeyFileProblem::Unreadable { reason } => format!("could not read {setting} \"{path}\": {reason}"),
            KeyFileProblem::NotARegularFile => format!("{setting} \"{path}\" is not a regular file"),
            KeyFileProblem::TooLarge { max } => format!("{setting} \"{path}\" is longer than {max} bytes"),
            KeyFileProblem::WrongOwner { owner, server } => format!(
                "{setting} \"{path}\" is owned by user id {owner}, not by the server's OS user (user id {server})"
            ),
            KeyFileProblem::LooseMode { mode } => {
                format!("{setting} \"{path}\" has group or world access (permissions {mode:04o})")
            }
            KeyFileProblem::NoKey => format!("{setting} \"{path}\" holds no key"),
            KeyFileProblem::TooManyKeys { count } => {
                format!("{setting} \"{path}\" holds {count} keys; at most 2 (the current one, then the previous one)")
            }
            KeyFileProblem::InvalidKey { line, length } => format!(
                "line {line} of {setting} \"{path}\" is not 32 or 64 hexadecimal characters (a 128- or 256-bit key); it has {length} characters"
            ),
        }
    }

    /// What to do, for the server run by the OS user `server_user` (a name, or a user id: `chown`
    /// takes either).
    pub fn hint(&self, path: &str, server_user: &str) -> String {
        match self {
            KeyFileProblem::Unreadable { .. } | KeyFileProblem::NotARegularFile => format!(
                "Write the key file (openssl rand -hex 32 > {path}) as the server's OS user, {server_user}, with chmod 600, and reload."
            ),
            KeyFileProblem::WrongOwner { .. } => format!(
                "The file must be owned by the server's OS user, {server_user}, with permissions u=rw (0600) or less: chown {server_user} {path}; chmod 600 {path}; then reload."
            ),
            KeyFileProblem::LooseMode { .. } => format!(
                "Only the server's OS user, {server_user}, may have access to the file (permissions u=rw, 0600, or less): chmod 600 {path}; then reload."
            ),
            KeyFileProblem::NoKey | KeyFileProblem::TooLarge { .. } | KeyFileProblem::TooManyKeys { .. } | KeyFileProblem::InvalidKey { .. } => {
                "One key per line, 32 or 64 hexadecimal characters (openssl rand -hex 32): the current key first, then optionally the previous one; reload.".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::public_id::PublicKey;

    const K1: &str = "000102030405060708090a0b0c0d0e0f";
    const K2: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const REG: u32 = 0o100_000;

    fn text(s: &str) -> Zeroizing<String> {
        Zeroizing::new(s.to_string())
    }

    fn key(hex: &str) -> Option<PublicKey> {
        PublicKey::from_hex(SETTING, hex).ok()
    }

    #[test]
    fn permissions_as_for_ssl_key_file() {
        assert_eq!(check_permissions(REG | 0o600, 26, 26), Ok(()));
        assert_eq!(check_permissions(REG | 0o400, 26, 26), Ok(()));
        assert_eq!(check_permissions(REG, 26, 26), Ok(()));
        for mode in [0o640, 0o604, 0o660, 0o644, 0o610, 0o601, 0o700 | 0o070, 0o777] {
            assert_eq!(check_permissions(REG | mode, 26, 26), Err(KeyFileProblem::LooseMode { mode }), "{mode:o}");
        }
        assert_eq!(check_permissions(REG | 0o600, 0, 26), Err(KeyFileProblem::WrongOwner { owner: 0, server: 26 }));
        assert_eq!(check_permissions(0o040_000 | 0o700, 26, 26), Err(KeyFileProblem::NotARegularFile));
    }

    #[test]
    fn only_a_regular_file() {
        // FIFO, character device, directory, block device, symbolic link (lstat), socket.
        for kind in [0o010_000, 0o020_000, 0o040_000, 0o060_000, 0o120_000, 0o140_000] {
            assert_eq!(check_file_type(kind | 0o600), Err(KeyFileProblem::NotARegularFile), "{kind:o}");
            assert_eq!(check_permissions(kind | 0o600, 26, 26), Err(KeyFileProblem::NotARegularFile), "{kind:o}");
        }
        assert_eq!(check_file_type(REG | 0o600), Ok(()));
        assert_eq!(check_file_type(REG | 0o644), Ok(()));
        assert_eq!(
            KeyFileProblem::NotARegularFile.message("/k"),
            "snowflake.public_key_file \"/k\" is not a regular file"
        );
    }

    #[test]
    fn every_loose_mode_is_refused() {
        for mode in 0..0o1000_u32 {
            let ok = check_permissions(REG | mode, 7, 7).is_ok();
            assert_eq!(ok, mode & 0o077 == 0, "{mode:o}");
        }
    }

    #[test]
    fn one_or_two_keys() {
        let msg = PublicKey::from_hex("x", K1).unwrap().to_public(42).unwrap();
        let (current, previous) = parse(&text(&format!("# rotated 2026-11-30\n\n  {K2}  \n{K1}\n")), key).unwrap();
        assert_ne!(current.to_public(42).unwrap(), msg);
        assert_eq!(previous.unwrap().to_public(42).unwrap(), msg);
        let (current, previous) = parse(&text(&format!("{K1}\n")), key).unwrap();
        assert_eq!(current.to_public(42).unwrap(), msg);
        assert!(previous.is_none());
    }

    #[test]
    fn problems_name_the_line_never_the_text() {
        let secret = &K1[..31];
        let e = parse(&text(&format!("# c\n{secret}\n")), key).err().unwrap();
        assert_eq!(e, KeyFileProblem::InvalidKey { line: 2, length: 31 });
        assert!(!e.message("/k").contains(secret));
        assert_eq!(e.message("/k"), "line 2 of snowflake.public_key_file \"/k\" is not 32 or 64 hexadecimal characters (a 128- or 256-bit key); it has 31 characters");
        assert_eq!(parse(&text("# nothing\n\n"), key).err(), Some(KeyFileProblem::NoKey));
        assert_eq!(
            parse(&text(&format!("{K1}\n{K1}\n{K2}\n")), key).err(),
            Some(KeyFileProblem::TooManyKeys { count: 3 })
        );
        let loose = KeyFileProblem::LooseMode { mode: 0o644 };
        assert_eq!(
            loose.message("/k"),
            "snowflake.public_key_file \"/k\" has group or world access (permissions 0644)"
        );
        assert!(loose.hint("/k", "pgsrv").contains("chmod 600 /k"));
    }

    #[test]
    fn the_hints_name_the_servers_os_user() {
        // Not always postgres: the user the server runs as, by name or by user id.
        let wrong = KeyFileProblem::WrongOwner { owner: 0, server: 1001 };
        assert!(wrong.hint("/k", "pgsrv").contains("server's OS user, pgsrv, with"), "{}", wrong.hint("/k", "pgsrv"));
        assert!(wrong.hint("/k", "pgsrv").contains("chown pgsrv /k; chmod 600 /k"));
        assert!(wrong.hint("/k", "1001").contains("chown 1001 /k"));
        for p in [
            KeyFileProblem::LooseMode { mode: 0o640 },
            KeyFileProblem::Unreadable { reason: "x".into() },
            KeyFileProblem::NotARegularFile,
        ] {
            assert!(p.hint("/k", "pgsrv").contains("the server's OS user, pgsrv,"), "{:?}", p);
            assert!(!p.hint("/k", "pgsrv").contains("postgres"), "{:?}", p);
        }
    }
}
