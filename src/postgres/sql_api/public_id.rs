//! Public ids: `snowflake_to_public()`, `snowflake_from_public()`, `snowflake_try_from_public()`.
//! STABLE: the answer depends on the key file named by snowflake.public_key_file, read again at
//! each reload. EXECUTE is revoked from PUBLIC (sql/comments.sql).

use super::super::key_file::{self, Keys};
use super::super::server_config;
use super::raise;
use pg_snowflake_core::public_id;
use pg_snowflake_core::Error;
use pgrx::prelude::*;
use std::rc::Rc;

/// The keys from snowflake.public_key_file (read once per reload, not per call).
fn keys() -> Result<Rc<Keys>, Error> {
    server_config::layout()?; // the settings exist only when the library is preloaded
    key_file::keys()
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
