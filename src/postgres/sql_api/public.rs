//! Public ids: `snowflake_to_public()`, `snowflake_from_public()`, `snowflake_try_from_public()`.
//! STABLE: the answer depends on snowflake.public_key, a setting.

use super::super::{server_config, settings};
use super::raise;
use pg_snowflake_core::public_id::{self, PublicKey};
use pg_snowflake_core::Error;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

struct Keys {
    /// The settings' text the keys were made from: the cache is valid while it is unchanged.
    text: (Option<Vec<u8>>, Option<Vec<u8>>),
    current: PublicKey,
    previous: Option<PublicKey>,
}

thread_local! {
    /// The parsed keys of this backend: an AES key schedule is made once per key, not per call.
    static KEYS: RefCell<Option<Rc<Keys>>> = const { RefCell::new(None) };
}

fn parse(setting: &'static str, text: &[u8]) -> Result<PublicKey, Error> {
    let text = std::str::from_utf8(text).map_err(|_| Error::PublicKeyInvalid { setting, length: text.len() })?;
    PublicKey::from_hex(setting, text)
}

fn keys() -> Result<Rc<Keys>, Error> {
    server_config::layout()?; // the settings exist only when the library is preloaded
    let (current, previous) = settings::public_keys();
    if let Some(keys) = KEYS.with_borrow(|k| k.clone()) {
        if keys.text.0.as_deref() == current && keys.text.1.as_deref() == previous {
            return Ok(keys);
        }
    }
    let keys = Rc::new(Keys {
        text: (current.map(<[u8]>::to_vec), previous.map(<[u8]>::to_vec)),
        current: parse("snowflake.public_key", current.ok_or(Error::PublicKeyUnset)?)?,
        previous: previous.map(|p| parse("snowflake.public_key_previous", p)).transpose()?,
    });
    KEYS.with_borrow_mut(|k| *k = Some(keys.clone()));
    Ok(keys)
}

/// The opaque, reversible public form of an id: 26 characters of a-z and 2-7.
#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_to_public(id: i64) -> String {
    raise(keys().and_then(|k| k.current.to_public(id)))
}

#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_from_public(token: &str) -> i64 {
    raise(keys().and_then(|k| public_id::from_public(token, &k.current, k.previous.as_ref())))
}

/// Like `snowflake_from_public()`, but NULL for a token that is not one of ours (a missing or
/// invalid key is still an error).
#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_try_from_public(token: &str) -> Option<i64> {
    let keys = raise(keys());
    public_id::from_public(token, &keys.current, keys.previous.as_ref()).ok()
}
