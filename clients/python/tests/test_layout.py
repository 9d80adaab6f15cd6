"""The layouts' arithmetic, the id type and JSON, without a server (test_server.py compares the same
with the server's functions)."""
import json
import pickle
import unittest
from datetime import datetime, timedelta, timezone

import pg_snowflake
from pg_snowflake import Layout, SnowflakeId, dumps, preset

UTC = timezone.utc
DEFAULT = Layout(1_735_689_600_000, 1, 41, 10, 12, name="server")  # the server's default layout


def t(*args):
    return datetime(*args, tzinfo=UTC)


class Presets(unittest.TestCase):
    def test_published_examples(self):
        # Discord's developer documentation: 175928847299117063 was created 2016-04-30
        # 11:18:25.796 UTC by internal worker 1, process 0, increment 7.
        p = preset("discord").decode("175928847299117063")
        self.assertEqual((p.ts, p.machine_id, p.sequence), (t(2016, 4, 30, 11, 18, 25, 796000), 1 << 5, 7))
        # pgEdge's snowflake.format() of 518514394326388845: 2026-12-01, node 5, count 109.
        p = preset("pgedge").decode(518514394326388845)
        self.assertEqual((p.ts.date().isoformat(), p.machine_id, p.sequence), ("2026-12-01", 5, 109))
        # Twitter: time << 22 | datacenter << 17 | worker << 12 | sequence.
        p = preset("twitter").decode((1000 << 22) | (3 << 17) | (9 << 12) | 42)
        self.assertEqual((p.ts, p.machine_id, p.sequence), (t(2010, 11, 4, 1, 42, 55, 657000), (3 << 5) | 9, 42))
        # Sonyflake: 10 ms ticks << 24 | sequence << 16 | machine.
        p = preset("sonyflake").decode((100 << 24) | (7 << 16) | 65535)
        self.assertEqual((p.ts, p.machine_id, p.sequence), (t(2014, 9, 1, 0, 0, 1), 65535, 7))

    def test_every_preset_round_trips(self):
        for name in pg_snowflake.PRESETS:
            layout = preset(name.upper())
            self.assertEqual(layout.name, name)
            for ts in (layout.epoch, layout.epoch + timedelta(days=3000, milliseconds=123), layout.ends - timedelta(milliseconds=layout.tick_ms)):
                id = layout.compose(ts, layout.max_machine_id, layout.max_sequence)
                p = layout.decode(id)
                self.assertEqual((p.machine_id, p.sequence), (layout.max_machine_id, layout.max_sequence), name)
                self.assertEqual(p.unix_ms, layout.epoch_ms + (pg_snowflake.layout.to_unix_ms(ts) - layout.epoch_ms) // layout.tick_ms * layout.tick_ms)
        # A 64-bit layout's ids past the middle of its field are negative bigints, and decode.
        discord = preset("discord")
        late = discord.compose(t(2100, 1, 1), 1, 1)
        self.assertLess(late, 0)
        self.assertEqual(discord.decode(late).ts, t(2100, 1, 1))
        self.assertEqual(discord.decode(-1).ts, discord.ends - timedelta(milliseconds=1))

    def test_unknown_and_server_are_not_presets(self):
        for name in ("server", "uuid", ""):
            with self.assertRaisesRegex(ValueError, "unknown snowflake layout"):
                preset(name)


class ServerLayoutArithmetic(unittest.TestCase):
    def test_known_id(self):
        # The README's example: machine 7, 2026-11-30 04:27:36.731 UTC.
        self.assertEqual(DEFAULT.compose(t(2026, 11, 30, 4, 27, 36, 731000), 7, 0), 253014076999888896)
        p = DEFAULT.decode(253014076999888896)
        self.assertEqual((p.ts, p.machine_id, p.sequence), (t(2026, 11, 30, 4, 27, 36, 731000), 7, 0))
        self.assertEqual(DEFAULT.ends, t(2094, 9, 7, 15, 47, 35, 552000))
        self.assertEqual(DEFAULT.ids_per_tick, 4096)

    def test_refusals_as_the_server(self):
        with self.assertRaisesRegex(ValueError, r"time 2024-12-31 23:59:59.999\+00 is before snowflake.epoch 2025-01-01 00:00:00\+00"):
            DEFAULT.from_timestamp(t(2024, 12, 31, 23, 59, 59, 999000))
        with self.assertRaisesRegex(ValueError, r"past the end of the 41-bit timestamp field, 2094-09-07 15:47:35.552\+00"):
            DEFAULT.from_timestamp(t(2100, 1, 1))
        with self.assertRaisesRegex(ValueError, r"machine_id 1024 is out of range \(0 to 1023\)"):
            DEFAULT.compose(t(2025, 6, 1), 1024, 0)
        with self.assertRaisesRegex(ValueError, r"sequence 4096 is out of range \(0 to 4095\)"):
            DEFAULT.compose(t(2025, 6, 1), 0, 4096)
        with self.assertRaisesRegex(ValueError, "snowflake id -42 is negative"):
            DEFAULT.decode(-42)
        with self.assertRaisesRegex(ValueError, "no time zone"):
            DEFAULT.from_timestamp(datetime(2025, 6, 1))
        for bad in ("12 ", " 12", "1_000", "+5", "0x10", "", 1.0, True, None, str(2**63)):
            with self.assertRaises((TypeError, ValueError), msg=repr(bad)):
                DEFAULT.decode(bad)

    def test_time_range(self):
        a, b = t(2026, 11, 30), t(2026, 12, 1)
        low, high = DEFAULT.id_range(a, b)
        # The README's bounds of the same day.
        self.assertEqual((low, high), (252946730188800000, 253309118054400000))
        self.assertEqual(DEFAULT.timestamp(low), a)
        self.assertEqual(DEFAULT.timestamp(high - 1), b - timedelta(milliseconds=1))
        # Clamped where from_timestamp refuses: before the epoch, past the field.
        self.assertEqual(DEFAULT.id_range(t(2020, 1, 1), None), (0, None))
        self.assertEqual(DEFAULT.id_range(None, t(2020, 1, 1)), (None, 0))
        self.assertEqual(DEFAULT.id_range(t(2026, 1, 1), t(2200, 1, 1))[1], None)
        with self.assertRaises(ValueError):
            preset("discord").id_range(a, b)

    def test_timestamps_round_down_to_their_tick(self):
        ten = Layout(1_735_689_600_000, 10, 41, 10, 12)
        self.assertEqual(ten.timestamp(ten.compose(t(2025, 6, 1, 0, 0, 0, 19999), 0, 0)), t(2025, 6, 1, 0, 0, 0, 10000))
        # Microseconds below the millisecond are dropped, as the server does.
        self.assertEqual(DEFAULT.compose(t(2025, 6, 1, 0, 0, 0, 999), 0, 0), DEFAULT.compose(t(2025, 6, 1), 0, 0))

    def test_bad_layouts(self):
        for args in ((0, 1, 41, 10, 11), (0, 0, 41, 10, 12), (0, 1, 41, 0, 22), (0, 1, 30, 20, 20)):
            with self.assertRaises(ValueError, msg=args):
                Layout(*args)


class Ids(unittest.TestCase):
    def test_an_int_read_from_digits(self):
        i = SnowflakeId("253014076999888896")
        self.assertEqual(i, 253014076999888896)
        self.assertIsInstance(i, int)
        self.assertEqual(str(i), "253014076999888896")
        self.assertEqual(f"{i}", "253014076999888896")
        self.assertEqual(repr(i), "SnowflakeId(253014076999888896)")
        self.assertEqual(hash(i), hash(253014076999888896))
        self.assertEqual(pickle.loads(pickle.dumps(i)), i)
        self.assertIs(type(pickle.loads(pickle.dumps(i))), SnowflakeId)
        self.assertEqual(SnowflakeId(-(2**63)), -(2**63))
        for bad in (2**63, -(2**63) - 1):
            with self.assertRaisesRegex(ValueError, "outside the range of bigint"):
                SnowflakeId(bad)

    def test_json_writes_ids_as_strings_and_other_ints_as_numbers(self):
        i = SnowflakeId(253014076999888896)
        data = {"id": i, "n": 253014076999888896, "items": [i, (i, 1)], i: "key", "nested": {"x": [{"id": i}]}}
        text = dumps(data)
        back = json.loads(text)
        self.assertEqual(back["id"], "253014076999888896")
        self.assertEqual(back["n"], 253014076999888896)  # a plain int stays a number
        self.assertEqual(back["items"], ["253014076999888896", ["253014076999888896", 1]])
        self.assertEqual(back["253014076999888896"], "key")
        self.assertEqual(back["nested"]["x"][0]["id"], "253014076999888896")
        # json.dumps with the encoder, and json.dump through iterencode.
        self.assertEqual(json.dumps(i, cls=pg_snowflake.JSONEncoder), '"253014076999888896"')
        self.assertEqual(json.dumps(i), "253014076999888896", "the stdlib alone writes a number: what the encoder is for")

    def test_json_through_default(self):
        class Row:
            def __init__(self, id):
                self.id = id

        class Encoder(pg_snowflake.JSONEncoder):
            def default(self, o):
                return {"id": o.id} if isinstance(o, Row) else super().default(o)

        self.assertEqual(json.dumps([Row(SnowflakeId(5))], cls=Encoder), '[{"id": "5"}]')
        self.assertEqual(dumps([Row(SnowflakeId(5))], default=lambda o: [o.id]), '[["5"]]')

    def test_pydantic(self):
        import pydantic

        class Order(pydantic.BaseModel):
            id: SnowflakeId
            parent: SnowflakeId | None = None
            count: int = 0

        o = Order(id="253014076999888896", parent=253014076999888897, count=3)
        self.assertIs(type(o.id), SnowflakeId)
        self.assertEqual(o.model_dump(), {"id": 253014076999888896, "parent": 253014076999888897, "count": 3})
        self.assertEqual(json.loads(o.model_dump_json()), {"id": "253014076999888896", "parent": "253014076999888897", "count": 3})
        self.assertEqual(o.model_dump(mode="json")["id"], "253014076999888896")
        self.assertEqual(Order.model_validate_json('{"id": "253014076999888896"}').id, 253014076999888896)
        self.assertEqual(Order.model_json_schema()["properties"]["id"]["type"], "string")
        for bad in ("12 ", "x", 1.5, str(2**63)):
            with self.assertRaises(pydantic.ValidationError, msg=repr(bad)):
                Order(id=bad)


if __name__ == "__main__":
    unittest.main()
