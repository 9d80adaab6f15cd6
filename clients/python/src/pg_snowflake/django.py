"""Django (5.2 and 6.x): the model field, its lookups, and JSON with ids as strings.

    from pg_snowflake.django import SnowflakeField

    class Order(models.Model):
        id = SnowflakeField(primary_key=True)   # bigint, DEFAULT snowflake_nextval()

- The column is a `bigint` whose default is the server's `snowflake_nextval()` (`db_default`):
  Django leaves the key out of the INSERT and reads it back with RETURNING, for `save()`,
  `create()` and `bulk_create()` alike, on Django 5.2 too (whose `bulk_create()` leaves a plain
  `db_default` key unset: Django ticket 36260).
- Its values are `SnowflakeId`s (ints): `JSONEncoder` (for `JsonResponse(..., encoder=JSONEncoder)`)
  and `pg_snowflake.drf` write them as strings.
- Public ids, computed by the server: `Order.objects.get(id__public=token)` (no row for a token that
  is not one of the server's), `.annotate(public_id=ToPublic("id"))`.
- Time ranges on the key: `Order.objects.filter(id__since=start, id__before=end)`, a primary-key
  range; a time before the epoch is the epoch (every id), not an error.
A migration writes the field as `pg_snowflake.django.SnowflakeField(...)`, without its default.
"""
from django.core import exceptions
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models.expressions import DatabaseDefault

from .ids import SnowflakeId
from .json import SnowflakeJSONMixin


class NextVal(models.Func):
    """`snowflake_nextval()`."""

    function = "snowflake_nextval"
    arity = 0
    output_field = models.BigIntegerField()


class SnowflakeField(models.BigIntegerField):
    description = "A snowflake id: bigint, DEFAULT snowflake_nextval()"

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("db_default", NextVal())
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        if kwargs.get("db_default") == NextVal():
            del kwargs["db_default"]
        return name, path, args, kwargs

    def get_default(self):
        # A new object's key is None (not Django's DatabaseDefault marker) until the server gives
        # it, so that bulk_create() counts the object as one without a key and reads its key back
        # (Django 5.x; 6.0 does so for the marker too). pre_save() sends DEFAULT for it.
        if self.primary_key and not self.has_default() and self.has_db_default():
            return None
        return super().get_default()

    def pre_save(self, model_instance, add):
        value = super().pre_save(model_instance, add)
        if add and value is None and self.has_db_default():
            return DatabaseDefault(self._db_default_expression, output_field=self)
        return value

    def from_db_value(self, value, expression, connection):
        return None if value is None else SnowflakeId(value)

    def to_python(self, value):
        if value is None or isinstance(value, (SnowflakeId, models.Expression)):
            return value
        try:
            return SnowflakeId(value)
        except (TypeError, ValueError):
            raise exceptions.ValidationError(f"{str(value)[:40]!r} is not a snowflake id", code="invalid") from None

    def get_prep_value(self, value):
        if isinstance(value, str):
            value = SnowflakeId(value)
        return super().get_prep_value(value)

    def value_to_string(self, obj):
        value = self.value_from_object(obj)
        return "" if value is None else str(int(value))


@SnowflakeField.register_lookup
class Public(models.Lookup):
    """`id__public=token`: the row whose public id is `token` (`snowflake_try_from_public`); none
    for a token that is not one of the server's."""

    lookup_name = "public"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = snowflake_try_from_public(({rhs})::text)", (*lhs_params, *rhs_params)


class _TimeBound(models.Lookup):
    prepare_rhs = False
    operator = None

    def get_db_prep_lookup(self, value, connection):
        # As a DateTimeField would: an aware datetime; a naive one read in the current time zone.
        return "%s", [models.DateTimeField().get_db_prep_value(value, connection, prepared=False)]

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        # Clamped to the epoch, where snowflake_from_timestamp() would refuse: all ids are later.
        bound = f"snowflake_from_timestamp(greatest(({rhs})::timestamptz, (SELECT epoch FROM snowflake_layout())))"
        return f"{lhs} {self.operator} {bound}", (*lhs_params, *rhs_params)


@SnowflakeField.register_lookup
class Since(_TimeBound):
    """`id__since=t`: ids minted at `t` or later (`id >= snowflake_from_timestamp(t)`)."""

    lookup_name = "since"
    operator = ">="


@SnowflakeField.register_lookup
class Before(_TimeBound):
    """`id__before=t`: ids minted before `t` (`id < snowflake_from_timestamp(t)`)."""

    lookup_name = "before"
    operator = "<"


class ToPublic(models.Func):
    """`snowflake_to_public(id)`: the public id, made with the server's key."""

    function = "snowflake_to_public"
    arity = 1
    output_field = models.TextField()


class FromPublic(models.Func):
    """`snowflake_try_from_public(token)`: the id of a public id, NULL for one that is not the
    server's. `FromPublic(Value(token))` for a token given by a client."""

    function = "snowflake_try_from_public"
    arity = 1
    output_field = SnowflakeField()


class MintedAt(models.Func):
    """`snowflake_timestamp(id)`: when the id was minted."""

    function = "snowflake_timestamp"
    arity = 1
    output_field = models.DateTimeField()


class JSONEncoder(SnowflakeJSONMixin, DjangoJSONEncoder):
    """Django's JSON encoder (dates, decimals, UUIDs, ...) writing SnowflakeIds as strings:
    `JsonResponse(data, encoder=JSONEncoder)`."""
