"""JSON with snowflake ids as strings: `dumps(obj)`, or `JSONEncoder` wherever an encoder class is
taken (`json.dumps(obj, cls=JSONEncoder)`; Django's and DRF's are in `pg_snowflake.django` and
`pg_snowflake.drf`).

Python's json module writes every int, and so every int subclass, as a number: an encoder's
`default()` is never asked about one. So the encoder first copies the object with each SnowflakeId
replaced by its digits as a string (dicts, lists and tuples, at any depth; what `default()`
returns as well). Plain ints stay numbers: make an id a SnowflakeId (the Django field and the
SQLAlchemy type of this package return them) to have it written as a string.
"""
import json

from .ids import SnowflakeId


def json_safe(obj):
    """`obj` with each SnowflakeId in it (in dicts, lists and tuples) replaced by its digits as a
    string; keys too (json writes int keys as strings anyway)."""
    if isinstance(obj, SnowflakeId):
        return str(obj)
    if isinstance(obj, dict):
        return {(str(k) if isinstance(k, SnowflakeId) else k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


class SnowflakeJSONMixin:
    """Put before a json.JSONEncoder subclass (`class E(SnowflakeJSONMixin, DjangoJSONEncoder)`)
    to have it write SnowflakeIds as strings."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # What default() returns (a subclass's, or a `default=` function's) is encoded as well.
        default = self.default
        self.default = lambda o: json_safe(default(o))

    def iterencode(self, o, _one_shot=False):
        # encode() calls iterencode(), as do json.dump() and json.dumps().
        return super().iterencode(json_safe(o), _one_shot)


class JSONEncoder(SnowflakeJSONMixin, json.JSONEncoder):
    """json.JSONEncoder that writes SnowflakeIds as strings."""


def dumps(obj, **kwargs):
    """json.dumps with SnowflakeIds as strings (`cls` defaults to JSONEncoder)."""
    kwargs.setdefault("cls", JSONEncoder)
    return json.dumps(obj, **kwargs)
