//! In-database tests, run by `cargo pgrx test` on a cluster that preloads the library with
//! `snowflake.machine_id = 7` and the default layout (see `pg_test` in lib.rs). Configurations the
//! test cluster cannot have (unset machine id, no preload, bad layouts, a standby, many
//! connections) are tested on clusters of their own in `pgrx-tests/`.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// The SQLSTATE, message and hint of the error `query` raises, or ("none", "", "").
    fn error_of(query: &str) -> (String, String, String) {
        Spi::run(
            "CREATE OR REPLACE FUNCTION pg_temp.error_of(q text, OUT state text, OUT message text, OUT hint text)
             LANGUAGE plpgsql AS $$
             BEGIN
                 EXECUTE q;
                 state := 'none'; message := ''; hint := '';
             EXCEPTION WHEN others THEN
                 GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
             END $$",
        )
        .unwrap();
        Spi::get_three_with_args::<String, String, String>("SELECT * FROM pg_temp.error_of($1)", &[query.into()])
            .map(|(a, b, c)| (a.unwrap(), b.unwrap(), c.unwrap()))
            .unwrap()
    }

    fn count(query: &str) -> i64 {
        Spi::get_one::<i64>(query).unwrap().unwrap()
    }

    #[pg_test]
    fn default_column_fills_100k_unique_increasing_ids() {
        Spi::run("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int NOT NULL)").unwrap();
        Spi::run("INSERT INTO orders(n) SELECT g FROM generate_series(1, 100000) g").unwrap();
        assert_eq!(count("SELECT count(DISTINCT id) FROM orders"), 100_000);
        let out_of_order = count(
            "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM orders) s WHERE id <= prev",
        );
        assert_eq!(out_of_order, 0, "ids must increase in the order rows were inserted");
        // Every id carries this server's machine id and a time within the statement.
        assert_eq!(count("SELECT count(*) FROM orders WHERE (snowflake_decode(id)).machine_id <> 7"), 0);
        assert_eq!(
            count("SELECT count(*) FROM orders, LATERAL snowflake_decode(id) d WHERE d.ts NOT BETWEEN now() - interval '1 minute' AND clock_timestamp()"),
            0
        );
    }

    #[pg_test]
    fn decode_round_trips_the_fields_of_generated_ids() {
        // Rebuild each id from its decoded fields with the default layout 41|10|12 from 2025-01-01.
        let mismatches = count(
            "WITH ids AS (SELECT snowflake_nextval() AS id FROM generate_series(1, 5000)),
                  parts AS (SELECT id, d.* FROM ids, LATERAL snowflake_decode(id) d)
             SELECT count(*) FROM parts
             WHERE id <> (((extract(epoch FROM ts) * 1000)::bigint - 1735689600000) << 22)
                        | (machine_id::bigint << 12) | sequence",
        );
        assert_eq!(mismatches, 0);
    }

    #[pg_test]
    fn decode_of_known_ids() {
        let row = |id: &str| {
            Spi::get_three::<String, i32, i32>(&format!(
                "SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'), machine_id, sequence FROM snowflake_decode({id})"
            ))
            .map(|(a, b, c)| (a.unwrap(), b.unwrap(), c.unwrap()))
            .unwrap()
        };
        assert_eq!(row("0"), ("2025-01-01 00:00:00.000".into(), 0, 0));
        assert_eq!(row(&format!("{}", (1_i64 << 22) | (7 << 12) | 9)), ("2025-01-01 00:00:00.001".into(), 7, 9));
        // The largest id: the last millisecond of the 41-bit field, machine 1023, sequence 4095.
        assert_eq!(row("9223372036854775807"), ("2094-09-07 15:47:35.551".into(), 1023, 4095));
        // Both forms of use work and agree.
        assert_eq!(count("SELECT (snowflake_decode(4194304)).machine_id::bigint"), 0);
        assert_eq!(count("SELECT count(*) FROM (VALUES (4194304::bigint)) t(id), LATERAL snowflake_decode(t.id) d WHERE d.sequence = 0"), 1);
        assert_eq!(Spi::get_one::<i64>("SELECT (snowflake_decode(NULL)).sequence::bigint").unwrap(), None, "STRICT");
    }

    #[pg_test]
    fn negative_id_is_an_invalid_parameter_naming_the_value() {
        let (state, message, hint) = error_of("SELECT snowflake_decode(-42)");
        assert_eq!(state, "22023");
        assert_eq!(message, "snowflake id -42 is negative");
        assert!(!hint.is_empty());
    }

    #[pg_test]
    fn functions_are_declared_as_documented() {
        let props = |f: &str| {
            Spi::get_three::<String, String, bool>(&format!(
                "SELECT provolatile::text, proparallel::text, proisstrict FROM pg_proc WHERE proname = '{f}'"
            ))
            .map(|(a, b, c)| (a.unwrap(), b.unwrap(), c.unwrap()))
            .unwrap()
        };
        // STRICT means nothing without arguments; pgrx declares it anyway.
        assert_eq!(props("snowflake_nextval"), ("v".into(), "s".into(), true));
        assert_eq!(props("snowflake_decode"), ("s".into(), "s".into(), true));
        assert_eq!(
            Spi::get_one::<String>("SELECT pg_get_function_result('snowflake_decode'::regproc)").unwrap().unwrap(),
            "snowflake_parts"
        );
    }

    #[pg_test]
    fn settings_change_only_when_documented() {
        let contexts = Spi::get_one::<String>(
            "SELECT string_agg(name || '=' || context, ',' ORDER BY name) FROM pg_settings WHERE name LIKE 'snowflake.%'",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            contexts,
            "snowflake.epoch=postmaster,snowflake.machine_bits=postmaster,snowflake.machine_id=postmaster,\
             snowflake.max_clock_wait=sighup,snowflake.sequence_bits=postmaster"
        );
        let (state, message, _) = error_of("SET snowflake.machine_id = 8");
        assert_eq!(state, "55P02", "{message}"); // cant_change_runtime_param
        assert_eq!(Spi::get_one::<String>("SHOW snowflake.machine_id").unwrap().unwrap(), "7");
        assert_eq!(Spi::get_one::<String>("SHOW snowflake.max_clock_wait").unwrap().unwrap(), "1s");
    }

    #[pg_test]
    fn ids_from_one_statement_and_the_next_keep_increasing() {
        let a = Spi::get_one::<i64>("SELECT max(snowflake_nextval()) FROM generate_series(1, 10000)").unwrap().unwrap();
        let b = Spi::get_one::<i64>("SELECT snowflake_nextval()").unwrap().unwrap();
        assert!(b > a);
    }
}
