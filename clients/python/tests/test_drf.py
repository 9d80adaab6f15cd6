"""pg_snowflake.drf against a real server: a ModelSerializer writes keys and relations as strings,
reads them back from strings, and the renderer writes any other SnowflakeId as a string."""
import json
import unittest

from tests.django_settings import configure

configure()

from django.core.management import call_command  # noqa: E402
from rest_framework import serializers  # noqa: E402
from rest_framework.renderers import JSONRenderer as PlainRenderer  # noqa: E402

from pg_snowflake.drf import JSONRenderer, SnowflakeModelSerializer  # noqa: E402
from tests.shop.models import Customer, Order  # noqa: E402


class OrderSerializer(SnowflakeModelSerializer):
    class Meta:
        model = Order
        fields = ["id", "item", "customer"]


class PlainSerializer(serializers.ModelSerializer):
    class Meta:
        model = Order
        fields = ["id", "item", "customer"]


def setUpModule():
    call_command("migrate", verbosity=0)


class Serializers(unittest.TestCase):
    def test_keys_and_relations_are_strings(self):
        c = Customer.objects.create(name="linus")
        o = Order.objects.get(pk=Order.objects.create(item="drf", customer=c).pk)
        data = OrderSerializer(o).data
        self.assertEqual(dict(data), {"id": str(o.id), "item": "drf", "customer": str(c.id)})
        self.assertEqual(json.loads(JSONRenderer().render(data)), dict(data))
        # DRF's own ModelSerializer writes numbers: what this is for.
        self.assertEqual(json.loads(PlainRenderer().render(PlainSerializer(o).data))["id"], int(o.id))

    def test_reading_back(self):
        c = Customer.objects.create(name="ken")
        s = OrderSerializer(data={"id": "123", "item": "posted", "customer": str(c.id)})
        self.assertTrue(s.is_valid(), s.errors)
        o = s.save()
        self.assertNotEqual(o.id, 123, "the key is the server's: read-only")
        self.assertEqual(Order.objects.get(pk=o.pk).customer_id, c.id)
        bad = OrderSerializer(data={"item": "x", "customer": "not an id"})
        self.assertFalse(bad.is_valid())
        self.assertIn("customer", bad.errors)
        missing = OrderSerializer(data={"item": "x", "customer": str(c.id + 1)})
        self.assertFalse(missing.is_valid())

    def test_the_renderer_writes_other_ids_as_strings(self):
        c = Customer.objects.create(name="dennis")
        body = JSONRenderer().render({"customer": c.id, "ids": [c.id], "count": 1})
        self.assertEqual(json.loads(body), {"customer": str(c.id), "ids": [str(c.id)], "count": 1})


if __name__ == "__main__":
    unittest.main()
