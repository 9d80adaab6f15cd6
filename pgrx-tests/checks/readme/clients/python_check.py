"""The harness of the README's Python recipes (psycopg, django, sqlalchemy and their by-hand forms),
written from the README into WORKDIR by pgrx-tests/checks/readme/clients.py. Runs the recipe as an
application would (for Django: the app `shop` with the README's model and migration,
`makemigrations --check`, `migrate`) and prints what it got, in the client's own type, for
clients.py to compare with the server.

The recipe leaves `order_id` (the row "book"), `items` (the 1000 rows "item 0" to "item 999") and
`ids` (their ids, in the order of `items`); and where it shows them, `minted` and `minted_by_hand`
(the row's time, decoded in the application), `body` (the JSON it would send a browser for the row
"book", holding `id`), `token` and `found` (the row "book"'s public id, and the object that id
leads back to).

For the ORMs, it also prints how many INSERT statements they sent ("inserts N").

Usage: python_check.py CLIENT WORKDIR (the server from libpq's PG* variables)."""
import datetime
import json
import os
import runpy
import sys

import psycopg

client, workdir = sys.argv[1], sys.argv[2]
sys.path.insert(0, workdir)

if client.startswith("django"):
    import django
    from django.conf import settings
    from django.core.management import call_command

    for pkg in ("shop", "shop/migrations"):
        open(os.path.join(workdir, pkg, "__init__.py"), "a").close()
    settings.configure(
        INSTALLED_APPS=["shop"],
        DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": os.environ["PGDATABASE"],
                               "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"], "USER": os.environ["PGUSER"]}},
        USE_TZ=True)
    django.setup()
    # The README's migration is the one makemigrations would write for the README's model.
    try:
        call_command("makemigrations", "shop", "--check", "--dry-run", verbosity=0)
    except SystemExit:
        sys.exit("the README's migration is not what makemigrations writes for the README's model: "
                 "python manage.py makemigrations shop --dry-run -v 3 shows the difference")
    call_command("migrate", verbosity=0)

# What the ORMs send: their INSERT statements, counted.
inserts = []
recipe = os.path.join(workdir, f"recipe_{client}.py")
if client.startswith("django"):
    from django.db import connection

    def count(execute, sql, params, many, context):
        inserts.extend([sql] if sql.lstrip().upper().startswith("INSERT") else [])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        ns = runpy.run_path(recipe)
elif client.startswith("sqlalchemy"):
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "before_cursor_execute")
    def count(conn, cursor, statement, parameters, context, executemany):
        inserts.extend([statement] if statement.lstrip().upper().startswith("INSERT") else [])

    ns = runpy.run_path(recipe)
else:
    ns = runpy.run_path(recipe)
order_id, items, ids = ns["order_id"], ns["items"], ns["ids"]
assert items == [f"item {n}" for n in range(1000)], "items: the rows 'item 0' to 'item 999'"
assert len(ids) == len(items), f"{len(ids)} ids for {len(items)} items"
print("type", type(order_id).__name__)
if client.startswith(("django", "sqlalchemy")):
    print("inserts", len(inserts))
for id_, item in [(order_id, "book")] + list(zip(ids, items)):
    assert type(id_) is type(order_id), f"an id of type {type(id_).__name__}"
    print("row", id_, item)
# A JSON round trip through Python's json (ints of any size are exact).
print("json", json.loads(json.dumps({"id": order_id}))["id"])
# The recipe's own JSON for a browser: the id must be a string in it.
if "body" in ns:
    sent = json.loads(ns["body"])["id"]
    assert isinstance(sent, str), f"the body's id is a {type(sent).__name__}, not a string: {ns['body']!r}"
    print("body", sent)
for name in ("minted", "minted_by_hand"):
    if name in ns:
        t = ns[name].astimezone(datetime.timezone.utc)
        print(name, t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z")
if "found" in ns:
    print("token", ns["token"])
    print("found", ns["found"].id, ns["found"].item)
# The server's JSON (snowflake_to_jsonb: the id as a string), parsed by psycopg with json.loads.
with psycopg.connect() as conn:
    j = conn.execute("SELECT snowflake_to_jsonb(%s)", [order_id]).fetchone()[0]
    print("browser", int(j["id"]))
