-- Ids in JSON: snowflake_to_jsonb() carries the id as a decimal string, which round-trips exactly;
-- as a JSON number it would be read as a double (JavaScript, and many parsers) and ids above 2^53
-- lose their last digits. The README's recipes (id::text in json_build_object) are run here too.
\ir ../../harness/sql/error_of.sql
\ir ../../harness/sql/create_extension.sql
\ir ../../harness/sql/regress_session.sql
SELECT snowflake_to_jsonb(snowflake_compose('2025-06-01 12:34:56.789+00', 7, 0)) AS json;
SELECT jsonb_typeof(j->'id') AS id, jsonb_typeof(j->'ts') AS ts, jsonb_typeof(j->'machine_id') AS machine_id, jsonb_typeof(j->'sequence') AS sequence
FROM snowflake_to_jsonb(snowflake_nextval()) j;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
INSERT INTO orders(item) SELECT 'book' FROM generate_series(1, 10000);
-- Every id is above 2^53; its string comes back exactly; its fields match the decoder's.
SELECT count(*) AS ids,
       count(*) FILTER (WHERE id > 2^53) AS above_2_53,
       count(*) FILTER (WHERE (snowflake_to_jsonb(id)->>'id')::bigint = id) AS string_round_trips,
       count(*) FILTER (WHERE (snowflake_to_jsonb(id)->>'ts')::timestamptz = snowflake_timestamp(id)
                          AND (snowflake_to_jsonb(id)->>'machine_id')::int = snowflake_machine_id(id)
                          AND (snowflake_to_jsonb(id)->>'sequence')::int = snowflake_sequence(id)) AS fields_match
FROM orders;
-- The number form, read as a double as JSON.parse does: an id comes back wrong unless it is a
-- multiple of the spacing of doubles at its size (2^(k-52) between 2^k and 2^(k+1)): most do.
SELECT number_form_wrong > ids / 2 AS most_number_forms_wrong, number_form_wrong = not_a_multiple AS as_predicted, id_text_round_trips = ids AS id_text_round_trips
FROM (SELECT count(*) AS ids,
             count(*) FILTER (WHERE ((jsonb_build_object('id', id)->>'id')::double precision)::bigint <> id) AS number_form_wrong,
             count(*) FILTER (WHERE id % (2::numeric ^ (floor(log(2, id::numeric)) - 52)) <> 0) AS not_a_multiple,
             count(*) FILTER (WHERE (json_build_object('id', id::text)->>'id')::bigint = id) AS id_text_round_trips
      FROM orders) c;
-- One id that a double cannot hold: 2^53 + 1.
SELECT 9007199254740993::bigint AS id, (9007199254740993::bigint)::double precision::bigint AS through_a_double;
-- The README's recipe: the id as text next to the other columns.
SELECT json_build_object('id', id::text, 'item', item)::text = format('{"id" : "%s", "item" : "book"}', id) AS recipe
FROM orders ORDER BY id LIMIT 1;
-- NULL in, NULL out; a negative id is an error.
SELECT snowflake_to_jsonb(NULL) IS NULL AS strict;
SELECT * FROM error_of($$SELECT snowflake_to_jsonb(-1)$$);
SELECT p.provolatile, p.proparallel, p.proisstrict, pg_get_function_result(p.oid) AS returns, obj_description(p.oid, 'pg_proc') IS NOT NULL AS described
FROM pg_proc p WHERE p.proname = 'snowflake_to_jsonb';
