"""The package against a real server (libpq's PG* variables name it; the extension installed as the
manual says, a key file set): its layouts decode and compose as the server's functions do, every
preset included (a preset copied wrong, or left stale after the core changed it, fails here), and
the public ids are the server's.
"""
import os
import random
import re
import unittest
from datetime import datetime, timedelta, timezone

import psycopg

import pg_snowflake
from pg_snowflake import SnowflakeId, preset, server_layout

UTC = timezone.utc
RNG = random.Random(62)


def connect():
    return psycopg.connect(autocommit=True)


def server_decode(conn, ids, layout):
    """[(unix_ms, machine_id, sequence) or the server's error] of each id under `layout` ('server'
    or a preset), each asked of the server on its own."""
    out = []
    for id in ids:
        try:
            row = conn.execute("SELECT (extract(epoch FROM ts) * 1000)::bigint, machine_id, sequence "
                               "FROM snowflake_decode(%s::bigint, %s)", [id, layout]).fetchone()
            out.append(tuple(row))
        except psycopg.Error as e:
            out.append(("error", e.diag.message_primary))
    return out


def client_decode(layout, ids):
    out = []
    for id in ids:
        try:
            p = layout.decode(id)
            out.append((p.unix_ms, p.machine_id, p.sequence))
        except ValueError as e:
            out.append(("error", str(e)))
    return out


