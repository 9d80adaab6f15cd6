#!/usr/bin/env python3
"""The manual's section "From your application" (docs/application.md, wherever the section is),
executed: every recipe, as the page prints it, run by its real client (from PyPI, npm, Debian,
crates.io) against a real server with the extension, and its pitfalls table shown by tests. A
difference names the page's file and line.

Run by the scenario pgrx-tests/scenarios/clients.sh, which finds the clients the set-up installed
under CLIENTS_DIR (under the PostgreSQL cache dir) and sets PG_BIN, PG_CONFIG, SCRATCH, PROJECT_DIR,
CLIENTS_DIR, CLIENT_PYTHON (the venv's python), CLIENT_NODE_MODULES (the npm modules).
`CLIENTS_ONLY="pg django"` runs only those clients; MANUAL_ROOT another checkout's README and docs
(manual.py).

1. Recipes. An HTML comment right above a code block names its client and the file it becomes:
     <!-- test: client NAME FILE -->
   The client's harness (pgrx-tests/checks/readme/clients/) uses it as an application would: it inserts
   the row "book", then the 1000 rows "item 0" to "item 999" on one connection, and prints what it
   got in the client's own type:
     type NAME            the type the ids came back as (int, string, bigint, long, i64)
     row ID ITEM          each row in insert order, the id as the client's value prints itself
     json ID              the first id after a JSON round trip through the client's JSON parser
     browser ID           the first id read from snowflake_to_jsonb() by the client's JSON parser
     body ID              the first id in the JSON the recipe makes for a browser (a string there)
     inserts N            (ORMs) how many INSERT statements it sent for the 1001 rows
     minted T, minted_by_hand T   the first row's time, decoded in the application (ISO, UTC, ms)
     token T, found ID ITEM       the first row's public id, and the row it led back to
     newest_first IDS, newest_first_by_hand IDS   the 1000 ids sorted in the application, newest first
   This checker then asks the server: the ids are unique, strictly increasing in insert order, each
   the one stored for its row (so bulk inserts matched each id to its row), every row accounted
   for, above 2^53 (where a double loses digits), and the JSON forms are the same digits; the
   times decoded in the application are snowflake_timestamp()'s, the public id is
   snowflake_to_public()'s and leads back to its row, and the sorted ids are ORDER BY id DESC's.
   The recipes import the repository's client packages (clients/python/src on PYTHONPATH,
   clients/js as node_modules/pg-snowflake); the server has a key file for public ids.
2. The pitfalls table: its rows, in order, each contain (in backticks) what one pitfall test
   (pgrx-tests/checks/readme/clients/pitfalls.*) produced, and each test has its row.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
import cluster  # noqa: E402
import manual  # noqa: E402

PROJECT = os.environ["PROJECT_DIR"]
PG_BIN = os.environ["PG_BIN"]
SCRATCH = os.environ["SCRATCH"]
CLIENTS_DIR = os.environ["CLIENTS_DIR"]
PYTHON = os.environ["CLIENT_PYTHON"]
NODE_MODULES = os.environ["CLIENT_NODE_MODULES"]
# The key of the manual's public id examples (published: never a key to use).
EXAMPLE_KEY = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
HARNESS = os.path.join(PROJECT, "pgrx-tests/checks/readme/clients")
SECTION = "From your application"
ONLY = os.environ.get("CLIENTS_ONLY", "").split()
AS_ROOT = os.geteuid() == 0
failures = []
# This run's files (the recipes as written, the server's data dir): a directory of its own.
RUN = tempfile.mkdtemp(dir=SCRATCH, prefix="clients.")
os.chmod(RUN, 0o755)
if AS_ROOT:
    shutil.chown(RUN, "postgres")


PAGE = None  # the page that has the section


def fail(line, what):
    failures.append(f"{PAGE.name}:{line}: {what}")


class Server(cluster.Cluster):
    """A throwaway server made and started by the harness (cluster.py), also on a loopback TCP
    port (the JDBC driver has no Unix sockets): a free port of 127.0.0.1, trust authentication."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        super().__init__(RUN, "server", ["listen_addresses = '127.0.0.1'", f"port = {port}",
                                         "shared_preload_libraries = 'pg_snowflake'", "snowflake.machine_id = 7",
                                         "snowflake.public_key_file = 'snowflake.key'"])
        self.write_file("snowflake.key", EXAMPLE_KEY + "\n", mode="600")
        self.start()

    def psql(self, sql, db="postgres"):
        r = subprocess.run([f"{PG_BIN}/psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h", RUN,
                            "-p", str(self.port), "-U", "postgres", "-d", db], input=sql, text=True, capture_output=True,
                           env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))
        if r.returncode:
            raise RuntimeError(r.stderr.strip())
        return r.stdout

    def database(self, name):
        """A fresh database with the extension installed as the README says, and the environment a client connects with."""
        name = "app_" + name
        self.psql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name};")
        # As the README's Install says: the schema snowflake, on the database's search_path, which
        # the clients' new sessions get.
        self.psql(manual.install_sql(name), db=name)
        return dict(os.environ, PYTHONPATH=os.path.join(PROJECT, "clients/python/src"), PGHOST="127.0.0.1", PGPORT=str(self.port), PGUSER="postgres", PGDATABASE=name,
                    CLIENT_JDBC_URL=f"jdbc:postgresql://127.0.0.1:{self.port}/{name}?user=postgres",
                    CLIENT_CONNINFO=f"host=127.0.0.1 port={self.port} user=postgres dbname={name}")



