#!/usr/bin/env python3
"""Looks up every error a real server raised in the Errors page (docs/errors.md): each ERROR of
psql's output (with its HINT, and its SQLSTATE when psql shows one) must match a row of the page,
its message and its hint. A row matches a message when the longest fixed part of the row's
message (its example values `...`, N, M aside) is in the message, and its hint is the message's
hint word for word. Prints one line: how many kinds of refusal were seen, and whether each is in
the page; each one that is not goes to stderr. The kinds seen vary with timing; the line does not.

Usage: errors_in_page.py WHAT FILE...   (WHAT names the refusals in the line printed)
"""
import os
import re
import sys

# The Errors page's reader, as the page check reads it (pgrx-tests/checks/errors_page.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "checks"))
import errors_page  # noqa: E402

errors_page.ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def fixed_part(text):
    """The longest fixed part of a row's message: its example values (`...`, N, M) aside."""
    return errors_page.fixed_part(re.sub(r"\.\.\.|\bN\b|\bM\b", "{}", text))


def page_rows():
    """(SQLSTATE, message, hint) of every error row of the page."""
    return [(c[0], errors_page.unquote(c[1]), c[2]) for _, h, c in errors_page.page_rows() if h and h[0] == "SQLSTATE"]


def refusals(paths):
    """{(sqlstate or None, message, hint)} of every ERROR in the files (its HINT: the next line's)."""
    seen = set()
    for path in paths:
        lines = open(path, errors="replace").read().split("\n")
        for n, line in enumerate(lines):
            m = re.match(r"ERROR:  (?:([0-9A-Z]{5}): )?(.*)", line)
            if not m:
                continue
            hint = None
            if n + 1 < len(lines) and lines[n + 1].startswith("HINT:  "):
                hint = lines[n + 1][len("HINT:  "):]
            seen.add((m.group(1), m.group(2), hint))
    return seen


def main():
    what, paths = sys.argv[1], sys.argv[2:]
    rows = page_rows()
    seen = refusals(paths)
    missing = []
    for state, message, hint in sorted(seen, key=lambda s: (s[1], s[2] or "")):
        found = [r for r in rows if fixed_part(r[1]) in message and (state is None or r[0] == state)]
        if not any(r[2] == hint for r in found):
            missing.append((message, hint, [r[1] for r in found]))
    kinds = len({(re.sub(r"\d+", "N", m), h) for _, m, h in seen})
    for message, hint, near in missing:
        print(f"not in docs/errors.md: {message!r} with the hint {hint!r} (rows with its message: {near})", file=sys.stderr)
    answer = "yes" if seen and not missing else ("none seen" if not seen else "NO")
    print(f"{what}: each found in the Errors page with its hint: {answer}")
    print(f"({kinds} kinds of refusal seen)", file=sys.stderr)


main()