def sample_ids(layout, n):
    """Ids over the whole range of bigint: the edges, each field's edges, and random ones."""
    ids = [0, 1, 2**63 - 1, -1, -(2**63), (1 << (layout.machine_bits + layout.sequence_bits)) - 1,
           1 << (layout.machine_bits + layout.sequence_bits)]
    ids += [RNG.randrange(-(2**63), 2**63) for _ in range(n // 2)]
    ids += [RNG.randrange(0, 2**(RNG.randrange(20, 63))) for _ in range(n // 2)]
    return ids


class Presets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.conn = connect()

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()

    def test_the_server_knows_the_same_presets(self):
        # The server lists its layouts in the error of an unknown one.
        with self.assertRaises(psycopg.Error) as e:
            self.conn.execute("SELECT snowflake_decode(1, 'no such layout')")
        known = re.search(r"known layouts: (.*)$", e.exception.diag.message_primary).group(1).split(", ")
        self.assertEqual(known, list(pg_snowflake.PRESETS) + ["server"])

    def test_every_preset_decodes_as_the_server_does(self):
        for name in pg_snowflake.PRESETS:
            layout = preset(name)
            ids = sample_ids(layout, 400)
            got, want = client_decode(layout, ids), server_decode(self.conn, ids, name)
            for id, g, w in zip(ids, got, want):
                if w[0] == "error":
                    self.assertEqual(g[0], "error", f"{name}: the server refuses {id} ({w[1]}); the client gave {g}")
                else:
                    self.assertEqual(g, w, f"{name}: id {id}")


class ServerLayout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.conn = connect()
        cls.layout = server_layout(cls.conn)

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()

    def test_the_layout_is_snowflake_layout(self):
        row = self.conn.execute("SELECT epoch, time_unit_ms, timestamp_bits, machine_bits, sequence_bits, "
                                "max_machine_id, ids_per_tick, timestamp_field_ends FROM snowflake_layout()").fetchone()
        l = self.layout
        self.assertEqual(row, (l.epoch, l.tick_ms, l.timestamp_bits, l.machine_bits, l.sequence_bits,
                               l.max_machine_id, l.ids_per_tick, l.ends))

    def test_ids_of_the_server_decode_as_the_server_does(self):
        ids = [r[0] for r in self.conn.execute("SELECT snowflake_nextval() FROM generate_series(1, 2000)")]
        ids += sample_ids(self.layout, 400)
        got, want = client_decode(self.layout, ids), server_decode(self.conn, ids, "server")
        for id, g, w in zip(ids, got, want):
            if w[0] == "error":
                self.assertEqual(g[0], "error", f"the server refuses {id} ({w[1]}); the client gave {g}")
            else:
                self.assertEqual(g, w, f"id {id}")
        # snowflake_decode(id), the one-argument form, too.
        id = ids[0]
        row = self.conn.execute("SELECT (snowflake_decode(%s)).*", [id]).fetchone()
        p = self.layout.decode(id)
        self.assertEqual(row, (p.ts, p.machine_id, p.sequence))

    def test_compose_and_bounds_as_the_server(self):
        l = self.layout
        times = [l.epoch, l.epoch - timedelta(milliseconds=1), l.ends - timedelta(milliseconds=1), l.ends,
                 datetime(2100, 1, 1, tzinfo=UTC), datetime(1999, 1, 1, tzinfo=UTC)]
        times += [l.epoch + timedelta(microseconds=RNG.randrange(0, 10**15)) for _ in range(300)]
        for ts in times:
            m, s = RNG.randrange(0, l.max_machine_id + 1), RNG.randrange(0, l.max_sequence + 1)
            for sql, client in (("SELECT snowflake_compose(%s, %s, %s)", lambda: l.compose(ts, m, s)),
                                ("SELECT snowflake_from_timestamp(%s) + 0 * %s + 0 * %s", lambda: l.from_timestamp(ts))):
                try:
                    want = self.conn.execute(sql, [ts, m, s]).fetchone()[0]
                except psycopg.Error as e:
                    with self.assertRaises(ValueError, msg=f"{sql} refuses {ts}: {e.diag.message_primary}") as c:
                        client()
                    self.assertEqual(str(c.exception), e.diag.message_primary, "the server's words")
                    continue
                self.assertEqual(client(), want, f"{sql} of {ts}, {m}, {s}")
        # Fields out of range: the server's words.
        for m, s in ((l.max_machine_id + 1, 0), (0, l.max_sequence + 1)):
            with self.assertRaises(psycopg.Error) as e:
                self.conn.execute("SELECT snowflake_compose(now(), %s, %s)", [m, s])
            with self.assertRaises(ValueError) as c:
                l.compose(datetime.now(UTC), m, s)
            self.assertEqual(str(c.exception), e.exception.diag.message_primary)

    def test_id_range_is_the_sql_range(self):
        n = self.conn.execute("SELECT count(*) FROM (SELECT snowflake_nextval() FROM generate_series(1, 3000)) s").fetchone()[0]
        self.assertEqual(n, 3000)
        self.conn.execute("CREATE TEMP TABLE ranged AS SELECT snowflake_nextval() AS id FROM generate_series(1, 5000)")
        first, last = self.conn.execute("SELECT min(id), max(id) FROM ranged").fetchone()
        start, end = self.layout.timestamp(first), self.layout.timestamp(last)
        low, high = self.layout.id_range(start, end)
        want = self.conn.execute("SELECT count(*) FROM ranged WHERE snowflake_timestamp(id) >= %s AND snowflake_timestamp(id) < %s",
                                 [start, end]).fetchone()[0]
        got = self.conn.execute("SELECT count(*) FROM ranged WHERE id >= %s AND id < %s", [low, high]).fetchone()[0]
        self.assertEqual(got, want)
        low, high = self.layout.id_range(datetime(2000, 1, 1, tzinfo=UTC), None)
        self.assertEqual(self.conn.execute("SELECT count(*) FROM ranged WHERE id >= %s", [low]).fetchone()[0], 5000)


class PublicIds(unittest.TestCase):
    """The server's public ids: its key never leaves it."""

    @classmethod
    def setUpClass(cls):
        cls.conn = connect()

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()

    def test_the_servers_tokens(self):
        for id in [SnowflakeId(r[0]) for r in self.conn.execute("SELECT snowflake_nextval() FROM generate_series(1, 50)")]:
            token = pg_snowflake.to_public(self.conn, id)
            self.assertEqual(token, self.conn.execute("SELECT snowflake_to_public(%s)", [id]).fetchone()[0])
            self.assertEqual(len(token), 26)
            back = pg_snowflake.from_public(self.conn, token)
            self.assertEqual(back, id)
            self.assertIs(type(back), SnowflakeId)
            self.assertEqual(pg_snowflake.try_from_public(self.conn, token.upper()), id)
        # Not one of the server's: None, or the server's error.
        for bad in (token[:25], " " + token, token[:-1] + "b", "a" * 26):
            self.assertIsNone(pg_snowflake.try_from_public(self.conn, bad), bad)
            with self.assertRaises(psycopg.errors.InvalidTextRepresentation):
                pg_snowflake.from_public(self.conn, bad)

    def test_other_connections(self):
        # A cursor, and psycopg's own connection; the SQLAlchemy and Django ones in their tests.
        with self.conn.cursor() as cur:
            self.assertEqual(server_layout(cur), server_layout(self.conn))
            self.assertEqual(pg_snowflake.try_from_public(cur, "a" * 26), None)


if __name__ == "__main__":
    unittest.main()
