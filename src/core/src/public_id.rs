//! Public ids: a keyed, reversible, opaque form of a snowflake id, in pure Rust.
//!
//! The construction is one AES block (AES-128 or AES-256, by the key's length) used as a keyed
//! permutation of 128-bit blocks: the block is the id (8 bytes, big-endian) followed by a fixed
//! 8-byte check value. Encrypting gives 16 bytes that look random and share nothing with the
//! tokens of neighbouring ids; decrypting a token made with another key, or altered in any way,
//! yields a random block whose last 8 bytes match the check value with probability 2^-64, so it
//! is rejected rather than decoded to a wrong id. Without the key, a token reveals nothing of the
//! id (its time, machine, or order).
//!
//! Tokens are the 16 bytes in RFC 4648 base32 with the lowercase alphabet `a-z2-7` and no
//! padding: 26 characters, URL-safe, read case-insensitively. Only that spelling is read: no
//! whitespace around it (a token is not trimmed), and a last character whose two spare bits are
//! zero; each other spelling is refused with its own reason ([`Spelling::reason`]).

use crate::error::Error;
use crate::layout::LayoutError;
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use aes::{Aes128, Aes256};
use zeroize::Zeroizing;

/// The check value: the second half of every plaintext block.
const CHECK: [u8; 8] = *b"snowflk1";
pub const TOKEN_LEN: usize = 26;
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

pub enum PublicKey {
    Aes128(Box<Aes128>),
    Aes256(Box<Aes256>),
}

impl PublicKey {
    /// A key from 32 or 64 hexadecimal characters. The error names the setting, never the key.
    pub fn from_hex(setting: &'static str, hex: &str) -> Result<PublicKey, Error> {
        let hex = hex.trim();
        let invalid = || Error::PublicKeyInvalid { setting, length: hex.chars().count() };
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        // Zeroed when dropped; so are the AES key schedules (the aes crate's zeroize feature).
        let bytes: Zeroizing<Vec<u8>> = Zeroizing::new(
            (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect(),
        );
        match hex.len() {
            32 => Ok(PublicKey::Aes128(Box::new(Aes128::new(GenericArray::from_slice(&bytes))))),
            64 => Ok(PublicKey::Aes256(Box::new(Aes256::new(GenericArray::from_slice(&bytes))))),
            _ => Err(invalid()),
        }
    }

    fn encrypt(&self, block: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(block);
        match self {
            PublicKey::Aes128(c) => c.encrypt_block(b),
            PublicKey::Aes256(c) => c.encrypt_block(b),
        }
    }

    fn decrypt(&self, block: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(block);
        match self {
            PublicKey::Aes128(c) => c.decrypt_block(b),
            PublicKey::Aes256(c) => c.decrypt_block(b),
        }
    }

    /// The token of an id.
    pub fn to_public(&self, id: i64) -> Result<String, Error> {
        if id < 0 {
            return Err(LayoutError::NegativeId { id }.into());
        }
        let mut block = [0_u8; 16];
        block[..8].copy_from_slice(&id.to_be_bytes());
        block[8..].copy_from_slice(&CHECK);
        self.encrypt(&mut block);
        Ok(base32(&block))
    }

    /// The id of a token made with this key, if it is one.
    fn open(&self, mut block: [u8; 16]) -> Option<i64> {
        self.decrypt(&mut block);
        let id = i64::from_be_bytes(block[..8].try_into().unwrap());
        (block[8..] == CHECK && id >= 0).then_some(id)
    }
}

/// The id of `token`, made with `current` or, during a key rotation, `previous`.
pub fn from_public(token: &str, current: &PublicKey, previous: Option<&PublicKey>) -> Result<i64, Error> {
    let invalid = |reason: String| Error::InvalidPublicId { token: token.chars().take(40).collect(), reason };
    let block = unbase32(token).map_err(|s| invalid(s.reason()))?;
    current
        .open(block)
        .or_else(|| previous.and_then(|p| p.open(block)))
        .ok_or_else(|| invalid("it was not made with this server's key: altered, truncated or from elsewhere".into()))
}

/// Why a text is not the spelling of a token, before any key is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// Whitespace before or after it: refused, not trimmed, so that one row has one token (but
    /// for its case).
    Whitespace,
    /// Not 26 characters long.
    Length { chars: usize },
    /// A character outside a-z, A-Z and 2-7, at this place (1 is the first).
    Character { at: usize, ch: char },
    /// The 26th character carries 5 bits of which a token uses 3: its 2 spare bits are set.
    SpareBits { ch: char },
}

/// The characters a token may end with: those whose two spare bits are zero.
pub const LAST_CHARACTERS: &str = "aeimquy4";

