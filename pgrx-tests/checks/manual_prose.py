#!/usr/bin/env python3
"""The prose of the README and the manual (docs/*.md, outside code blocks) names only what exists,
and its pointers lead somewhere (issue 35):

1. every `snowflake_*` name is a function or type of the extension (the SQL snapshot,
   pgrx-tests/checks/sql-snapshot/, and sql/);
2. every `snowflake.*` setting is one the code defines (src/: the settings, the test builds'
   fault_* ones and the retired ones that refuse every value);
3. every statistics or layout column in backticks, a name ending as theirs do (`..._waits`,
   `..._timeouts`, `..._ms`, ...), is a column of the extension's types or an argument of one of
   its functions (sql/types.sql and the snapshot), or a metric of monitoring/queries.yaml;
4. a setting named with a SQLSTATE, "`snowflake.x` (NNNNN", is named in a row of the Errors page
   (docs/errors.md) with that SQLSTATE: the error that setting bounds;
5. pointers: "See above." or "See below." alone names nothing; "(below)", "see below" need prose
   after them on the page; "(NAME, below)" and "(NAME, above)" a heading NAME below or above;
   a link to an anchor of the same page written "[..](#x) above" or "below" (or "[above](#x)")
   a heading that is there.

A failure names the file and line.

Usage: python3 pgrx-tests/checks/manual_prose.py [ROOT]   (ROOT: a checkout, default this one)
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."))
os.environ.setdefault("PROJECT_DIR", ROOT)
os.environ["MANUAL_ROOT"] = ROOT
sys.path.insert(0, os.path.join(HERE, "readme"))
import manual  # noqa: E402
from markdown_lines import outside_code  # noqa: E402

failures = []


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def extension_sql():
    text = read("pgrx-tests/checks/sql-snapshot", sorted(os.listdir(os.path.join(ROOT, "pgrx-tests/checks/sql-snapshot")))[-1])
    for name in sorted(os.listdir(os.path.join(ROOT, "sql"))):
        if name.endswith(".sql") and not name.startswith("pg_snowflake--"):
            text += read("sql", name)
    return text


SQL = extension_sql()
FUNCTIONS = set(re.findall(r'\bFUNCTION\s+(?:@extschema@\.)?"?(snowflake_\w+)"?\s*\(', SQL, re.I))
TYPES = set(re.findall(r'\bCREATE\s+TYPE\s+"?(snowflake_\w+)', SQL, re.I))
# The extension's own schemas (snowflake_internal) count as its names too.
TYPES |= set(re.findall(r'\bCREATE\s+SCHEMA\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(snowflake_\w+)', SQL, re.I))
WORDS = set(re.findall(r"\b\w+\b", SQL))
# The tests' names (docs/tests.md lists them; `layout_too_few_timestamp_bits` is no column).
WORDS |= {f.rsplit(".", 1)[0] for d in ("pgrx-tests/scenarios", "pgrx-tests/regress/sql")
          if os.path.isdir(os.path.join(ROOT, d)) for f in os.listdir(os.path.join(ROOT, d))}
SETTINGS = set()
for d, _, names in os.walk(os.path.join(ROOT, "src")):
    for n in names:
        if n.endswith(".rs"):
            with open(os.path.join(d, n)) as f:
                SETTINGS |= set(re.findall(r'c"(snowflake\.\w+)"', f.read()))
# postgres_exporter's metrics of monitoring/queries.yaml: a query's name, "_", a column's alias.
METRICS = set()
if os.path.isfile(os.path.join(ROOT, "monitoring/queries.yaml")):
    queries = read("monitoring/queries.yaml")
    aliases = set(re.findall(r"\bAS\s+(\w+)", queries)) | set(re.findall(r"^\s+- (\w+):$", queries, re.M))
    METRICS = {f"{q}_{a}" for q in re.findall(r"^(\w+):$", queries, re.M) for a in aliases}
COLUMN = re.compile(r"`([a-z][a-z0-9_]*_(?:waits|timeouts|takeovers|rollbacks|writes|issued|ms|mark|reset|bits|tick|second|ends))`")


def errors_rows():
    """[(SQLSTATE, message)] of every table row of the Errors page."""
    rows = []
    for line in read("docs/errors.md").split("\n"):
        m = re.match(r"\| ([0-9A-Z]{5}) \| (.*?) \|", line)
        if m:
            rows.append((m.group(1), m.group(2)))
    return rows


ROWS = errors_rows()


def slug(text):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", text.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def check_page(page):
    lines = page.lines
    prose = list(outside_code(lines))
    heads = [(i, text) for i, _, text in page.headings()]
    anchors = {slug(t): i for i, t in heads}
    last_prose = max((i for i, l in prose if l.strip() and not l.lstrip().startswith("<!--")), default=0)
    for i, line in prose:
        where = f"{page.name}:{i + 1}"
        # Inline code spans that are SQL (a schema-qualified call) are not settings.
        for m in re.finditer(r"(?<![\w.])(snowflake_\w+)", line):
            name = m.group(1)
            if name not in FUNCTIONS and name not in TYPES and name not in METRICS:
                failures.append(f"{where}: {name} is no function, type or metric (monitoring/queries.yaml) of the extension")
        for m in re.finditer(r"(?<![\w./-])(snowflake\.\w+)(?!\w*\()", line):
            name = m.group(1)
            # (snowflake.id_seq and snowflake.c: pgEdge snowflake's sequence and source file.)
            if name not in SETTINGS and name not in ("snowflake.key", "snowflake.id_seq", "snowflake.c"):
                failures.append(f"{where}: {name} is not a setting the code defines")
        for m in COLUMN.finditer(line):
            name = m.group(1)
            if name not in WORDS and name not in METRICS:
                failures.append(f"{where}: `{name}` is no column of the extension's types, argument of its functions or metric")
        for m in re.finditer(r"`(snowflake\.\w+)`[^`(]{0,40}\(([0-9A-Z]{5})\b", line):
            setting, state = m.groups()
            if not any(s == state and setting in msg for s, msg in ROWS):
                failures.append(f"{where}: {setting} with {state}: no row of the Errors page with {state} names {setting}")
        # Pointers.
        for m in re.finditer(r"(?:^|[.!?]\s+)(See (?:above|below)\.)", line):
            failures.append(f"{where}: \"{m.group(1)}\" names nothing: link what is meant, or name it")
        if re.search(r"\(below\)|\bsee below\b|, below\)", line, re.I):
            # Something must follow the paragraph (or table, or list) that says so.
            end = next((k for k in range(i, len(lines)) if not lines[k].strip()), len(lines))
            if end >= last_prose:
                failures.append(f"{where}: \"below\" in the page's last paragraph: nothing follows")
        for m in re.finditer(r"\(([A-Z][^(),]*), (below|above)\)", line):
            name, way = m.groups()
            at = [h for h, t in heads if t == name]
            if not at or (way == "below" and at[0] < i) or (way == "above" and at[0] > i):
                failures.append(f"{where}: ({name}, {way}): no heading {name!r} {way} this line")
        for m in re.finditer(r"\[([^\]]*)\]\(#([\w-]+)\)(\s+(above|below))?", line):
            text, anchor, _, after = m.groups()
            way = after or ({"above", "below"} & set(re.findall(r"\w+", text.lower())) or {None}).pop()
            if way and anchor in anchors:
                h = anchors[anchor]
                if (way == "below" and h < i) or (way == "above" and h > i):
                    failures.append(f"{where}: [{text}](#{anchor}) is said to be {way}, but its heading is at line {h + 1}")


def main():
    for page in manual.pages(ROOT):
        check_page(page)
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print(f"the manual's prose: {len(FUNCTIONS)} functions, {len(SETTINGS)} settings known; every name and pointer resolves")


main()
