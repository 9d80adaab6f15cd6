"""The pitfalls table of the README's section "From your application", the Python rows: each
prints "TEST: VALUE", VALUE being what the README's row must show (pgrx-tests/checks/readme/clients.py).
The server from libpq's PG* variables."""
import os
import re

import django
import psycopg
from django.conf import settings
from django.db import IntegrityError, connection, models
from sqlalchemy import BigInteger, create_engine, event, func, insert, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

# SQLAlchemy: an integer primary key with no server_default is taken for a SERIAL one.
class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders_sa"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    item: Mapped[str]


engine = create_engine("postgresql+psycopg://")
ddl = []
event.listen(engine, "before_cursor_execute", lambda conn, cursor, statement, *a: ddl.append(statement))
Base.metadata.create_all(engine)
with engine.begin() as conn:
    ids = [conn.execute(insert(Order).values(item=i).returning(Order.id)).scalar_one() for i in ("a", "b", "c")]
assert ids == [1, 2, 3], ids
column = re.search(r"\n\s*(id [^,\n]*),", next(s for s in ddl if s.lstrip().startswith("CREATE TABLE"))).group(1)
print(f"sqlalchemy_sequence: {column}")


# SQLAlchemy: a server default it does not know to increase (text(), or func without
# monotonic=True): the ORM inserts a batch one row at a time, to know which id is whose.
class SlowOrder(Base):
    __tablename__ = "orders_slow"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, server_default=text("snowflake_nextval()"))
    item: Mapped[str]


class SlowFuncOrder(Base):
    __tablename__ = "orders_slow_func"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, server_default=func.snowflake_nextval())
    item: Mapped[str]


Base.metadata.create_all(engine)
counts = []
for model in (SlowOrder, SlowFuncOrder):
    ddl.clear()
    with Session(engine) as session:
        orders = [model(item=f"item {n}") for n in range(1000)]
        session.add_all(orders)
        session.commit()
        assert len({o.id for o in orders}) == 1000
    counts.append(len([s for s in ddl if s.lstrip().startswith("INSERT")]))
assert counts[0] == counts[1], counts
print(f"sqlalchemy_row_at_a_time: {counts[0]} INSERT statements")

# Django: a BigIntegerField key without db_default, the DEFAULT in SQL only: Django sends NULL.
settings.configure(DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": os.environ["PGDATABASE"],
                                          "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"],
                                          "USER": os.environ["PGUSER"]}})
django.setup()


class DjangoOrder(models.Model):
    id = models.BigIntegerField(primary_key=True)
    item = models.TextField()

    class Meta:
        app_label = "shop"
        db_table = "orders"


with psycopg.connect(autocommit=True) as conn:
    conn.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text NOT NULL)")
try:
    DjangoOrder.objects.create(item="book")
    raise SystemExit("Django inserted a row whose key it sent as NULL")
except IntegrityError as e:
    print(f"django_null: {str(e).splitlines()[0]}")
connection.close()

# Django's JsonResponse, DRF and pydantic write an int id as a JSON number (which JavaScript reads
# as a double: its last digits lost, the first row above).
import json  # noqa: E402

import pydantic  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from rest_framework.renderers import JSONRenderer  # noqa: E402

big = 253178563728011265
body = JsonResponse({"id": big}).content.decode()
assert json.loads(JSONRenderer().render({"id": big})) == {"id": big}, "DRF writes a number"


class Out(pydantic.BaseModel):
    id: int


assert json.loads(Out(id=big).model_dump_json()) == {"id": big}, "pydantic writes a number"
print(f"json_number: {body}")
