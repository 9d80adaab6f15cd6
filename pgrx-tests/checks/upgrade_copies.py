#!/usr/bin/env python3
"""The upgrade script into the version being built repeats text of sql/ (until that version is
released, every copy must equal its source, so that a change made to one is made to the other):

1. source files repeated whole (it says so in a comment: `sql/NAME.sql, whole` or `sql/NAME.sql
   ... the whole file`);
2. the descriptions of sql/comments.sql: every `COMMENT ON ... IS '...'` of the upgrade script
   whose object sql/comments.sql describes too must say what sql/comments.sql says (a failure names
   the upgrade script's line and the source's).

Once the version is released (the version in Cargo.toml moves on) its upgrade script is frozen and
no longer checked.

Usage: upgrade_copies.py [PROJECT_DIR] (default: this checkout). Exit 1 if a copy differs from its
source, or if the script names a source that does not exist."""
import re
import sys
from pathlib import Path

COMMENT = re.compile(r"COMMENT ON (\w+) (.+?) IS\s+'((?:[^']|'')*)'", re.S)


def comments(text):
    """{object: (description, line)} of the COMMENT ON statements of a SQL text."""
    found = {}
    for m in COMMENT.finditer(text):
        obj = f"{m.group(1).upper()} {' '.join(m.group(2).split())}"
        found[obj] = (m.group(3), text.count("\n", 0, m.start()) + 1)
    return found


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    if not (root / "Cargo.toml").is_file():
        print(f"upgrade_copies.py: {root} is not a checkout of pg_snowflake (no Cargo.toml)")
        return 2
    version = re.search(r'^version = "(.*)"$', (root / "Cargo.toml").read_text(), re.M).group(1)
    scripts = sorted(root.glob(f"sql/pg_snowflake--*--{version}.sql"))
    sources = comments((root / "sql" / "comments.sql").read_text())
    failed = checked = described = 0
    for script in scripts:
        text = script.read_text()
        for name in sorted(set(re.findall(r"sql/(\w+\.sql)\b[^\n]*\bwhole\b", text))):
            source = root / "sql" / name
            checked += 1
            if not source.is_file():
                print(f"{script.name} says it holds sql/{name} whole, but there is no such file")
                failed = 1
            elif source.read_text().strip() not in text:
                print(f"{script.name}: its copy of sql/{name} differs from the file: make the same "
                      f"change in both (the release {version} is not frozen yet)")
                failed = 1
        for obj, (said, line) in comments(text).items():
            if obj not in sources:
                continue
            described += 1
            if said != sources[obj][0]:
                print(f"sql/{script.name}:{line}: the description of {obj} differs from "
                      f"sql/comments.sql:{sources[obj][1]}: copy it (the release {version} is not frozen yet)")
                failed = 1
    if not failed:
        print(f"upgrade scripts into {version}: {checked} copies of files and {described} descriptions, "
              f"each equal to its source")
    return failed


sys.exit(main())