impl Spelling {
    /// The reason in the message ("invalid snowflake public id ...: REASON").
    pub fn reason(&self) -> String {
        match self {
            Spelling::Whitespace => {
                "it has whitespace before or after it (a token is read as given, not trimmed)".into()
            }
            Spelling::Length { chars } => format!("it has {chars} characters, not 26"),
            Spelling::Character { at, ch } => {
                format!("its character {at} ({ch:?}) is not one of a-z and 2-7")
            }
            Spelling::SpareBits { ch } => format!(
                "its last character ({ch:?}) sets bits that no token has: a token ends in one of {}",
                LAST_CHARACTERS.chars().map(String::from).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

fn base32(bytes: &[u8; 16]) -> String {
    let n = u128::from_be_bytes(*bytes);
    // 26 characters carry 130 bits: 25 of 5 bits from the top, then the last 3 bits and two zeros.
    let digit = |i: usize| if i < TOKEN_LEN - 1 { (n >> (123 - 5 * i)) & 31 } else { (n & 7) << 2 };
    (0..TOKEN_LEN).map(|i| ALPHABET[digit(i) as usize] as char).collect()
}

fn unbase32(text: &str) -> Result<[u8; 16], Spelling> {
    if text.trim() != text {
        return Err(Spelling::Whitespace);
    }
    let chars = text.chars().count();
    if chars != TOKEN_LEN {
        return Err(Spelling::Length { chars });
    }
    let mut n: u128 = 0;
    // 26 characters, each one byte long: a multi-byte character is reported where it stands.
    for (i, ch) in text.chars().enumerate() {
        let v = u8::try_from(ch)
            .ok()
            .and_then(|b| ALPHABET.iter().position(|&a| a == b.to_ascii_lowercase()))
            .ok_or(Spelling::Character { at: i + 1, ch })? as u128;
        if i == TOKEN_LEN - 1 {
            // Only the canonical spelling: the last character's two spare bits are zero.
            if v & 3 != 0 {
                return Err(Spelling::SpareBits { ch });
            }
            n = (n << 3) | (v >> 2);
        } else {
            n = (n << 5) | v;
        }
    }
    Ok(n.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY_128: &str = "000102030405060708090a0b0c0d0e0f";
    const KEY_256: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn key(hex: &str) -> PublicKey {
        PublicKey::from_hex("snowflake.public_key", hex).unwrap()
    }

    #[test]
    fn key_material_is_zeroed_when_dropped() {
        // A compile-time proof: both key schedules implement ZeroizeOnDrop.
        fn zeroed_on_drop<T: zeroize::ZeroizeOnDrop>() {}
        zeroed_on_drop::<Aes128>();
        zeroed_on_drop::<Aes256>();
    }

    #[test]
    fn the_cipher_is_aes() {
        // FIPS-197 appendix C.1 and C.3: plaintext 00112233445566778899aabbccddeeff.
        for (k, expected) in
            [(KEY_128, "69c4e0d86a7b0430d8cdb78070b4c55a"), (KEY_256, "8ea2b7ca516745bfeafc49904b496089")]
        {
            let mut block: [u8; 16] = u128::to_be_bytes(0x00112233445566778899aabbccddeeff);
            key(k).encrypt(&mut block);
            assert_eq!(format!("{:032x}", u128::from_be_bytes(block)), expected);
        }
    }

    #[test]
    fn known_answers() {
        // Vectors of this construction: a change of it must change these, on purpose.
        let k = key(KEY_128);
        let tokens: Vec<String> =
            [0, 1, 253_014_076_999_888_896, i64::MAX].iter().map(|&id| k.to_public(id).unwrap()).collect();
        assert_eq!(tokens, KNOWN_128);
        assert_eq!(key(KEY_256).to_public(253_014_076_999_888_896).unwrap(), KNOWN_256);
    }
    // Computed independently with Python's `cryptography` (AES-ECB on id || "snowflk1") and
    // `base64.b32encode`, lowercased, without padding.
    const KNOWN_128: [&str; 4] = [
        "eb7x7yzr7a56s3gd3fwl77gkkm",
        "squg3pzlbqo6m356ttzatppcki",
        "pm774uneirusctvajkkcnwcrzy",
        "7rsbvxelve4u7nhcdv46gxojaa",
    ];
    const KNOWN_256: &str = "qgabsu3ryfyg4bx7gd3tvzkyny";

    #[test]
    fn keys_are_32_or_64_hex_characters() {
        for bad in ["", "00", &KEY_128[..31], &format!("{KEY_128}0"), &KEY_128.replace('0', "g"), "not a key at all"] {
            match PublicKey::from_hex("snowflake.public_key", bad) {
                Err(Error::PublicKeyInvalid { length, .. }) => assert_eq!(length, bad.chars().count()),
                _ => panic!("{bad:?} was accepted"),
            }
        }
        assert!(PublicKey::from_hex("snowflake.public_key", &KEY_256.to_uppercase()).is_ok());
    }

    #[test]
    fn tokens_are_26_url_safe_characters_read_in_any_case() {
        let k = key(KEY_128);
        let t = k.to_public(42).unwrap();
        assert_eq!(t.len(), TOKEN_LEN);
        assert!(t.bytes().all(|c| ALPHABET.contains(&c)));
        assert_eq!(from_public(&t.to_uppercase(), &k, None), Ok(42));
        assert!(matches!(k.to_public(-1), Err(Error::Layout(LayoutError::NegativeId { .. }))));
    }

    #[test]
    fn altered_truncated_and_foreign_tokens_are_rejected() {
        let (k, other) = (key(KEY_128), key(KEY_256));
        let t = k.to_public(253_014_076_999_888_896).unwrap();
        for i in 0..TOKEN_LEN {
            for c in ALPHABET.iter().map(|&c| c as char) {
                let mut altered: Vec<char> = t.chars().collect();
                if altered[i] == c {
                    continue;
                }
                altered[i] = c;
                let altered: String = altered.into_iter().collect();
                assert!(from_public(&altered, &k, None).is_err(), "{altered} decoded");
            }
        }
        assert!(from_public(&t[..25], &k, None).is_err());
        assert!(from_public(&format!("{t}a"), &k, None).is_err());
        assert!(from_public("0123456789abcdefghijklmnop", &k, None).is_err(), "0 and 1 are not base32");
        assert!(from_public(&t, &other, None).is_err(), "another key");
        // During a rotation, tokens of the previous key still decode.
        assert_eq!(from_public(&t, &other, Some(&k)), Ok(253_014_076_999_888_896));
    }

    #[test]
    fn each_wrong_spelling_has_its_own_reason() {
        let k = key(KEY_128);
        let t = k.to_public(253_014_076_999_888_896).unwrap();
        let reason = |text: &str| match from_public(text, &k, None) {
            Err(Error::InvalidPublicId { reason, .. }) => reason,
            other => panic!("{text:?}: {other:?}"),
        };
        // Whitespace is refused, never trimmed: one token per row (but for its case).
        for text in [format!(" {t}"), format!("{t} "), format!("\t{t}"), format!("{t}\n"), format!("\u{a0}{t}")] {
            assert_eq!(unbase32(&text), Err(Spelling::Whitespace), "{text:?}");
            assert!(reason(&text).starts_with("it has whitespace before or after it"));
        }
        assert_eq!(unbase32(&t[..25]), Err(Spelling::Length { chars: 25 }));
        assert_eq!(reason(&t[..25]), "it has 25 characters, not 26");
        assert_eq!(unbase32(""), Err(Spelling::Length { chars: 0 }));
        assert_eq!(unbase32(&format!("0{}", &t[1..])), Err(Spelling::Character { at: 1, ch: '0' }));
        assert_eq!(reason(&format!("{}1{}", &t[..9], &t[10..])), "its character 10 ('1') is not one of a-z and 2-7");
        // A character of two bytes is counted as one.
        assert_eq!(unbase32(&format!("{}é", &t[..25])), Err(Spelling::Character { at: 26, ch: 'é' }));
        // The last character: 3 of its 5 bits are the token's, the 2 others must be zero.
        for c in ALPHABET.iter().map(|&c| c as char) {
            let text = format!("{}{c}", &t[..25]);
            let spare = unbase32(&text) == Err(Spelling::SpareBits { ch: c });
            assert_eq!(spare, !LAST_CHARACTERS.contains(c), "{text}");
            assert_eq!(unbase32(&text.to_uppercase()).is_ok(), !spare, "{text}, upper case");
        }
        assert_eq!(
            reason(&format!("{}b", &t[..25])),
            "its last character ('b') sets bits that no token has: a token ends in one of a, e, i, m, q, u, y, 4"
        );
        // The canonical token, in any case, is read.
        assert!(LAST_CHARACTERS.contains(t.chars().last().unwrap()));
        assert_eq!(from_public(&t.to_uppercase(), &k, None), Ok(253_014_076_999_888_896));
    }

    #[test]
    fn neighbouring_ids_share_no_structure() {
        let k = key(KEY_128);
        let blocks: Vec<u128> = (0..2000_i64)
            .map(|id| u128::from_be_bytes(unbase32(&k.to_public(1 << 22 | id).unwrap()).unwrap()))
            .collect();
        let mean_distance: f64 =
            blocks.windows(2).map(|w| (w[0] ^ w[1]).count_ones() as f64).sum::<f64>() / (blocks.len() - 1) as f64;
        // Independent random 128-bit blocks differ in 64 bits on average (sd 5.7; of the mean 0.13).
        assert!((62.0..66.0).contains(&mean_distance), "{mean_distance}");
        let common_prefix = blocks.windows(2).filter(|w| (w[0] ^ w[1]).leading_zeros() >= 16).count();
        assert!(common_prefix < 5, "{common_prefix} neighbours share their first 16 bits");
    }

    proptest! {
        #[test]
        fn every_id_round_trips(id in 0..=i64::MAX, k in prop_oneof![Just(KEY_128), Just(KEY_256)]) {
            let k = key(k);
            prop_assert_eq!(from_public(&k.to_public(id).unwrap(), &k, None), Ok(id));
        }

        #[test]
        fn base32_round_trips(bytes in any::<[u8; 16]>()) {
            prop_assert_eq!(unbase32(&base32(&bytes)), Ok(bytes));
        }
    }
}