# --- the README's recipes ----------------------------------------------------------------------

def section_bounds(lines):
    return PAGE.section(SECTION)


def recipe_blocks(lines):
    """{client: [(file, first code line index, code)]} of the section's `client` blocks, in order."""
    start, end = section_bounds(lines)
    blocks = {}
    for i in range(start, end):
        m = re.fullmatch(r"<!-- test: client (\S+) (\S+) -->", lines[i].strip())
        if not m:
            continue
        if not lines[i + 1].startswith("```") or lines[i + 1].strip() == "```":
            fail(i + 1, "a `test: client` comment must stand right above a code block with its language")
            continue
        j = i + 2
        while lines[j].strip() != "```":
            j += 1
        blocks.setdefault(m.group(1), []).append((m.group(2), i + 2, "\n".join(lines[i + 2:j]) + "\n"))
    return blocks


def write_files(workdir, blocks, suffix=None):
    """Writes each block as its file under workdir; `suffix` (a harness's text) is appended to a
    JavaScript recipe, which then runs as one module. Returns [(path, first README line)]."""
    written = []
    for name, first, code in blocks:
        path = os.path.join(workdir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(code + (suffix or ""))
        written.append((name, first))
    return written


def readme_lines_in(text, written):
    """A client's error output with each `FILE", line N` / `FILE:N` of a recipe file followed by
    the page's line it is."""
    for name, first in written:
        base = re.escape(os.path.basename(name))
        text = re.sub(rf'({base}"?,? (?:line )?|{base}:)(\d+)', lambda m: f"{m.group(0)} ({PAGE.name}:{first + int(m.group(2))})", text)
    return text


def run(cmd, env, cwd, timeout=600):
    return subprocess.run(cmd, env=env, cwd=cwd, text=True, capture_output=True, timeout=timeout)


def python_client(name, blocks, env, workdir):
    written = write_files(workdir, blocks)
    return written, run([PYTHON, os.path.join(HARNESS, "python_check.py"), name, workdir], env, workdir)


def node_modules(workdir):
    """workdir/node_modules: the set-up's npm modules, and the repository's pg-snowflake."""
    os.makedirs(os.path.join(workdir, "node_modules"))
    for m in os.listdir(NODE_MODULES):
        os.symlink(os.path.join(NODE_MODULES, m), os.path.join(workdir, "node_modules", m))
    os.symlink(os.path.join(PROJECT, "clients/js"), os.path.join(workdir, "node_modules", "pg-snowflake"))


def node_client(name, blocks, env, workdir):
    with open(os.path.join(HARNESS, "node_check.mjs")) as f:
        harness = f.read()
    written = write_files(workdir, blocks, suffix="\n" + harness)
    node_modules(workdir)
    return written, run(["node", blocks[0][0]], env, workdir)


def jdbc_client(name, blocks, env, workdir):
    written = write_files(workdir, blocks)
    jar = "/usr/share/java/postgresql.jar:/usr/share/java/jackson-databind.jar:/usr/share/java/jackson-core.jar:/usr/share/java/jackson-annotations.jar"
    classes = os.path.join(workdir, "classes")
    r = run(["javac", "-cp", jar, "-d", classes, blocks[0][0], os.path.join(HARNESS, "java", "Check.java")], env, workdir)
    if r.returncode:
        return written, r
    return written, run(["java", "-cp", f"{classes}:{jar}", "Check"], env, workdir)


def rust_client(name, blocks, env, workdir):
    # The Cargo project is built where its dependencies stay built (CLIENTS_DIR/rust): only the
    # recipe's own crate is compiled again.
    project = os.path.join(CLIENTS_DIR, "rust")
    os.makedirs(os.path.join(project, "src"), exist_ok=True)
    for f in ("Cargo.toml", "Cargo.lock", "src/main.rs"):
        shutil.copy(os.path.join(HARNESS, "rust", f), os.path.join(project, f))
    written = write_files(os.path.join(project, "src"), blocks)
    # rustfmt-clean, as the project's own Rust (its rustfmt.toml).
    r = run(["rustfmt", "--edition", "2021", "--check", "--color", "never", "--config-path", os.path.join(PROJECT, "rustfmt.toml"), "src/main.rs"], env, project)
    if r.returncode:
        return written, r
    r = run(["cargo", "build", "-q", "--locked", "--offline"], dict(env, CARGO_TARGET_DIR=os.path.join(project, "target")), project)
    if r.returncode:
        return written, r
    return written, run([os.path.join(project, "target", "debug", "readme-client-rust")], env, workdir)


# Each client, its runner and the type its ids must come back as.
CLIENTS = {
    "psycopg": (python_client, "int"),
    "django": (python_client, "SnowflakeId"),
    "django_by_hand": (python_client, "int"),
    "sqlalchemy": (python_client, "SnowflakeId"),
    "sqlalchemy_by_hand": (python_client, "int"),
    "pg": (node_client, "string"),
    "postgres": (node_client, "bigint"),
    "jdbc": (jdbc_client, "long"),
    "rust": (rust_client, "i64"),
}


def check_client(name, blocks, server):
    runner, want_type = CLIENTS[name]
    first = blocks[0][1]
    env = server.database(name)
    workdir = os.path.join(RUN, name)
    os.makedirs(workdir, exist_ok=True)
    written, r = runner(name, blocks, env, workdir)
    if r.returncode:
        out = readme_lines_in((r.stdout + r.stderr).strip(), written)
        fail(first, f"the {name} recipe failed (exit {r.returncode}):\n" + "\n".join("    " + l for l in out.split("\n")[-25:]))
        return None
    rows, got = [], {}
    for l in r.stdout.split("\n"):
        if l.startswith("row "):
            _, id_, item = l.split(" ", 2)
            rows.append((id_, item))
        elif l:
            k, _, v = l.partition(" ")
            got[k] = v
    problems = []
    if got.get("type") != want_type:
        problems.append(f"its ids came back as {got.get('type')}, not {want_type}")
    stored = dict(reversed(l.split("\t")) for l in server.psql("SELECT id::text, item FROM orders", db="app_" + name).strip().split("\n") if l)
    ids = [i for i, _ in rows]
    if len(rows) != 1001 or rows[0][1] != "book":
        problems.append(f"{len(rows)} rows printed, not the row 'book' and 1000 more")
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} ids repeat")
    wrong = [(item, i, stored.get(item)) for i, item in rows if stored.get(item) != i]
    if wrong:
        problems.append(f"{len(wrong)} ids are not the one stored for their row, first: {wrong[0][0]!r} got {wrong[0][1]}, stored {wrong[0][2]}")
    if len(stored) != len(rows):
        problems.append(f"the table holds {len(stored)} rows, the client reported {len(rows)}")
    if not wrong:
        values = [int(i) for i in ids]
        if any(b <= a for a, b in zip(values, values[1:])):
            problems.append("the ids do not increase strictly in insert order")
        if min(values) <= 2**53:
            problems.append(f"an id at or below 2^53 ({min(values)}): not a snowflake id of today")
    for k in ("json", "browser", "body"):
        if k in got and got[k] != (ids[0] if ids else None):
            problems.append(f"after {k} the id is {got[k]}, not {ids[0]}")
    db = "app_" + name
    extra = []
    if ids and not problems:
        server_time = server.psql("SELECT to_char(snowflake_timestamp(%s) AT TIME ZONE 'UTC', "
                                  "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')" % int(ids[0]), db=db).strip()
        for k in ("minted", "minted_by_hand"):
            if k in got:
                if got[k] != server_time:
                    problems.append(f"{k} is {got[k]}, snowflake_timestamp() {server_time}")
                else:
                    extra.append(f"{k} snowflake_timestamp()'s")
        if "token" in got:
            token = server.psql(f"SELECT snowflake_to_public({int(ids[0])})", db=db).strip()
            if got["token"] != token or got.get("found") != f"{ids[0]} book":
                problems.append(f"the public id {got['token']} led to {got.get('found')}; snowflake_to_public() is {token}")
            else:
                extra.append("the public id the server's, leading back to its row")
        order = [l for l in server.psql("SELECT id FROM orders WHERE item <> 'book' ORDER BY id DESC", db=db).split("\n") if l]
        for k in ("newest_first", "newest_first_by_hand"):
            if k in got:
                if got[k].split(",") != order:
                    problems.append(f"{k} is not ORDER BY id DESC's order")
                else:
                    extra.append(f"{k} ORDER BY id DESC's")
    if problems:
        fail(first, f"the {name} recipe: " + "; ".join(problems))
        return None
    checks = [k for k in ("json", "browser", "body") if k in got]
    return f"{name}: 1 + 1000 ids as {want_type}" + (f" in {got['inserts']} INSERT statements" if "inserts" in got else "") + \
        f", unique, increasing in insert order, each the one stored for its row" + \
        (", the same after " + " and ".join({"json": "a JSON round trip", "browser": "snowflake_to_jsonb()",
                                            "body": "the recipe's JSON (a string)"}[k] for k in checks) if checks else "") + \
        "".join(f"; {e}" for e in extra)


