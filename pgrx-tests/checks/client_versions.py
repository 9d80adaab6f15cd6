#!/usr/bin/env python3
"""The recipes of "From your application" (docs/application.md) name the versions the clients
scenario runs them on, and claim no older one without saying what differs there (issue 35):

- each recipe section (a `## ` heading above `<!-- test: client NAME ... -->` blocks) says
  "Tested with CLIENT X.Y", where X.Y is the version the scenario installs
  (pgrx-tests/checks/readme/clients/: requirements.txt, package.json, rust/Cargo.lock), and a
  version in its heading is that X.Y too;
- a version of that client older than X.Y named in the section ("Django 5.0") is in its paragraph
  that starts "**Older versions**", which says what those versions need and what is known wrong
  there;
- where the client packages' tests also run an older version (requirements-older.txt: Django 5.2,
  SQLAlchemy 2.0), the section's **Older versions** paragraph names it.
The JDBC driver is Debian's (no pin): only that its section names a version.

A failure names the file and line.

Usage: python3 pgrx-tests/checks/client_versions.py [ROOT]   (ROOT: a checkout, default this one)
"""
import json
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENTS = os.path.join(ROOT, "pgrx-tests/checks/readme/clients")
failures = []


def pinned(requirements="requirements.txt"):
    """{name as the page writes it: version} of what the scenario installs."""
    out = {}
    with open(os.path.join(CLIENTS, requirements)) as f:
        for m in re.finditer(r"^([A-Za-z]+)(?:\[\w+\])?==([0-9.]+)", f.read(), re.M):
            out[m.group(1)] = m.group(2)
    if requirements != "requirements.txt":
        return out
    with open(os.path.join(CLIENTS, "package.json")) as f:
        out.update(json.load(f)["dependencies"])
    with open(os.path.join(CLIENTS, "rust/Cargo.lock")) as f:
        m = re.search(r'name = "tokio-postgres"\nversion = "([0-9.]+)"', f.read())
        out["tokio-postgres"] = m.group(1)
    return out


# The `client` name of a recipe block: the name its version is written under.
NAMES = {"psycopg": "psycopg", "django": "Django", "django_by_hand": "Django", "sqlalchemy": "SQLAlchemy",
         "sqlalchemy_by_hand": "SQLAlchemy", "pg": "pg", "postgres": "postgres", "rust": "tokio-postgres", "jdbc": None}


def major_minor(v):
    return tuple(int(x) for x in v.split(".")[:2])


def main():
    versions = pinned()
    older = pinned("requirements-older.txt")
    path = os.path.join(ROOT, "docs/application.md")
    with open(path) as f:
        lines = f.read().split("\n")
    heads = [i for i, l in enumerate(lines) if l.startswith("## ")] + [len(lines)]
    for n, h in enumerate(heads[:-1]):
        body = lines[h:heads[n + 1]]
        clients = {m.group(1) for l in body if (m := re.match(r"<!-- test: client (\w+) ", l))}
        # A client's recipe and its by-hand form are one client (one name) in one section.
        for client in sorted(clients, key=lambda c: (NAMES.get(c) or c, c)):
            name = NAMES.get(client, client)
            if name is not None and any(NAMES.get(c, c) == name for c in clients if c < client):
                continue
            if name is None:
                if not any(re.search(r"Tested with .*\b\d+\.\d+", l) for l in body):
                    failures.append(f"docs/application.md:{h + 1}: the {client} recipe names no version it is tested with")
                continue
            tested = versions.get(name)
            if tested is None:
                failures.append(f"docs/application.md:{h + 1}: no pinned version of {name} in pgrx-tests/checks/readme/clients/")
                continue
            mm = ".".join(tested.split(".")[:2])
            said = re.escape(name) + r"`?\s+(\d+(?:\.\d+)*)"
            if not any(re.search(rf"Tested with `?{re.escape(name)}`? {re.escape(mm)}\b", l) for l in body):
                failures.append(f"docs/application.md:{h + 1}: the {name} recipe must say \"Tested with {name} {mm}\" (the scenario installs {tested})")
            m = re.search(said, lines[h])
            if m and m.group(1) != mm:
                failures.append(f"docs/application.md:{h + 1}: the heading names {name} {m.group(1)}; the scenario runs {mm}")
            # The older version the packages' tests run, named in the Older versions paragraph.
            if name in older:
                omm = ".".join(older[name].split(".")[:2])
                start = next((k for k, l in enumerate(body) if l.startswith("**Older versions**")), len(body))
                end = next((k for k in range(start, len(body)) if not body[k].strip()), len(body))
                paragraph = " ".join(body[start:end])
                if not re.search(rf"{re.escape(name)}`?\s+{re.escape(omm)}\b", paragraph):
                    failures.append(f"docs/application.md:{h + 1}: the {name} section's **Older versions** paragraph must name {name} {omm}, "
                                    f"which the client packages' tests run (requirements-older.txt: {older[name]})")
            # Older versions named outside their paragraph.
            older_para = False
            for k, l in enumerate(body):
                if not l.strip():
                    older_para = False
                    continue
                if l.startswith("**Older versions**"):
                    older_para = True
                if k == 0 or l.lstrip().startswith(("<!--", "```")):
                    continue
                for v in re.finditer(said, l):
                    if major_minor(v.group(1) + ".0") < major_minor(tested) and not older_para:
                        failures.append(f"docs/application.md:{h + k + 1}: {name} {v.group(1)} is older than the {mm} tested: say it in the section's **Older versions** paragraph, with what differs there")
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print("docs/application.md: every recipe names the version it is tested with, and older ones only with what differs")


main()
