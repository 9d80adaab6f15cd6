//! In-database tests, run by `cargo pgrx test` on a cluster that preloads the library with
//! `snowflake.machine_id = 7` and the default layout (see `pg_test` in lib.rs). Configurations the
//! test cluster cannot have (unset machine id, no preload, bad layouts, a standby, many
//! connections) are tested on clusters of their own in `pgrx-tests/`.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// The SQLSTATE, message and hint of the error `query` raises, or ("none", "", "").
    fn error_of(query: &str) -> (String, String, String) {
        if Spi::get_one::<bool>("SELECT to_regprocedure('pg_temp.error_of(text)') IS NULL").unwrap().unwrap() {
            // The scenarios' definition (pgrx-tests/harness/sql/error_of.sql), without its psql
            // commands, in this session's temporary schema.
            let sql: String = include_str!("../../pgrx-tests/harness/sql/error_of.sql")
                .lines()
                .filter(|line| !line.starts_with('\\'))
                .collect::<Vec<_>>()
                .join("\n")
                .replace("CREATE FUNCTION error_of(", "CREATE FUNCTION pg_temp.error_of(");
            Spi::run(&sql).unwrap();
        }
        Spi::get_three_with_args::<String, String, String>(
            "SELECT state, coalesce(message, ''), coalesce(hint, '') FROM pg_temp.error_of($1)",
            &[query.into()],
        )
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
        let out_of_order =
            count("SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM orders) s WHERE id <= prev");
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
                "SELECT provolatile::text, proparallel::text, proisstrict FROM pg_proc WHERE oid = '{f}'::regprocedure"
            ))
            .map(|(a, b, c)| (a.unwrap(), b.unwrap(), c.unwrap()))
            .unwrap()
        };
        // STRICT means nothing without arguments; pgrx declares it anyway.
        assert_eq!(props("snowflake_nextval()"), ("v".into(), "s".into(), true));
        assert_eq!(props("snowflake_decode(bigint)"), ("s".into(), "s".into(), true));
        assert_eq!(
            Spi::get_one::<String>("SELECT pg_get_function_result('snowflake_decode(bigint)'::regprocedure)")
                .unwrap()
                .unwrap(),
            "snowflake_parts"
        );
    }

    #[pg_test]
    fn settings_change_only_when_documented() {
        // (Each setting's context is pinned once: the Settings page, which the readme scenario
        // compares with pg_settings. Here, what the contexts do.)
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

    fn text(query: &str) -> String {
        Spi::get_one::<String>(query).unwrap().unwrap()
    }

    #[pg_test]
    fn extractors_agree_with_decode() {
        let disagreements = count(
            "WITH ids AS (SELECT snowflake_nextval() AS id FROM generate_series(1, 3000))
             SELECT count(*) FROM ids, LATERAL snowflake_decode(id) d
             WHERE snowflake_timestamp(id) <> d.ts OR snowflake_machine_id(id) <> d.machine_id
                OR snowflake_sequence(id) <> d.sequence",
        );
        assert_eq!(disagreements, 0);
        assert_eq!(text("SELECT snowflake_timestamp(4194304)::text"), "2025-01-01 00:00:00.001+00");
        assert_eq!(count("SELECT snowflake_machine_id(7 << 12)::bigint"), 7);
        assert_eq!(count("SELECT snowflake_sequence(4095)::bigint"), 4095);
        for f in ["snowflake_timestamp", "snowflake_machine_id", "snowflake_sequence"] {
            let (state, message, _) = error_of(&format!("SELECT {f}(-1)"));
            assert_eq!((state.as_str(), message.as_str()), ("22023", "snowflake id -1 is negative"), "{f}");
        }
    }

    #[pg_test]
    fn from_timestamp_is_the_smallest_id_of_that_millisecond() {
        assert_eq!(count("SELECT snowflake_from_timestamp('2025-01-01 00:00:00+00')"), 0);
        assert_eq!(count("SELECT snowflake_from_timestamp('2025-01-01 00:00:00.001+00')"), 1 << 22);
        // Microseconds round down, as the clock does when an id is minted.
        assert_eq!(count("SELECT snowflake_from_timestamp('2025-01-01 00:00:00.001999+00')"), 1 << 22);
        assert_eq!(count("SELECT snowflake_from_timestamp('2025-01-01 05:30:00.001+05:30')"), 1 << 22);
        let id = count("SELECT snowflake_nextval()");
        assert!(count("SELECT snowflake_from_timestamp(now() - interval '1 second')") <= id);
        assert!(count("SELECT snowflake_from_timestamp(clock_timestamp() + interval '1 second')") > id);
    }

    #[pg_test]
    fn a_time_range_is_a_primary_key_range_scan() {
        // 200,000 rows spread over 200 seconds of ids, as if minted over time.
        Spi::run(
            "CREATE TABLE events (id bigint PRIMARY KEY, payload text);
             INSERT INTO events
             SELECT snowflake_compose(timestamptz '2026-01-01 00:00:00+00' + g * interval '1 millisecond', 7, g % 4096), 'x'
             FROM generate_series(1, 200000) g;
             ANALYZE events",
        )
        .unwrap();
        let query = "SELECT * FROM events WHERE id >= snowflake_from_timestamp(timestamptz '2026-01-01 00:03:00+00')";
        let plan = Spi::connect(|client| {
            client
                .select(&format!("EXPLAIN (COSTS OFF) {query}"), None, &[])
                .unwrap()
                .map(|row| row.get::<String>(1).unwrap().unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        });
        assert!(plan.contains("Index Cond: (id >= snowflake_from_timestamp("), "{plan}");
        assert!(!plan.contains("Seq Scan"), "{plan}");
        // The bound is exact: the range holds exactly the rows whose time is at or after it.
        assert_eq!(count(&format!("SELECT count(*) FROM ({query}) s")), 20_001);
        assert_eq!(
            count("SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= '2026-01-01 00:03:00+00'"),
            20_001
        );
    }

    #[pg_test]
    fn compose_round_trips_and_checks_each_part() {
        assert_eq!(
            text("SELECT (d.ts, d.machine_id, d.sequence)::text FROM snowflake_decode(snowflake_compose('2026-06-01 12:00:00.123456+00', 1023, 4095)) d"),
            "(\"2026-06-01 12:00:00.123+00\",1023,4095)"
        );
        let cases = [
            ("SELECT snowflake_compose(now(), 1024, 0)", "22023", "machine_id 1024 is out of range (0 to 1023)"),
            ("SELECT snowflake_compose(now(), -1, 0)", "22023", "machine_id -1 is out of range (0 to 1023)"),
            ("SELECT snowflake_compose(now(), 0, 4096)", "22023", "sequence 4096 is out of range (0 to 4095)"),
            (
                "SELECT snowflake_compose('2024-12-31 23:59:59.999+00', 0, 0)",
                "22008",
                "time 2024-12-31 23:59:59.999+00 is before snowflake.epoch 2025-01-01 00:00:00+00",
            ),
            (
                "SELECT snowflake_from_timestamp('2094-09-07 15:47:35.552+00')",
                "22008",
                "time 2094-09-07 15:47:35.552+00 is past the end of the 41-bit timestamp field, 2094-09-07 15:47:35.552+00",
            ),
            ("SELECT snowflake_from_timestamp('-infinity')", "22008", "time -infinity cannot be carried by a snowflake id"),
            ("SELECT snowflake_from_timestamp('infinity')", "22008", "time infinity cannot be carried by a snowflake id"),
            ("SELECT snowflake_compose('infinity', 0, 0)", "22008", "time infinity cannot be carried by a snowflake id"),
        ];
        for (query, want_state, want_message) in cases {
            let (state, message, hint) = error_of(query);
            assert_eq!(state, want_state, "{query}: {message}");
            assert!(message.starts_with(want_message), "{query}: {message}");
            assert!(!hint.is_empty(), "{query}");
        }
        assert_eq!(count("SELECT snowflake_from_timestamp('2094-09-07 15:47:35.551+00')"), ((1_i64 << 41) - 1) << 22);
    }

    #[pg_test]
    fn layout_describes_the_running_layout() {
        assert_eq!(
            text("SELECT (l.*)::text FROM snowflake_layout() l"),
            "(\"2025-01-01 00:00:00+00\",1,41,10,12,1023,4096,4096000,\"2094-09-07 15:47:35.552+00\")"
        );
        assert_eq!(count("SELECT (snowflake_layout()).ids_per_tick"), 4096);
    }

    #[pg_test]
    fn decode_knows_other_systems_layouts() {
        // Discord's documented example: created 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
        assert_eq!(
            text(
                "SELECT (d.ts, d.machine_id, d.sequence)::text FROM snowflake_decode(175928847299117063, 'discord') d"
            ),
            "(\"2016-04-30 11:18:25.796+00\",32,7)"
        );
        assert_eq!(count("SELECT count(*) FROM snowflake_decode(123456789, 'SERVER') s, snowflake_decode(123456789) d WHERE s = d"), 1);
        assert_eq!(text("SELECT (snowflake_decode(1 << 24, 'sonyflake')).ts::text"), "2014-09-01 00:00:00.01+00");
        let (state, message, hint) = error_of("SELECT snowflake_decode(1, 'uuid')");
        assert_eq!(state, "22023");
        // The message lists the presets as snowflake_presets() has them, then server.
        let known = text("SELECT string_agg(name, ', ') FROM snowflake_presets()");
        assert!(known.starts_with("twitter, discord, "), "{known}");
        assert_eq!(message, format!("unknown snowflake layout \"uuid\"; known layouts: {known}, server"));
        assert!(hint.contains("'server'"));
        assert_eq!(error_of("SELECT snowflake_decode(-1, 'twitter')").1, "snowflake id -1 is negative");
    }

    #[pg_test]
    fn presets_are_the_cores_and_their_examples_decode() {
        let presets = pg_snowflake_core::presets::PRESETS;
        assert_eq!(count("SELECT count(*) FROM snowflake_presets()"), presets.len() as i64);
        for p in presets {
            let row = text(&format!(
                "SELECT (epoch, time_unit_ms, timestamp_bits, machine_bits, sequence_bits)::text FROM snowflake_presets() WHERE name = '{}'",
                p.name
            ));
            let epoch = pg_snowflake_core::calendar::format_utc(p.epoch_ms);
            let want =
                format!("(\"{epoch}\",{},{},{},{})", p.tick_ms, p.timestamp_bits, p.machine_bits, p.sequence_bits);
            assert_eq!(row, want, "{}", p.name);
            if let Some(e) = p.example {
                let decoded = text(&format!(
                    "SELECT (d.ts, d.machine_id, d.sequence)::text FROM snowflake_presets() p, snowflake_decode(p.example, p.name) d WHERE p.name = '{}'",
                    p.name
                ));
                assert!(decoded.starts_with(&format!("(\"{}", e.utc)), "{}: {decoded}", p.name);
                assert!(decoded.ends_with(&format!(",{},{})", e.machine_id, e.sequence)), "{}: {decoded}", p.name);
            }
        }
    }

    #[pg_test]
    fn helpers_are_stable_and_parallel_safe() {
        let wrong = count(
            "SELECT count(*) FROM pg_proc WHERE proname IN ('snowflake_decode', 'snowflake_timestamp',
                'snowflake_machine_id', 'snowflake_sequence', 'snowflake_from_timestamp', 'snowflake_compose',
                'snowflake_layout') AND (provolatile <> CASE WHEN oid = ANY(ARRAY[
                    'snowflake_decode(bigint, timestamptz, int, int, int)',
                    'snowflake_timestamp(bigint, timestamptz, int, int, int)',
                    'snowflake_machine_id(bigint, timestamptz, int, int, int)',
                    'snowflake_sequence(bigint, timestamptz, int, int, int)',
                    'snowflake_from_timestamp(timestamptz, timestamptz, int, int, int)',
                    'snowflake_timestamp(bigint, text)', 'snowflake_machine_id(bigint, text)',
                    'snowflake_sequence(bigint, text)']::regprocedure[]) THEN 'i' ELSE 's' END
                    OR proparallel <> 's')",
        );
        assert_eq!(wrong, 0, "the forms with a fixed layout are IMMUTABLE, the others STABLE");
        // (Which functions there are, and each one's volatility, is the SQL snapshot's to pin:
        // pgrx-tests/checks/sql-snapshot/. The preset form of snowflake_decode() also serves
        // 'server', so it stays STABLE, as checked above.)
    }

    #[pg_test]
    fn stats_describe_the_generator() {
        Spi::run("SELECT snowflake_stats_reset()").unwrap();
        count("SELECT count(snowflake_nextval()) FROM generate_series(1, 10000)");
        // Other tests run at the same time on this cluster: at least ours were counted.
        assert!(count("SELECT ids_issued FROM snowflake_stats()") >= 10_000);
        // Ids were just issued, so the lease is current: the mark is ahead of the clock, by at
        // most a lease (1 s) and a little.
        assert!((-500..=1_100).contains(&count("SELECT mark_ahead_ms FROM snowflake_stats()")));
        assert_eq!(
            text("SELECT machine_id || ' ' || layout FROM snowflake_stats()"),
            "7 41|10|12 bits (timestamp|machine|sequence) from 2025-01-01 00:00:00+00"
        );
        let checks = text(
            "SELECT (last_issued BETWEEN now() - interval '1 minute' AND clock_timestamp())::text
                 || (high_water_mark > last_issued)::text
                 || (high_water_mark <= clock_timestamp() + interval '1 second')::text
                 || (stats_reset <= clock_timestamp())::text
             FROM snowflake_stats()",
        );
        assert_eq!(checks, "truetruetruetrue");
    }

    #[pg_test]
    fn stats_reset_is_for_superusers() {
        Spi::run("CREATE ROLE snowflake_tester; SET ROLE snowflake_tester").unwrap();
        let (state, _, _) = error_of("SELECT snowflake_stats_reset()");
        assert_eq!(state, "42501");
        assert_eq!(error_of("SELECT ids_issued FROM snowflake_stats()").0, "none", "reading is for everyone");
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn a_clock_stepped_back_keeps_ids_increasing_and_is_counted() {
        let increasing = |offset: &str, n: i32| {
            Spi::run(&format!("SET snowflake.fault_clock_offset = '{offset}'")).unwrap();
            count(&format!(
                "WITH ids AS (SELECT n, snowflake_nextval() AS id FROM generate_series(0, {n}) n)
                 SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) prev FROM ids) s WHERE id <= prev"
            ))
        };
        let before = count("SELECT max(snowflake_nextval()) FROM generate_series(1, 10)");
        let rollbacks = count("SELECT clock_rollbacks FROM snowflake_stats()");
        assert_eq!(increasing("-1ms", 20_000), 0);
        // A second back: a few ids are issued on the last timestamp at once, and the step is seen.
        assert_eq!(increasing("-1s", 10), 0);
        Spi::run("RESET snowflake.fault_clock_offset").unwrap();
        assert!(count("SELECT snowflake_nextval()") > before);
        assert!(count("SELECT clock_rollbacks FROM snowflake_stats()") > rollbacks);
        assert!(count("SELECT largest_rollback_ms FROM snowflake_stats()") >= 900);
    }

    /// Round trips, rejected tokens and rotation need a key file and a reload: the scenario
    /// key_file (pgrx-tests/scenarios/key_file.sh) tests them. Here: no key, and no way to give
    /// one but the key file.
    #[pg_test]
    fn public_ids_need_a_key_file_and_no_setting_takes_a_key() {
        for f in ["snowflake_to_public(1)", "snowflake_from_public('x')", "snowflake_try_from_public('x')"] {
            let (state, message, hint) = error_of(&format!("SELECT {f}"));
            assert_eq!(
                (state.as_str(), message.as_str()),
                ("55000", "snowflake.public_key_file is not set: public ids need a key"),
                "{f}"
            );
            assert!(hint.contains("openssl rand -hex 32"), "{hint}");
        }
        let key = "000102030405060708090a0b0c0d0e0f";
        for setting in ["snowflake.public_key", "snowflake.public_key_previous", "snowflake.public_key_file"] {
            let (state, message, _) = error_of(&format!("SET {setting} = '{key}'"));
            assert_eq!(state, "55P02", "{setting}: {message}"); // cant_change_runtime_param
            assert!(!message.contains(key));
            let (state, message, _) = error_of(&format!("ALTER ROLE CURRENT_USER SET {setting} = '{key}'"));
            assert_ne!(state, "none", "{setting}");
            assert!(!message.contains(key), "{message}");
        }
        assert_eq!(count("SELECT count(*) FROM pg_settings WHERE name IN ('snowflake.public_key', 'snowflake.public_key_previous')"), 0);
    }

    #[pg_test]
    fn composite_results_work_whatever_the_search_path() {
        let schema = text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_snowflake'");
        Spi::run("SET search_path = pg_catalog").unwrap();
        assert_eq!(count(&format!("SELECT ({schema}.snowflake_decode(4194304)).machine_id::bigint")), 0);
        assert_eq!(count(&format!("SELECT ({schema}.snowflake_layout()).ids_per_tick")), 4096);
        assert!(count(&format!("SELECT ({schema}.snowflake_stats()).ids_issued")) >= 0);
        Spi::run("RESET search_path").unwrap();
    }
}
