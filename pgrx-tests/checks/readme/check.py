#!/usr/bin/env python3
"""The README and the manual (docs/*.md), executed: their SQL examples, the Errors table, the
Settings table and the SQL reference are compared with what a real server does, and a difference
names the file and line.

Run by the scenario pgrx-tests/scenarios/readme.sh (which sets PG_BIN, PG_CONFIG, SCRATCH,
PROJECT_DIR; MANUAL_ROOT another checkout's README and docs, see manual.py); `README_ACCEPT=1`
writes what the server did into the pages instead (review the diff!). What it checks:

1. SQL blocks. A ```sql block is run, in page order, in one database of a server configured as
   the README's quick start says (shared_preload_libraries, snowflake.machine_id = 7, TimeZone
   UTC; no key file: a block sets one up as its page says, `key file` below): the README's in the
   database `readme`, each page's in a database of its own made from it (CREATE DATABASE ... TEMPLATE readme), so that a page
   starts where the README ends, whatever the pages before it did. When a bare ``` block follows it directly, that block
   is psql's output and must match it. HTML comments right above a block steer the run, invisibly:
     <!-- test: setup SQL -->        SQL run first, its output not shown
     <!-- test: key file -->         the key file that the block's comment describes, set up as the
                                     reader does before running it: the file its
                                     `snowflake.public_key_file = 'NAME'` names, in the data
                                     directory, holding the key (32 or 64 hex characters) it shows,
                                     the server's OS user's with mode 0600; the setting in
                                     postgresql.conf; a reload
     <!-- test: varies col, col -->  those output columns differ from run to run (ids, times):
                                     compared as present, not by value
     <!-- test: peers name = conf, conf; name = ... -->
                                     servers of their own (a database `app` with the extension),
                                     reachable from the README's server as `service=name`
     <!-- test: skip why -->         not run (another scenario runs it, say): the reason is required
2. The Errors table: each row is what one trigger of pgrx-tests/checks/readme/errors.toml produces
   (SQLSTATE, message, hint), in order, with the trigger's masks applied (run-dependent numbers).
3. The Settings table against pg_settings: every snowflake.* setting (but the test builds'
   fault_*), its default and when it can change.
4. The SQL reference against the catalog: every function of the extension, its arguments, result,
   volatility, strictness and parallel safety, and whether PUBLIC may execute it (a row says
   "Revoked from PUBLIC" exactly when it may not); and the Security page's inventory ("Who may
   call what"): every function of the extension in every schema, who may execute it (PUBLIC, the
   roles granted it such as pg_monitor, or superusers) and as whom it runs.
5. The Benchmarks section (on whichever page it is): every table quotes a published report (pgrx-tests/bench/results/)
   word for word, under `<!-- quote: FILE -->`.
`README_ONLY=blocks|reference|errors` runs one part (reference includes the settings).
"""
import os
import pwd
import re
import subprocess
import sys
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
import cluster  # noqa: E402
import manual  # noqa: E402

PROJECT = os.environ["PROJECT_DIR"]
PG_BIN = os.environ["PG_BIN"]
LIBDIR = subprocess.run([os.environ["PG_CONFIG"], "--libdir"], capture_output=True, text=True, check=True).stdout.strip()
SCRATCH = os.environ["SCRATCH"]
ACCEPT = os.environ.get("README_ACCEPT") == "1"
AS_ROOT = os.geteuid() == 0
# The key of the Public ids example (published: an example, never a key to use), for the Errors
# table's triggers that need a key file (with_key); the SQL blocks get theirs from the page.
EXAMPLE_KEY = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

SERVICE_FILE = os.path.join(SCRATCH, "pg_service.conf")
failures = []
def create_database(cluster, db, template=None):
    """A database set up as the README's Install says; from `template` (whose extension it
    copies, but not its ALTER DATABASE settings, which CREATE DATABASE never copies)."""
    cluster.psql(f"CREATE DATABASE {db}" + (f" TEMPLATE {template};" if template else ";"))
    if template:
        cluster.psql(f"ALTER DATABASE {db} SET search_path = \"$user\", public, snowflake;")
    else:
        cluster.psql(manual.install_sql(db), db=db)


def fail(page, line, what):
    failures.append(f"{page.name}:{line}: {what}")


