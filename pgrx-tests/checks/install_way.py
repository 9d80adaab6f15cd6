#!/usr/bin/env python3
"""No test or example falls back to installing pg_snowflake into public (issue 23).

Every `CREATE EXTENSION pg_snowflake` in the tests (pgrx-tests: scripts, scenarios, includes,
the readme checkers) and in the code blocks of README.md and docs/*.md must name
`SCHEMA snowflake`, the README's install (Install). The shared ways do: harness/helpers.sh's
`create_extension`, pgrx-tests/harness/sql/create_extension.sql, pgrx-tests/checks/readme/manual.py's
`install_sql` (the README's own block). The exceptions, each on purpose, are listed below by file
and exact line: a listed line that is gone fails too, so the list stays true. Comment lines
(`#`, `--`) and the prose of the pages are not examples and are not read.

Usage: python3 pgrx-tests/checks/install_way.py [ROOT]   (ROOT: a checkout, default this one)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "readme"))
from markdown_lines import inside_code  # noqa: E402

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))

# (file, the line as written, stripped): why it may create the extension another way.
EXCEPTIONS = {
    ("pgrx-tests/scenarios/install_schema.sh", 'psql_on main -d plain -c "CREATE EXTENSION pg_snowflake"'):
        "the risky way on purpose: the overload attack without the README's setup",
    ("pgrx-tests/scenarios/check_peers_safety.sh",
     'psql_on peer_b -c "CREATE SCHEMA snow" -c "CREATE EXTENSION pg_snowflake SCHEMA snow" -c "'):
        "a peer with the extension in another schema, which the remote calls must find",
    ("pgrx-tests/scenarios/switch_from_pgedge.sh",
     'q -c "CREATE SCHEMA ids" -c "CREATE EXTENSION pg_snowflake SCHEMA ids" \\'):
        "beside pgEdge's extension, which owns the schema snowflake (docs/switching.md)",
    ("docs/switching.md", "CREATE EXTENSION pg_snowflake SCHEMA ids;"):
        "beside pgEdge's extension, which owns the schema snowflake",
}

STATEMENT = re.compile(r'CREATE\s+EXTENSION\s+(IF\s+NOT\s+EXISTS\s+)?"?pg_snowflake\b"?', re.I)
SCHEMA = re.compile(r"\bSCHEMA\s+snowflake\b", re.I)


def files():
    for top in ("pgrx-tests", "README.md", "docs", ".ci"):
        path = os.path.join(ROOT, top)
        if os.path.isfile(path):
            yield top
            continue
        for d, dirs, names in os.walk(path):
            rel = os.path.relpath(d, ROOT)
            # Expected outputs echo what the scenarios ran; the snapshot is the extension's SQL.
            dirs[:] = [x for x in dirs if os.path.join(rel, x) not in
                       ("pgrx-tests/expected", "pgrx-tests/regress/expected", "pgrx-tests/checks/sql-snapshot", "pgrx-tests/checks/readme/clients/node_modules")]
            for n in sorted(names):
                if os.path.join(rel, n) in ("pgrx-tests/checks/install_way.py", "pgrx-tests/checks/self_tests.sh"):
                    continue  # these name the statement: what it looks for, what its negative control plants
                if n.endswith((".sh", ".sql", ".py", ".md", ".toml", ".mjs", ".js", ".java", ".rs")) or n == "run":
                    yield os.path.join(rel, n)


def code_lines(rel, text):
    """(line number, line) of what is code: every line of a script but its comments; the fenced
    blocks of a page."""
    lines = text.split("\n")
    numbered = ((i + 1, line) for i, line in inside_code(lines)) if rel.endswith(".md") else enumerate(lines, 1)
    for n, line in numbered:
        s = line.strip()
        if s.startswith("#") and not rel.endswith(".md") or s.startswith("--") or s.startswith("//"):
            continue
        yield n, line


def main():
    bad, seen = [], set()
    for rel in files():
        with open(os.path.join(ROOT, rel), errors="replace") as f:
            text = f.read()
        for n, line in code_lines(rel, text):
            for m in STATEMENT.finditer(line):
                # The statement: up to its semicolon or the end of a quoted string or the line.
                rest = re.split(r'[;"]', line[m.end():], maxsplit=1)[0]
                if SCHEMA.match(rest.strip()) or SCHEMA.search(rest):
                    continue
                key = (rel, line.strip())
                if key in EXCEPTIONS:
                    seen.add(key)
                    continue
                bad.append(f"{rel}:{n}: creates pg_snowflake without SCHEMA snowflake (use harness/helpers.sh's create_extension, "
                           f"\\ir ../harness/sql/create_extension.sql, or the README's install): {line.strip()}")
    for key in EXCEPTIONS:
        if key not in seen:
            bad.append(f"{key[0]}: the exception for {key[1]!r} matches no line: remove it from pgrx-tests/checks/install_way.py")
    for b in bad:
        print(b)
    if bad:
        sys.exit(1)
    print(f"every test and example installs pg_snowflake in the schema snowflake ({len(EXCEPTIONS)} exceptions on purpose)")


main()
