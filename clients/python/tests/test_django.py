"""pg_snowflake.django against a real server (libpq's PG* variables name it): the field's column
and migration, the ids read back for save(), create() and bulk_create(), JSON with ids as strings,
public ids and time ranges through the lookups. On Django 5.2 and 6.x.
"""
import json
import unittest
from datetime import datetime, timedelta, timezone

from tests.django_settings import configure

configure()

import django  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Value  # noqa: E402
from django.forms.models import model_to_dict  # noqa: E402
from django.http import JsonResponse  # noqa: E402

import pg_snowflake  # noqa: E402
from pg_snowflake import SnowflakeId  # noqa: E402
from pg_snowflake.django import FromPublic, JSONEncoder, MintedAt, ToPublic  # noqa: E402
from tests.shop.models import Customer, Order  # noqa: E402

UTC = timezone.utc


def setUpModule():
    # The committed migration is what makemigrations writes for the models, on this Django too.
    call_command("makemigrations", "shop", "--check", "--dry-run", verbosity=0)
    call_command("migrate", verbosity=0)


class Inserts:
    """The INSERT statements Django sends meanwhile."""

    def __enter__(self):
        self.statements = []

        def count(execute, sql, params, many, context):
            if sql.lstrip().upper().startswith("INSERT"):
                self.statements.append(sql)
            return execute(sql, params, many, context)

        self.wrapper = connection.execute_wrapper(count)
        self.wrapper.__enter__()
        return self

    def __exit__(self, *exc):
        self.wrapper.__exit__(*exc)


def stored(model):
    with connection.cursor() as cur:
        cur.execute(f"SELECT id, {'item' if model is Order else 'name'} FROM {model._meta.db_table}")
        return {name: id for id, name in cur.fetchall()}


