"""SnowflakeId: an id as a Python int that knows it is one, so that its JSON form can be a string.

A snowflake id is a 64-bit integer, above 2^53 for all but its first weeks: a JSON number that
large loses its last digits in JavaScript and in every JSON parser that reads numbers as doubles.
SnowflakeId is an `int` (exact, compares and hashes as the int, is sent to PostgreSQL as a
bigint), and the serialisers of this package write it as a string of digits: `pg_snowflake.json`,
`pg_snowflake.django.JSONEncoder`, `pg_snowflake.drf`, and pydantic (a model field annotated
`SnowflakeId` is a string in JSON, an int in Python).
"""
import re

_DIGITS = re.compile(r"-?[0-9]+")
BIGINT_MIN = -(2**63)
BIGINT_MAX = 2**63 - 1


class SnowflakeId(int):
    """An id: an int of PostgreSQL's bigint range, made from an int or its decimal digits
    (`SnowflakeId("253014076999888896")`; no sign but a leading `-`, no spaces, no underscores)."""

    __slots__ = ()

    def __new__(cls, value):
        if type(value) is cls:
            return value
        if isinstance(value, bool):
            raise TypeError(f"a snowflake id is an int or a string of digits, not {value!r}")
        if isinstance(value, int):
            number = int(value)
        elif isinstance(value, str):
            if not _DIGITS.fullmatch(value):
                raise ValueError(f"{value[:40]!r} is not a snowflake id: a string of decimal digits, nothing else")
            number = int(value)
        else:
            raise TypeError(f"a snowflake id is an int or a string of digits, not {type(value).__name__}")
        if not BIGINT_MIN <= number <= BIGINT_MAX:
            raise ValueError(f"{number} is not a snowflake id: outside the range of bigint")
        return super().__new__(cls, number)

    __str__ = int.__repr__

    def __repr__(self):
        return f"SnowflakeId({int.__repr__(self)})"

    # pydantic (v2): validated from an int or a string of digits; an int in Python, a string in JSON.
    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            _validate, serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="json"))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema, handler):
        return {"type": "string", "pattern": r"^-?[0-9]+$",
                "description": "a snowflake id: a 64-bit integer, as a string of decimal digits"}


def _validate(value):
    # pydantic turns a ValueError into a validation error, not a TypeError.
    try:
        return SnowflakeId(value)
    except TypeError as e:
        raise ValueError(str(e)) from None