def as_owner(cmd, env=None, **kw):
    env = dict(env or os.environ, LD_LIBRARY_PATH=LIBDIR)
    if AS_ROOT:
        cmd = ["runuser", "-u", "postgres", "--", "env", f"LD_LIBRARY_PATH={LIBDIR}"] + cmd
    return subprocess.run(cmd, env=env, text=True, capture_output=True, **kw)


class Cluster(cluster.Cluster):
    """A throwaway server in the scratch dir, made and started by the harness (cluster.py)."""

    count = 0

    def __init__(self, name, conf, key=None):
        Cluster.count += 1
        super().__init__(SCRATCH, f"readme_{name}", conf)
        if key is not None:
            self.write_file("snowflake.key", key + "\n", mode="600")

    def start(self):
        # PGSERVICEFILE: the services that the README's peers example names (see start_peers).
        super().start(env=dict(os.environ, PGSERVICEFILE=SERVICE_FILE))

    def psql(self, sql, db="postgres", extra=(), check=True):
        cmd = [f"{PG_BIN}/psql", "-X", "-q", "-h", SCRATCH, "-p", str(self.port), "-U", "postgres", "-d", db,
               "-v", "ON_ERROR_STOP=1", "--pset", "footer=off", *extra]
        r = subprocess.run(cmd, input=sql, text=True, capture_output=True,
                           env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning", PGTZ="UTC"))
        if check and r.returncode:
            raise RuntimeError(r.stderr.strip())
        return r


# --- 1. the SQL blocks -------------------------------------------------------------------------

def sql_blocks(lines):
    """Each ```sql block: (first line index, code, directives, output (start, end) or None)."""
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sql":
            start = i + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            directives = []
            j = i - 1
            comment = []
            while j >= 0 and lines[j].rstrip().endswith("-->"):
                k = j
                while not lines[k].lstrip().startswith("<!--"):
                    k -= 1
                comment = lines[k:j + 1]
                text = " ".join(s.strip() for s in comment)[4:-3].strip()
                if text.startswith("test:"):
                    directives.insert(0, text[5:].strip())
                j = k - 1
            output = None
            if end + 1 < len(lines) and lines[end + 1].strip() == "```":
                o_start = end + 2
                o_end = o_start
                while lines[o_end].strip() != "```":
                    o_end += 1
                output = (o_start, o_end)
            blocks.append((i, "\n".join(lines[start:end]), directives, output))
            i = (output[1] if output else end) + 1
        else:
            i += 1
    return blocks


def aligned_cells(output):
    """psql's aligned table as rows of cells, cut where its `---+---` line has its `+`s (a value
    may hold a `|` of its own)."""
    if len(output) < 2 or not output[1] or not set(output[1]) <= set("-+"):
        return None
    cuts = [-1] + [i for i, ch in enumerate(output[1]) if ch == "+"] + [10**6]
    return [[line[cuts[k] + 1:cuts[k + 1]].strip() for k in range(len(cuts) - 1)]
            for n, line in enumerate(output) if n != 1]


def same_output(expected, actual, varies):
    """Equal; but in the columns named in `varies`, whose values change from run to run (and with
    them the widths of the aligned table), a value need only be present."""
    if not varies:
        return expected == actual
    e, a = aligned_cells(expected), aligned_cells(actual)
    if e is None or a is None or len(e) != len(a) or e[0] != a[0]:
        return False
    columns = {n for n, h in enumerate(e[0]) if h in varies}
    for re_, ra in zip(e[1:], a[1:]):
        if len(re_) != len(ra):
            return False
        for n, (x, y) in enumerate(zip(re_, ra)):
            if (n in columns and not (x and y)) or (n not in columns and x != y):
                return False
    return True


peers = []


def start_peers(spec):
    """`name = conf, conf; name = ...`: servers of their own, each with a database `app` that has
    the extension, reachable from the README's server as `service=name`."""
    entries = []
    for part in spec.split(";"):
        name, conf = part.split("=", 1)
        name = name.strip()
        c = Cluster(name, ["shared_preload_libraries = 'pg_snowflake'"] + [x.strip() for x in conf.split(",")])
        c.start()
        create_database(c, "app")
        peers.append(c)
        entries.append(f"[{name}]\nhost={SCRATCH}\nport={c.port}\ndbname=app\nuser=postgres\n")
    with open(SERVICE_FILE, "a") as f:
        f.write("\n".join(entries))
    os.chmod(SERVICE_FILE, 0o644)


def check_blocks(all_pages, main):
    ran = compared = 0
    for n, page in enumerate(all_pages):
        db = "readme" if n == 0 else f"readme_page{n}"
        if n:
            create_database(main, db, template="readme")
        r, c = check_page_blocks(page, main, db)
        ran += r
        compared += c
    return ran, compared


def check_install_pasted(main):
    """The README's install statements and its first example (CREATE TABLE ... DEFAULT
    snowflake_nextval(), an INSERT), pasted into one psql session in a new database, as a reader
    does: they must work there (ALTER DATABASE ... SET applies to sessions started after it; the
    install's SET search_path serves this one: issue 62). A failure names the install block's
    line of SET search_path (or of ALTER DATABASE, where there is no SET)."""
    page = manual.Page("README.md", manual.ROOT)
    lines = page.lines
    i = next(n for n, line in enumerate(lines) if line.startswith("<!-- test: skip the install itself"))
    end = lines.index("```", i + 2)
    at = next((n for n in range(i + 2, end) if lines[n].startswith("SET search_path")), None)
    if at is None:
        at = next(n for n in range(i + 2, end) if lines[n].startswith("ALTER DATABASE"))
    first = next(n for n, line in enumerate(lines) if line.strip() == "```sql")
    example = "\n".join(lines[first + 1:lines.index("```", first + 1)]) + "\n"
    main.psql("CREATE DATABASE pasted;")
    r = main.psql(manual.install_sql("pasted") + example, db="pasted", check=False)
    main.psql("DROP DATABASE pasted;")
    if r.returncode:
        fail(page, at + 1, "the install statements and the first example, pasted into one psql session, fail: "
             f"{r.stderr.strip()} (ALTER DATABASE ... SET applies to sessions started after it: set the search_path in this one too)")
    return r.returncode == 0


def key_file_as_the_block_says(page, first, code, main):
    """`<!-- test: key file -->`: the server gets the key file that the block's comment describes,
    as the reader sets it up (README, Public ids; the page's The key file): the file named by its
    `snowflake.public_key_file = 'NAME'`, in the data directory, holding the key it shows, owned by
    the server's OS user with mode 0600; the setting in postgresql.conf; a reload, waited for. A
    block that does not say which file holds which key fails at its first line."""
    name = re.search(r"snowflake\.public_key_file = '([\w.-]+)'", code)
    key = re.search(r"\b([0-9a-f]{64}|[0-9a-f]{32})\b", code)
    if not name or not key:
        fail(page, first + 2, "a block under <!-- test: key file --> must say which file holds which key: "
             "snowflake.public_key_file = '...' and the key (32 or 64 hex characters) in its comment")
        return False
    main.write_file(name.group(1), key.group(1) + "\n", mode="600")
    main.append_conf([f"snowflake.public_key_file = '{name.group(1)}'"])
    main.psql("SELECT pg_reload_conf();")
    # The postmaster reads the file when it applies the setting (its assign hook): a new session
    # that shows the setting was forked after that.
    for _ in range(100):
        if main.psql("SHOW snowflake.public_key_file;", extra=["-A", "-t"]).stdout.strip() == name.group(1):
            return True
        time.sleep(0.1)
    fail(page, first + 2, f"the server did not take snowflake.public_key_file = '{name.group(1)}' within 10 s of a reload")
    return False


def check_page_blocks(page, main, db):
    lines = page.lines
    blocks = sql_blocks(lines)
    ran = compared = 0
    replacements = []
    for first, code, directives, output in blocks:
        skip = [d for d in directives if d.startswith("skip")]
        if skip:
            if not skip[0][4:].strip():
                fail(page, first + 1, "a skipped block must say why (<!-- test: skip REASON -->)")
            continue
        for d in directives:
            if d.startswith("peers "):
                start_peers(d[6:])
        if "key file" in directives and not key_file_as_the_block_says(page, first, code, main):
            continue
        for d in directives:
            if d.startswith("setup "):
                try:
                    main.psql(d[6:], db=db)
                except RuntimeError as e:
                    fail(page, first + 1, f"the setup above this block failed: {e}")
        r = main.psql(code, db=db, check=False)
        ran += 1
        if r.returncode or "ERROR" in r.stderr:
            fail(page, first + 2, f"this block failed: {r.stderr.strip()}")
            continue
        if output is None:
            continue
        compared += 1
        varies = set()
        for d in directives:
            if d.startswith("varies "):
                varies = {c.strip() for c in d[7:].split(",")}
        actual = [l.rstrip() for l in r.stdout.rstrip("\n").split("\n")]
        expected = [l.rstrip() for l in lines[output[0]:output[1]]]
        if not same_output(expected, actual, varies):
            if ACCEPT:
                replacements.append((output, actual))
            else:
                diff = "\n".join(f"    page:   {e}" for e in expected) + "\n" + "\n".join(f"    server: {a}" for a in actual)
                first = next((n for n, (e, a) in enumerate(zip(expected, actual)) if e != a), min(len(expected), len(actual)))
                if varies:
                    first = 0
                fail(page, output[0] + first + 1, f"the output of the block above differs from what the server printed:\n{diff}")
    for (s, e), new in sorted(replacements, reverse=True):
        lines[s:e] = new
        page.changed = True
    return ran, compared


# --- 2. the Errors table -----------------------------------------------------------------------

def table_at(all_pages, title, header_start):
    """The page of the section headed `title`, and the rows (line index, cells) of the first
    table in it whose header starts so."""
    page, i, end = manual.find_section(all_pages, title)
    lines = page.lines
    while i < end and not lines[i].startswith(header_start):
        i += 1
    if i == end:
        raise SystemExit(f"{page.name}: the section {title!r} has no table whose header starts {header_start!r}")
    rows = []
    i += 2
    while i < len(lines) and lines[i].startswith("|"):
        rows.append((i, split_row(lines[i])))
        i += 1
    return page, rows


def split_row(line):
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def error_report(cluster, sql, db="postgres"):
    """SQLSTATE, message and hint of the error `sql` raises on the cluster."""
    r = cluster.psql("\\set VERBOSITY verbose\n" + sql, db=db, check=False)
    m = re.search(r"^ERROR:  ([0-9A-Z]{5}): (.*)$", r.stderr, re.M)
    if not m:
        return None, f"no error (stdout {r.stdout.strip()!r}, stderr {r.stderr.strip()!r})", ""
    h = re.search(r"^HINT:  (.*)$", r.stderr, re.M)
    return m.group(1), m.group(2), h.group(1) if h else ""


def run_trigger(t, clusters):
    """Starts (or reuses) the server the trigger wants, runs its steps, returns the error."""
    conf = t.get("conf", ["snowflake.machine_id = 7"])
    preload = t.get("preload", True)
    base = (["shared_preload_libraries = 'pg_snowflake'"] if preload else []) + conf
    key = "\n".join(t["key"]) if "key" in t else (EXAMPLE_KEY if t.get("with_key") else None)
    fresh = t.get("fresh", False) or "shell" in t or "restart_with" in t or "standby" in t
    signature = (tuple(base), key)
    c = None if fresh else clusters.get(signature)
    if c is None:
        c = Cluster(f"e{Cluster.count + 1}", base, key=key)
        if key is not None:
            c.append_conf(["snowflake.public_key_file = 'snowflake.key'"])
        c.start()
        c.psql(manual.install_sql("postgres"))
        if not fresh:
            clusters[signature] = c
    if "setup" in t:
        c.psql(t["setup"])
    target = c
    if "restart_with" in t:
        c.stop()
        c.append_conf(t["restart_with"])
        c.start()
    if "shell" in t:
        if t.get("offline"):
            c.stop()
        r = as_owner(["bash", "-ec", t["shell"]], env=dict(os.environ, DATA=c.dir))
        if r.returncode:
            return None, f"the trigger's shell step failed: {r.stderr.strip()}", ""
        if t.get("offline"):
            c.start()
    if "standby" in t:
        target = make_standby(c)
    try:
        return error_report(target, t["sql"], db=t.get("db", "postgres"))
    finally:
        if fresh:
            if target is not c:
                target.remove()
            c.remove()


def make_standby(primary):
    s = Cluster(f"standby{Cluster.count + 1}", [])
    as_owner(["rm", "-rf", s.dir], check=True)
    r = as_owner([f"{PG_BIN}/pg_basebackup", "-h", SCRATCH, "-p", str(primary.port), "-U", "postgres", "-D", s.dir, "-R", "-X", "stream"])
    if r.returncode:
        sys.exit(f"pg_basebackup failed: {r.stderr}")
    s.append_conf([f"port = {s.port}"])
    s.start()
    return s


# The OS user the servers run as (cluster.py: postgres when the checker runs as root), which a
# mask's pattern names as $SERVER_USER.
SERVER_USER = "postgres" if AS_ROOT else pwd.getpwuid(os.geteuid()).pw_name


def masked(text, masks):
    for pattern, repl in masks:
        text = re.sub(pattern.replace("$SERVER_USER", re.escape(SERVER_USER)), repl, text)
    return text


def code(text):
    """Text as a table cell: in backticks (doubled where it holds a backtick), | escaped."""
    text = text.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def check_errors(all_pages):
    with open(os.path.join(PROJECT, "pgrx-tests/checks/readme/errors.toml"), "rb") as f:
        triggers = tomllib.load(f)["error"]
    page, rows = table_at(all_pages, "Errors", "| SQLSTATE |")
    lines = page.lines
    clusters = {}
    produced = []
    for t in triggers:
        state, message, hint = run_trigger(t, clusters)
        if state is None:
            produced.append((t, None, message))
            continue
        masks = t.get("mask", [])
        row = f"| {state} | {code(masked(message, masks))} | {masked(hint, masks).replace('|', chr(92) + '|')} |"
        produced.append((t, row, None))
    for c in clusters.values():
        c.remove()
    new_rows = []
    for n, (t, row, problem) in enumerate(produced):
        if row is None:
            failures.append(f"pgrx-tests/checks/readme/errors.toml: the trigger {t['sql']!r} raised no error: {problem}")
            continue
        new_rows.append(row)
        if n < len(rows):
            line, _ = rows[n]
            if lines[line] != row:
                if not ACCEPT:
                    fail(page, line + 1, f"this error row differs from what the server raised:\n    page:   {lines[line]}\n    server: {row}")
        elif not ACCEPT:
            fail(page, rows[-1][0] + 2 if rows else 1, f"the Errors table lacks the row the server raised: {row}")
    if len(rows) > len(produced) and not ACCEPT:
        for line, _ in rows[len(produced):]:
            fail(page, line + 1, "no trigger in pgrx-tests/checks/readme/errors.toml produces this error row")
    if ACCEPT and rows:
        lines[rows[0][0]:rows[-1][0] + 1] = new_rows
        page.changed = True
    return len(triggers)


# --- 3. the Settings table ---------------------------------------------------------------------

CONTEXTS = {"server start": "postmaster", "reload": "sighup"}


def check_settings(all_pages, main):
    page, rows = table_at(all_pages, "Settings", "| setting |")
    out = main.psql("SELECT name, boot_val, context, coalesce(min_val, ''), coalesce(max_val, '') FROM pg_settings WHERE name LIKE 'snowflake.%' AND name NOT LIKE 'snowflake.fault%' ORDER BY name",
                    extra=["-A", "-t", "-F", "\t"]).stdout
    actual = {n: rest for n, *rest in (l.split("\t") for l in out.strip().split("\n"))}
    seen = set()
    for line, cols in rows:
        name = cols[0].strip("`")
        seen.add(name)
        if name not in actual:
            fail(page, line + 1, f"{name} is not a setting of the server (pg_settings)")
            continue
        boot, context, low, high = actual[name]
        if low and f"{low} to {high}" not in cols[3]:
            fail(page, line + 1, f"{name}: pg_settings gives the range {low} to {high}; the range column must say so (\"pg_settings: {low} to {high}\")")
        default = re.sub(r"\s*\(.*\)$", "", cols[1]).strip("`")
        if default in ("empty", "unset"):
            default = ""
        if default != boot:
            fail(page, line + 1, f"{name}: the README's default {cols[1]!r} is not pg_settings' boot_val {boot!r}")
        when = re.sub(r"\s*\(.*\)$", "", cols[2])
        if CONTEXTS.get(when) != context:
            fail(page, line + 1, f"{name}: the README says it can change at {cols[2]!r}, pg_settings' context is {context!r}")
    for name in sorted(set(actual) - seen):
        fail(page, rows[-1][0] + 2, f"the Settings table lacks {name}, a setting of the server")
    return len(rows)


# --- 4. the SQL reference ----------------------------------------------------------------------

def type_names(text):
    """A signature with PostgreSQL's long type names shortened as the README writes them."""
    for long, short in (("timestamp with time zone", "timestamptz"), ("double precision", "float8"),
                        ("integer", "int"), ("SETOF ", "setof ")):
        text = text.replace(long, short)
    return text.replace('"', "")


def all_same(catalog, names, args):
    props = {v[2:] for k, v in catalog.items() if k[0] in names and v[0] == args}
    return ACCEPT and len(props) == 1


def check_reference(all_pages, main):
    page, rows = table_at(all_pages, "SQL reference", "| function |")
    lines = page.lines
    out = main.psql("""
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_arguments(p.oid),
               pg_get_function_result(p.oid), p.provolatile, p.proisstrict, p.proparallel,
               p.proacl IS NOT NULL AND NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                                                    WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
        FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
        JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_snowflake'
        -- (The schema snowflake_internal holds what users do not call: the reference leaves it out.)
        WHERE p.pronamespace <> 'snowflake_internal'::regnamespace
        ORDER BY 1, 2""", extra=["-A", "-t", "-F", "\t"]).stdout
    catalog = {}
    revoked_from_public = {}
    for l in out.strip().split("\n"):
        name, ident, args, result, vol, strict, par, revoked = l.split("\t")
        catalog[(name, ident)] = (type_names(args), type_names(result), vol, strict, par)
        revoked_from_public[(name, ident)] = revoked == "t"
    volatility = {"i": "IMMUTABLE", "s": "STABLE", "v": "VOLATILE"}
    parallel = {"s": "PARALLEL SAFE", "r": "PARALLEL RESTRICTED", "u": "PARALLEL UNSAFE"}
    documented = set()
    for line, cols in rows:
        m = re.fullmatch(r"((?:`\w+`(?:, )?)+) ?`?\((.*)\)`", cols[0]) or re.fullmatch(r"`(\w+)\((.*)\)`", cols[0])
        if not m:
            fail(page, line + 1, f"cannot read the signature {cols[0]!r} (write `name(arg type, ...)`)")
            continue
        names = re.findall(r"\w+", m.group(1))
        args = type_names(m.group(2))
        for name in names:
            found = [k for k, v in catalog.items() if k[0] == name and v[0] == args]
            if not found:
                have = [v[0] for k, v in catalog.items() if k[0] == name]
                fail(page, line + 1, f"{name}({args}) is not in the catalog; it has {name} with: {have or 'no such function'}")
                continue
            key = found[0]
            documented.add(key)
            args_, result, vol, strict, par = catalog[key]
            returns = type_names(cols[1].strip("`"))
            if returns != "as above" and not result.startswith("TABLE") and returns != result:
                fail(page, line + 1, f"{name}({args}) returns {result}, the README says {cols[1]}")
            # A function PUBLIC may not execute says so in its row, and only such a function.
            says = bool(re.search(r"revoked from PUBLIC", cols[3] if len(cols) > 3 else "", re.I))
            if says != revoked_from_public[key]:
                fail(page, line + 1, f"{name}({args}) is {'' if revoked_from_public[key] else 'not '}revoked from PUBLIC in the catalog; the row must {'say' if revoked_from_public[key] else 'not say'} \"Revoked from PUBLIC\"")
            props = f"{volatility[vol]}, {'STRICT' if strict == 't' else 'not STRICT'}, {parallel[par]}"
            if cols[2] != props:
                if ACCEPT and len(names) == 1 or all_same(catalog, names, args):
                    cols[2] = props
                    lines[line] = "| " + " | ".join(cols) + " |"
                    page.changed = True
                else:
                    fail(page, line + 1, f"{name}({args}) is {props}; the README says {cols[2]!r}")
    for key in sorted(set(catalog) - documented):
        fail(page, rows[-1][0] + 2, f"the SQL reference lacks {key[0]}({catalog[key][0]}), a function of the extension")
    return len(documented)


# --- 4b. the Security page's inventory against the catalog -------------------------------------

def check_inventory(all_pages, main):
    """Every function of the extension, in every schema, has one row of the Security page's
    inventory (docs/public-ids-and-security.md, "Who may call what"), whose "who may execute" is
    the catalog's (PUBLIC; else the roles granted EXECUTE besides the owner, such as pg_monitor;
    else superusers) and whose "runs as" begins "the caller" (SECURITY INVOKER) or "its owner"
    (SECURITY DEFINER). Overloads of a name share a row, and must agree."""
    page, rows = table_at(all_pages, "Who may call what", "| function | who may execute |")
    out = main.psql("""
        SELECT CASE WHEN p.pronamespace = e.extnamespace THEN '' ELSE p.pronamespace::regnamespace::text || '.' END
               || p.proname,
               CASE WHEN p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                                                   WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') THEN 'PUBLIC'
                    ELSE coalesce((SELECT string_agg(DISTINCT a.grantee::regrole::text, ', ')
                                   FROM aclexplode(p.proacl) a WHERE a.grantee NOT IN (0, p.proowner)
                                                                 AND a.privilege_type = 'EXECUTE'), 'superusers') END,
               CASE WHEN p.prosecdef THEN 'its owner' ELSE 'the caller' END
        FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
        JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_snowflake'
        ORDER BY 1""", extra=["-A", "-t", "-F", "\t"]).stdout
    catalog = {}
    for l in out.strip().split("\n"):
        name, who, runs = l.split("\t")
        if catalog.setdefault(name, (who, runs)) != (who, runs):
            fail(page, rows[0][0] + 1, f"the overloads of {name} differ in who may execute them or as whom they run: "
                                       f"{catalog[name]} and {(who, runs)}: give each its own row")
    listed = {}
    for line, cols in rows:
        names = []
        prefix = ""
        for n in re.findall(r"`([\w.]+)\(\)`", cols[0]):
            if n.startswith("."):
                n = prefix + n[1:]
            elif "." in n:
                prefix = n.rsplit(".", 1)[0] + "."
            names.append(n)
        if not names:
            fail(page, line + 1, f"cannot read the functions {cols[0]!r} (write `name()`, `schema.name()` or `.name()`)")
        for name in names:
            if name in listed:
                fail(page, line + 1, f"{name}() is listed twice (also line {listed[name] + 1})")
            listed[name] = line
            if name not in catalog:
                fail(page, line + 1, f"{name}() is not a function of the extension")
                continue
            who, runs = catalog[name]
            said_who = cols[1].replace("*", "")
            if not said_who.startswith(who):
                fail(page, line + 1, f"{name}(): who may execute it is {who} in the catalog; the row says {cols[1]!r}")
            if not cols[2].startswith(runs):
                fail(page, line + 1, f"{name}() runs as {runs} in the catalog; the row says {cols[2]!r}")
    for name in sorted(set(catalog) - set(listed)):
        fail(page, rows[-1][0] + 2, f"the inventory lacks {name}(), a function of the extension")
    return len(listed)


# --- 5. figures quoted from the benchmark reports ----------------------------------------------

def check_quotes(all_pages):
    """Every table under `<!-- quote: FILE -->` is in FILE word for word, and every table of the
    Benchmarks section is such a quote: the figures have one source, the published reports."""
    quoted = 0
    page, bench, end = manual.find_section(all_pages, "Benchmarks")
    lines = page.lines
    i = bench
    while i < end:
        m = re.fullmatch(r"<!-- quote: (\S+) -->", lines[i].strip())
        if m:
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            with open(os.path.join(PROJECT, m.group(1))) as f:
                source = f.read()
            if "\n".join(lines[i + 1:j]) not in source or j == i + 1:
                source_lines = set(source.split("\n"))
                bad = next((k for k in range(i + 1, j) if lines[k] not in source_lines), i + 1)
                fail(page, bad + 1, f"this table is not in {m.group(1)} word for word")
            quoted += 1
            i = j
            continue
        if lines[i].startswith("|"):
            fail(page, i + 1, "a table of figures in the Benchmarks section that quotes no report (<!-- quote: FILE -->)")
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
        i += 1
    return quoted


FIGURE = re.compile(r"(?<![\w.,-])(\d[\d,]*(?:\.\d+)?) ?(ns|ms|s|MB|bytes)\b")
LAYOUT = re.compile(r"\d+-bit sequence|default layout")


def check_figures(all_pages):
    """The speed and size figures of a page's prose under `<!-- figures: FILE -->` (to the next
    heading, bold paragraph or directive) are FILE's, and each sentence that gives one says the
    layout it was measured with, as FILE says it (issue 62: a figure of a 22-bit sequence read as the
    default layout's). Every figure with a unit (ns, ms, s, MB, bytes) is a number of FILE (commas
    aside); every "N-bit sequence" and "default layout" of the text is in FILE; a sentence with a
    figure and no layout is named at its first line."""
    checked = 0
    for page in all_pages:
        lines = page.lines
        for i, line in enumerate(lines):
            m = re.fullmatch(r"<!-- figures: (\S+) -->", line.strip())
            if not m:
                continue
            with open(os.path.join(PROJECT, m.group(1))) as f:
                source = f.read()
            numbers = set(re.findall(r"\d+(?:\.\d+)?", source.replace(",", "")))
            end = next((k for k in range(i + 1, len(lines)) if lines[k].startswith(("#", "**", "<!--"))), len(lines))
            # Sentences: to a full stop followed by a space or the end of a line; each with its first line.
            text, starts = "", []
            for k in range(i + 1, end):
                starts.append((len(text), k))
                text += lines[k] + "\n"
            sentences, begin = [], 0
            for stop in [mm.end() for mm in re.finditer(r"\.(?=\s)", text)] + [len(text)]:
                if text[begin:stop].strip():
                    sentences.append((begin, text[begin:stop]))
                begin = stop
            for at, sentence in sentences:
                lead = len(sentence) - len(sentence.lstrip())
                first = max(k for pos, k in starts if pos <= at + lead)
                figures = FIGURE.findall(sentence)
                for value, unit in figures:
                    checked += 1
                    if value.replace(",", "") not in numbers:
                        fail(page, first + 1, f"{value} {unit} is no figure of {m.group(1)}")
                for layout in LAYOUT.findall(sentence):
                    if layout not in source:
                        fail(page, first + 1, f"{m.group(1)} names no {layout!r}: the figures were measured with another layout")
                if figures and not LAYOUT.search(sentence):
                    fail(page, first + 1, f"this sentence gives figures ({', '.join(v + ' ' + u for v, u in figures[:3])}) "
                         "without the layout they were measured with (a N-bit sequence, or the default layout)")
    return checked


# --- the run -----------------------------------------------------------------------------------

def main():
    all_pages = manual.pages()
    quotes = check_quotes(all_pages)
    figures = check_figures(all_pages)
    # As the README's quick start configures it: no key file (the blocks that need one set it up
    # as their page says: <!-- test: key file -->).
    server = Cluster("main", ["shared_preload_libraries = 'pg_snowflake'", "snowflake.machine_id = 7"])
    server.start()
    # The README's blocks run in `readme`, the reference is read in `postgres`: both set up as
    # Install says (manual.install_sql: the README's own statements).
    create_database(server, "readme")
    server.psql(manual.install_sql("postgres"))
    only = os.environ.get("README_ONLY", "")  # blocks, reference (and settings) or errors: one part
    ran = compared = functions = inventory = settings = errors = 0
    pasted = False
    if only in ("", "blocks"):
        pasted = check_install_pasted(server)
        ran, compared = check_blocks(all_pages, server)
    for c in peers:
        c.remove()
    if only in ("", "reference"):
        functions = check_reference(all_pages, server)
        inventory = check_inventory(all_pages, server)
        settings = check_settings(all_pages, server)
    server.remove()
    if only in ("", "errors"):
        errors = check_errors(all_pages)
    if ACCEPT:
        for page in all_pages:
            if page.changed:
                page.write()
    for f in failures:
        print(f)
    # What the reference, the Settings table and the Errors page were compared with, not how many
    # rows each has (the SQL snapshot is the list of the SQL surface; a new function, setting or
    # error changes no expected output here). "none" says a part that found nothing to compare.
    def against(n, what):
        return what if n > 0 else f"none ({what})"
    print(f"README and {len(all_pages) - 1} pages: {ran} SQL blocks run, {compared} outputs compared; "
          f"{'the install and the first example run in one session; ' if pasted else ''}"
          f"{against(errors, 'every error row raised')}; {against(settings, 'every setting against pg_settings')}; "
          f"{against(functions, 'every function against the catalog')}; "
          f"{against(inventory, 'the Security inventory against the catalog')}; {quotes} tables quoted from the benchmark reports, "
          f"{against(figures, 'the figures of the prose')} with their layout")
    if failures:
        print(f"{len(failures)} differences between the manual and the server", file=sys.stderr)
        sys.exit(1)


main()
