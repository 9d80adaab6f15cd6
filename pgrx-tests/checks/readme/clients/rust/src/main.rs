//! The harness of the README's Rust recipe (src/recipe.rs, written from the README by
//! pgrx-tests/checks/readme/clients.py): calls it as an application would and prints what it got, in the
//! client's own type, for clients.py to compare with what the server stored.
mod recipe;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), tokio_postgres::Error> {
    let config = std::env::var("CLIENT_CONNINFO").expect("CLIENT_CONNINFO");
    let client = recipe::connect(&config).await?;
    recipe::create_table(&client).await?;
    let order_id: i64 = recipe::insert_one(&client, "book").await?;
    let items: Vec<String> = (0..1000).map(|n| format!("item {n}")).collect();
    let ids: Vec<i64> = recipe::insert_many(&client, &items).await?;
    assert_eq!(ids.len(), items.len(), "one id per item");
    println!("type i64");
    println!("row {order_id} book");
    for (id, item) in ids.iter().zip(&items) {
        println!("row {id} {item}");
    }
    // A JSON round trip through serde_json, in the client's type.
    let text = serde_json::to_string(&serde_json::json!({ "id": order_id })).unwrap();
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    println!("json {}", back["id"].as_i64().expect("an i64"));
    // The server's JSON (snowflake_to_jsonb: the id as a string), parsed by serde_json.
    let row = client.query_one("SELECT snowflake_to_jsonb($1)::text", &[&order_id]).await?;
    let j: serde_json::Value = serde_json::from_str(row.get::<_, &str>(0)).unwrap();
    let id: i64 = j["id"].as_str().expect("a string").parse().unwrap();
    println!("browser {id}");
    Ok(())
}
