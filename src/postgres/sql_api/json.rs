//! `snowflake_to_jsonb()`: an id and its fields as JSON, the id as a decimal string so that no
//! JSON parser that reads numbers as doubles (JavaScript's) loses its last digits. STABLE: it
//! decodes under the server's layout (see the module note in `mod.rs`).

use super::super::server_config;
use super::decode::timestamp;
use super::raise;
use pg_snowflake_core::json_form::IdJson;
use pg_snowflake_core::Error;
use pgrx::prelude::*;
use pgrx::JsonB;

fn to_json(id: i64) -> Result<IdJson, Error> {
    let parts = server_config::layout()?.decode(id)?;
    // The same range as snowflake_timestamp(): a time timestamptz cannot hold is an error here too.
    timestamp(id, &parts)?;
    Ok(IdJson::new(id, &parts))
}

/// `{"id": "<decimal>", "ts": "<ISO 8601 UTC>", "machine_id": n, "sequence": n}`.
#[pg_extern(stable, parallel_safe, strict)]
fn snowflake_to_jsonb(id: i64) -> JsonB {
    JsonB(raise(to_json(id)).to_value())
}