# --- the pitfalls table ------------------------------------------------------------------------

def pitfall_values(server):
    """[(test, value)] in the table's order: what each pitfall test produced."""
    values = []
    for cmd, name in ((["node", os.path.join(HARNESS, "pitfalls.mjs")], "node"),
                      ([PYTHON, os.path.join(HARNESS, "pitfalls.py")], "python")):
        workdir = os.path.join(RUN, "pitfalls_" + name)
        os.makedirs(workdir, exist_ok=True)
        if name == "node":
            shutil.copy(cmd[1], workdir)
            cmd = ["node", os.path.join(workdir, "pitfalls.mjs")]
            node_modules(workdir)
        r = run(cmd, server.database("pitfalls_" + name), workdir)
        if r.returncode:
            failures.append(f"pgrx-tests/checks/readme/clients/pitfalls ({name}) failed:\n{r.stdout}{r.stderr}")
            continue
        for l in r.stdout.strip().split("\n"):
            test, _, value = l.partition(": ")
            values.append((test, value))
    return values


def check_pitfalls(lines, server):
    start, end = section_bounds(lines)
    i = next((n for n in range(start, end) if lines[n].startswith("| pitfall |")), None)
    if i is None:
        fail(start + 1, "the section has no pitfalls table (a header starting `| pitfall |`)")
        return []
    rows = []
    i += 2
    while lines[i].startswith("|"):
        rows.append(i)
        i += 1
    values = pitfall_values(server)
    for n, (test, value) in enumerate(values):
        if n >= len(rows):
            fail(rows[-1] + 2, f"the pitfalls table lacks a row for the test {test}, which showed `{value}`")
        elif f"`{value}`" not in lines[rows[n]]:
            fail(rows[n] + 1, f"this pitfall row does not show `{value}`, what the test {test} produced")
    for line in rows[len(values):]:
        fail(line + 1, "no pitfall test shows this row")
    return [t for t, _ in values]


def main():
    global PAGE
    PAGE = manual.find_section(manual.pages(), SECTION)[0]
    lines = PAGE.lines
    blocks = recipe_blocks(lines)
    server = Server()
    report = []
    try:
        for name in CLIENTS:
            if ONLY and name not in ONLY:
                continue
            if name not in blocks:
                fail(section_bounds(lines)[0] + 1, f"the section has no recipe for the client {name}")
                continue
            r = check_client(name, blocks[name], server)
            if r:
                report.append(r)
        for name in blocks:
            if name not in CLIENTS:
                fail(blocks[name][0][1], f"no harness runs the client {name}")
        if not ONLY or "pitfalls" in ONLY:
            tests = check_pitfalls(lines, server)
            report.append(f"pitfalls: {len(tests)} rows, each shown by its test ({', '.join(tests)})")
    finally:
        server.remove()
    for f in failures:
        print(f)
    for r in report:
        print(r)
    if failures:
        print(f"{len(failures)} differences between the manual's recipes and what the clients did", file=sys.stderr)
        sys.exit(1)


main()
