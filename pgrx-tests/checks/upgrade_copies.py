#!/usr/bin/env python3
"""The upgrade script into the version being built repeats some source files of sql/ whole (it says
so in a comment: `sql/NAME.sql, whole` or `sql/NAME.sql ... the whole file`): until that version is
released, every such copy must equal its source, so that a change made to one is made to the other.
Once the version is released (the version in Cargo.toml moves on) its upgrade script is frozen and
no longer checked.

Usage: upgrade_copies.py PROJECT_DIR. Exit 1 if a copy differs from its source, or if the script
names a source that does not exist."""
import re
import sys
from pathlib import Path


def main():
    root = Path(sys.argv[1])
    version = re.search(r'^version = "(.*)"$', (root / "Cargo.toml").read_text(), re.M).group(1)
    scripts = sorted(root.glob(f"sql/pg_snowflake--*--{version}.sql"))
    failed = checked = 0
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
    if not failed:
        print(f"upgrade scripts into {version}: {checked} copies, each equal to its source")
    return failed


sys.exit(main())