class Field(unittest.TestCase):
    def test_the_column_is_a_bigint_with_the_servers_default(self):
        with connection.cursor() as cur:
            cur.execute("SELECT data_type, column_default, is_identity FROM information_schema.columns "
                        "WHERE table_name = 'shop_order' AND column_name = 'id'")
            self.assertEqual(cur.fetchone(), ("bigint", "snowflake_nextval()", "NO"))
            cur.execute("SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relname LIKE 'shop_%'")
            self.assertEqual(cur.fetchone()[0], 0, "no sequence")
        # The migration names the field, not its default (the field brings it).
        name, path, args, kwargs = Order._meta.get_field("id").deconstruct()
        self.assertEqual((path, kwargs), ("pg_snowflake.django.SnowflakeField", {"primary_key": True, "serialize": False}))

    def test_create_and_save_read_the_id_back(self):
        with Inserts() as ins:
            order = Order.objects.create(item=f"book {django.__version__}")
        self.assertIs(type(order.id), SnowflakeId)
        self.assertEqual(stored(Order)[order.item], order.id)
        self.assertEqual(len(ins.statements), 1)
        self.assertIn("RETURNING", ins.statements[0])
        # The key is left to the server: out of the INSERT (Django 6), or DEFAULT (5.2).
        head = ins.statements[0].split("RETURNING")[0]
        if '"id"' in head:
            self.assertIn('("id", "item", "customer_id") VALUES (DEFAULT, ', head)
        new = Order(item="saved")
        self.assertIsNone(new.pk, "a new object has no key until the server gives it")
        new.save()
        self.assertIs(type(new.pk), SnowflakeId)
        self.assertGreater(new.pk, order.id)
        self.assertEqual(Order.objects.get(pk=new.pk).item, "saved")

    def test_bulk_create_gives_each_object_its_stored_id(self):
        items = [f"bulk {django.__version__} {n}" for n in range(1000)]
        with Inserts() as ins:
            orders = Order.objects.bulk_create([Order(item=i) for i in items])
        ids = [o.id for o in orders]
        self.assertTrue(all(type(i) is SnowflakeId for i in ids), {type(i) for i in ids})
        rows = stored(Order)
        self.assertEqual([rows[i] for i in items], ids, "each object's id is its row's")
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(ins.statements), 1, "one INSERT for the batch")
        # Ids given by the application are kept.
        given = [SnowflakeId(rows[items[0]] + 10**6), SnowflakeId(rows[items[0]] + 10**6 + 1)]
        Order.objects.bulk_create([Order(id=given[0], item="given 0"), Order(id=str(given[1]), item="given 1")])
        self.assertEqual([stored(Order)["given 0"], stored(Order)["given 1"]], given)

    def test_relations_and_values_are_ids(self):
        c = Customer.objects.create(name="ada")
        o = Order.objects.create(item="for ada", customer=c)
        again = Order.objects.get(pk=o.pk)
        self.assertIs(type(again.customer_id), SnowflakeId)
        self.assertEqual(again.customer_id, c.id)
        row = Order.objects.filter(pk=o.pk).values("id", "customer_id", "customer__id").get()
        self.assertEqual({type(v) for v in row.values()}, {SnowflakeId})
        self.assertEqual(Order.objects.filter(customer_id=str(c.id)).get().pk, o.pk, "an id given as its digits")

    def test_json_has_ids_as_strings(self):
        c = Customer.objects.create(name="grace")
        o = Order.objects.create(item="json", customer=c)
        o = Order.objects.get(pk=o.pk)
        response = JsonResponse(model_to_dict(o), encoder=JSONEncoder)
        body = json.loads(response.content)
        self.assertEqual(body, {"id": str(o.id), "item": "json", "customer": str(c.id)})
        lst = JsonResponse({"orders": list(Order.objects.filter(pk=o.pk).values("id", "item"))}, encoder=JSONEncoder)
        self.assertEqual(json.loads(lst.content)["orders"][0]["id"], str(o.id))
        # Without the encoder Django writes the numbers, which JavaScript reads wrong: what it is for.
        self.assertEqual(json.loads(JsonResponse({"id": o.id}).content)["id"], int(o.id))

    def test_public_ids(self):
        o = Order.objects.create(item="public")
        token = pg_snowflake.to_public(connection, o.id)
        self.assertEqual(Order.objects.get(id__public=token).pk, o.pk)
        self.assertEqual(Order.objects.get(id__public=token.upper()).pk, o.pk)
        for bad in (token[:-1] + "b", " " + token, "x"):
            self.assertFalse(Order.objects.filter(id__public=bad).exists(), bad)
        self.assertEqual(Order.objects.annotate(public_id=ToPublic("id")).get(pk=o.pk).public_id, token)
        self.assertEqual(Order.objects.filter(id=FromPublic(Value(token))).get().pk, o.pk)
        self.assertEqual(pg_snowflake.try_from_public(connection, token), o.pk)

    def test_time_ranges(self):
        layout = pg_snowflake.server_layout(connection)
        first = Order.objects.create(item="range first")
        Order.objects.bulk_create([Order(item=f"range {n}") for n in range(300)])
        last = Order.objects.create(item="range last")
        start, end = layout.timestamp(first.id), layout.timestamp(last.id)
        qs = Order.objects.filter(id__since=start, id__before=end)
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM shop_order WHERE snowflake_timestamp(id) >= %s AND snowflake_timestamp(id) < %s", [start, end])
            self.assertEqual(qs.count(), cur.fetchone()[0])
        self.assertIn('"shop_order"."id" >= snowflake_from_timestamp(', str(qs.query))
        low, high = layout.id_range(start, end)
        self.assertEqual(qs.count(), Order.objects.filter(id__gte=low, id__lt=high).count())
        # Before the epoch: every id is later, none earlier (snowflake_from_timestamp() would refuse).
        long_ago = datetime(2000, 1, 1, tzinfo=UTC)
        self.assertEqual(Order.objects.filter(id__since=long_ago).count(), Order.objects.count())
        self.assertEqual(Order.objects.filter(id__before=long_ago).count(), 0)
        minted = Order.objects.annotate(at=MintedAt("id")).get(pk=last.pk).at
        self.assertEqual(minted, layout.timestamp(last.id))
        self.assertLess(abs(minted - datetime.now(UTC)), timedelta(minutes=5))

    def test_pydantic_from_a_model(self):
        import pydantic

        class OrderOut(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(from_attributes=True)
            id: SnowflakeId
            item: str

        o = Order.objects.get(pk=Order.objects.create(item="pydantic").pk)
        self.assertEqual(json.loads(OrderOut.model_validate(o).model_dump_json()), {"id": str(o.id), "item": "pydantic"})


if __name__ == "__main__":
    unittest.main()
