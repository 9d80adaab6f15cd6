"""Django REST framework: snowflake ids as strings in the API.

    from pg_snowflake.drf import SnowflakeModelSerializer

    class OrderSerializer(SnowflakeModelSerializer):
        class Meta:
            model = Order
            fields = ["id", "item", "customer"]

A `SnowflakeField` becomes a `SnowflakeIdField` (a string in the JSON, read back from a string or
an int; a primary key read-only, since the server gives it), and a relation to a model whose key is
a `SnowflakeField` is written as that key's string. `JSONRenderer` writes any other SnowflakeId
(in a SerializerMethodField's result, say) as a string too.
"""
from rest_framework import renderers, serializers

from .django import JSONEncoder, SnowflakeField
from .ids import SnowflakeId


class SnowflakeIdField(serializers.Field):
    default_error_messages = {"invalid": "A snowflake id is a string of decimal digits."}

    def to_representation(self, value):
        return str(int(value))

    def to_internal_value(self, data):
        try:
            return SnowflakeId(data)
        except (TypeError, ValueError):
            self.fail("invalid")


class SnowflakeModelSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {**serializers.ModelSerializer.serializer_field_mapping, SnowflakeField: SnowflakeIdField}

    def build_standard_field(self, field_name, model_field):
        field_class, kwargs = super().build_standard_field(field_name, model_field)
        if isinstance(model_field, SnowflakeField):
            if model_field.primary_key:
                kwargs = {"read_only": True}
            else:
                # What the integer field's kwargs add (min and max values) does not apply to a string.
                kwargs = {k: v for k, v in kwargs.items() if k not in ("min_value", "max_value", "validators")}
        return field_class, kwargs

    def build_relational_field(self, field_name, relation_info):
        field_class, kwargs = super().build_relational_field(field_name, relation_info)
        if isinstance(relation_info.related_model._meta.pk, SnowflakeField) and issubclass(field_class, serializers.PrimaryKeyRelatedField):
            kwargs["pk_field"] = SnowflakeIdField()
        return field_class, kwargs


class JSONRenderer(renderers.JSONRenderer):
    """DRF's JSON renderer writing every SnowflakeId as a string."""

    encoder_class = JSONEncoder
