-- The demo's SQL (pgrx-tests/demo.sh), also run by the package install test: a table keyed by
-- DEFAULT snowflake_nextval(), rows inserted, their ids decoded.
\ir create_extension.sql
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
INSERT INTO orders(item) VALUES ('book') RETURNING id, (snowflake_decode(id)).*;
INSERT INTO orders(item) SELECT 'item ' || g FROM generate_series(1, 5) g;
SELECT o.id, o.item, d.ts, d.machine_id, d.sequence
FROM orders o, LATERAL snowflake_decode(o.id) d
ORDER BY o.id DESC;
