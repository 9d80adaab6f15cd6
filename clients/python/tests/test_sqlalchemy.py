"""pg_snowflake.sqlalchemy against a real server (libpq's PG* variables name it): the column
create_all() makes, the ids a flush reads back (one INSERT for a batch on SQLAlchemy 2.1, one per
object on 2.0), JSON as strings, public ids and time ranges. On SQLAlchemy 2.0 and 2.1.
"""
import json
import unittest
from datetime import datetime, timezone
from typing import Optional

import sqlalchemy
from sqlalchemy import ForeignKey, create_engine, event, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.schema import CreateTable

import pg_snowflake
from pg_snowflake import SnowflakeId
from pg_snowflake.sqlalchemy import Snowflake, from_public, primary_key

UTC = timezone.utc
MONOTONIC = tuple(int(x) for x in sqlalchemy.__version__.split(".")[:2]) >= (2, 1)


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "sa_customers"
    id: Mapped[SnowflakeId] = primary_key()
    name: Mapped[str]


class Order(Base):
    __tablename__ = "sa_orders"
    id: Mapped[SnowflakeId] = primary_key()
    item: Mapped[str]
    customer_id: Mapped[Optional[SnowflakeId]] = mapped_column(Snowflake, ForeignKey("sa_customers.id"))


engine = create_engine("postgresql+psycopg://")


def setUpModule():
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)


class Inserts:
    def __enter__(self):
        self.statements = []
        event.listen(engine, "before_cursor_execute", self.count)
        return self

    def count(self, conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("INSERT"):
            self.statements.append(statement)

    def __exit__(self, *exc):
        event.remove(engine, "before_cursor_execute", self.count)


class Type(unittest.TestCase):
    def test_the_column_has_the_servers_default(self):
        ddl = str(CreateTable(Order.__table__).compile(engine))
        self.assertIn("id BIGINT DEFAULT snowflake_nextval() NOT NULL", ddl)
        self.assertNotIn("SERIAL", ddl.upper())
        with engine.connect() as c:
            row = c.execute(text("SELECT data_type, column_default FROM information_schema.columns "
                                 "WHERE table_name = 'sa_orders' AND column_name = 'id'")).one()
        self.assertEqual(tuple(row), ("bigint", "snowflake_nextval()"))

    def test_a_flush_reads_every_id_back(self):
        with Session(engine) as s, Inserts() as ins:
            book = Order(item="sa book")
            s.add(book)
            s.flush()
            items = [f"sa item {n}" for n in range(1000)]
            orders = [Order(item=i) for i in items]
            s.add_all(orders)
            s.flush()
            book_id, ids = book.id, [o.id for o in orders]
            s.commit()
        self.assertIs(type(book_id), SnowflakeId)
        self.assertTrue(all(type(i) is SnowflakeId for i in ids))
        with engine.connect() as c:
            rows = dict((item, id) for id, item in c.execute(select(Order.id, Order.item)))
        self.assertEqual([rows[i] for i in items], ids, "each object's id is its row's")
        self.assertEqual(rows["sa book"], book_id)
        self.assertIs(type(next(iter(rows.values()))), SnowflakeId)
        # SQLAlchemy 2.1 knows the default increases (monotonic=True): one INSERT for the batch;
        # 2.0 sends one per object.
        self.assertEqual(len(ins.statements), 2 if MONOTONIC else 1001)

    def test_json_and_pydantic(self):
        import pydantic

        class OrderOut(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(from_attributes=True)
            id: SnowflakeId
            item: str
            customer_id: Optional[SnowflakeId]

        with Session(engine) as s:
            c = Customer(name="barbara")
            s.add(c)
            s.flush()
            o = Order(item="sa json", customer_id=c.id)
            s.add(o)
            s.commit()
            o = s.get(Order, o.id)
            want = {"id": str(o.id), "item": "sa json", "customer_id": str(c.id)}
            self.assertEqual(json.loads(pg_snowflake.dumps({k: getattr(o, k) for k in want})), want)
            self.assertEqual(json.loads(OrderOut.model_validate(o).model_dump_json()), want)

    def test_public_ids(self):
        with Session(engine) as s:
            o = Order(item="sa public")
            s.add(o)
            s.commit()
            token = s.scalar(select(Order.id.to_public()).where(Order.id == o.id))
            self.assertEqual(token, pg_snowflake.to_public(s, o.id))
            self.assertEqual(s.scalar(select(Order).where(Order.id.is_public(token))).item, "sa public")
            self.assertEqual(s.scalar(select(Order.item).where(Order.id == from_public(token.upper()))), "sa public")
            self.assertIsNone(s.scalar(select(Order).where(Order.id.is_public(token[:-1] + "b"))))
            self.assertEqual(pg_snowflake.try_from_public(engine, token), o.id)
            with engine.connect() as c:
                self.assertEqual(pg_snowflake.from_public(c, token), o.id)

    def test_time_ranges(self):
        with Session(engine) as s:
            layout = pg_snowflake.server_layout(s)
            first = Order(item="sa range first")
            s.add(first)
            s.flush()
            s.add_all([Order(item=f"sa range {n}") for n in range(200)])
            last = Order(item="sa range last")
            s.add(last)
            s.commit()
            start, end = layout.timestamp(first.id), layout.timestamp(last.id)
            got = s.scalar(select(sqlalchemy.func.count()).where(Order.id.since(start), Order.id.before(end)))
            want = s.scalar(select(sqlalchemy.func.count()).where(Order.id.minted_at() >= start, Order.id.minted_at() < end))
            self.assertEqual(got, want)
            low, high = layout.id_range(start, end)
            self.assertEqual(got, s.scalar(select(sqlalchemy.func.count()).where(Order.id >= low, Order.id < high)))
            long_ago = datetime(2000, 1, 1, tzinfo=UTC)
            total = s.scalar(select(sqlalchemy.func.count()).select_from(Order))
            self.assertEqual(s.scalar(select(sqlalchemy.func.count()).where(Order.id.since(long_ago))), total)
            self.assertEqual(s.scalar(select(sqlalchemy.func.count()).where(Order.id.before(long_ago))), 0)
            self.assertEqual(s.scalar(select(Order.id.minted_at()).where(Order.id == last.id)), layout.timestamp(last.id))


if __name__ == "__main__":
    unittest.main()
