"""SQLAlchemy (2.0 and 2.1): the column type, its server default, public ids and time ranges.

    from pg_snowflake.sqlalchemy import Snowflake, primary_key

    class Order(Base):
        __tablename__ = "orders"
        id: Mapped[SnowflakeId] = primary_key()   # bigint PRIMARY KEY DEFAULT snowflake_nextval()
        customer_id: Mapped[SnowflakeId] = mapped_column(Snowflake, ForeignKey("customers.id"))

- `primary_key()` is `mapped_column(Snowflake, primary_key=True, server_default=nextval())`:
  `create_all()` makes `id BIGINT DEFAULT snowflake_nextval() NOT NULL` (never a BIGSERIAL), and a
  flush reads the ids back with RETURNING. On SQLAlchemy 2.1, `nextval()` tells SQLAlchemy the
  default increases as rows are inserted (`monotonic=True`), so that a flush of many new objects is
  one INSERT ... RETURNING; 2.0 has no such flag and sends one INSERT per object.
- Values are `SnowflakeId`s (ints) that `pg_snowflake.json` and pydantic write as strings.
- On a `Snowflake` column: `Order.id.to_public()` (`snowflake_to_public`), `Order.id.is_public(token)`
  (the row of a public id; none for a token that is not the server's), `Order.id.since(t)` and
  `Order.id.before(t)` (a primary-key range; a time before the epoch is the epoch, not an error),
  `Order.id.minted_at()` (`snowflake_timestamp`).
"""
from sqlalchemy import BigInteger, DateTime, Text, cast, func, literal_column, select, types
from sqlalchemy.orm import mapped_column

from .ids import SnowflakeId


def nextval():
    """The server default `snowflake_nextval()`, marked monotonic where SQLAlchemy knows the flag
    (2.1): the ids it gives increase as rows are inserted."""
    try:
        return func.snowflake_nextval(monotonic=True)
    except TypeError:  # SQLAlchemy 2.0: "unexpected keyword argument 'monotonic'"
        return func.snowflake_nextval()


def _epoch():
    return select(literal_column("epoch")).select_from(func.snowflake_layout()).scalar_subquery()


def _ts(ts):
    return cast(ts, DateTime(timezone=True))


def _bound(ts):
    # Clamped to the epoch, where snowflake_from_timestamp() would refuse: all ids are later.
    return func.snowflake_from_timestamp(func.greatest(_ts(ts), _epoch()), type_=Snowflake)


class Snowflake(types.TypeDecorator):
    """A snowflake id: a bigint, read as a SnowflakeId."""

    impl = BigInteger
    cache_ok = True

    @property
    def python_type(self):
        return SnowflakeId

    def process_bind_param(self, value, dialect):
        return None if value is None else int(SnowflakeId(value))

    def process_result_value(self, value, dialect):
        return None if value is None else SnowflakeId(value)

    class comparator_factory(BigInteger.Comparator):
        def to_public(self):
            """`snowflake_to_public(id)`: the public id, made with the server's key."""
            return func.snowflake_to_public(self.expr, type_=Text)

        def is_public(self, token):
            """The row whose public id is `token` (`id = snowflake_try_from_public(token)`)."""
            return self.expr == func.snowflake_try_from_public(token, type_=Snowflake)

        def since(self, ts):
            """Ids minted at `ts` or later: `id >= snowflake_from_timestamp(ts)`."""
            return self.expr >= _bound(ts)

        def before(self, ts):
            """Ids minted before `ts`: `id < snowflake_from_timestamp(ts)`."""
            return self.expr < _bound(ts)

        def minted_at(self):
            """`snowflake_timestamp(id)`: when the id was minted."""
            return func.snowflake_timestamp(self.expr, type_=DateTime(timezone=True))


def from_public(token):
    """`snowflake_try_from_public(token)`, an id or NULL, as an expression."""
    return func.snowflake_try_from_public(token, type_=Snowflake)


def primary_key(**kwargs):
    """`mapped_column(Snowflake, primary_key=True, server_default=nextval(), **kwargs)`."""
    kwargs.setdefault("primary_key", True)
    kwargs.setdefault("server_default", nextval())
    return mapped_column(Snowflake, **kwargs)
