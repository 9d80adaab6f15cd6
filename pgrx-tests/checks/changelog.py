#!/usr/bin/env python3
"""CHANGELOG.md names every change of the SQL interface, checked against the scripts (issue 35).

- The section of each released install script `sql/pg_snowflake--X.sql` names every function it
  creates (as `name(type, ...)`, its argument types), every type and each of the type's columns.
- The section of each upgrade script `sql/pg_snowflake--A--B.sql` names every function it creates
  or drops, every column it adds to a type (`ADD ATTRIBUTE`), every column whose type it changes
  (`ALTER ATTRIBUTE ... TYPE`, with the new type), and every function whose privileges it changes
  (`GRANT`, `REVOKE`: in an item that says PUBLIC).
- Settings: the settings of the newest version are the Settings table's (docs/settings.md, which
  the README check compares with pg_settings); the section of each version names every setting
  added since the version before it (named in that version's section) and every one gone.
- The newest section is the version of Cargo.toml; docs/upgrading.md links to the changelog, and
  its paragraph "From A to B:" names the settings of the section [B].

A missing name fails, naming CHANGELOG.md's section line and what it lacks.

Usage: python3 pgrx-tests/checks/changelog.py [ROOT]   (ROOT: a checkout, default this one)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []

# PostgreSQL's spellings of a type, as the changelog writes them.
TYPES = {
    "timestamp with time zone": "timestamptz", "double precision": "float8", "integer": "int",
    "int4": "int", "int2": "smallint", "int8": "bigint", "boolean": "bool", "character varying": "varchar",
}


def norm_type(t):
    t = re.sub(r"\s+", " ", t.replace('"', "").strip().lower())
    for long, short in TYPES.items():
        t = re.sub(rf"\b{long}\b", short, t)
    return t


def split_args(text):
    """Top-level comma-separated parts of an argument list."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def arg_type(arg):
    """The type of one declared argument (`"id" bigint DEFAULT 1`, `OUT x int`, `double precision`):
    None for an OUT argument, which is not part of the signature."""
    arg = re.split(r"\s+DEFAULT\s+|\s*=\s*", arg.strip(), flags=re.I)[0].strip()
    mode = re.match(r"(IN|OUT|INOUT|VARIADIC)\s+", arg, re.I)
    if mode:
        if mode.group(1).upper() == "OUT":
            return None
        arg = arg[mode.end():]
    words = norm_type(arg).split()  # multi-word types are one word now
    return words[-1]


def signature(name, args):
    types = [arg_type(a) for a in split_args(args)]
    return f"{name}({', '.join(t for t in types if t)})"


def balanced(text, start):
    """The text between the parenthesis at `start` and its match."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    raise ValueError("unbalanced")


def strip_comments(sql):
    sql = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    # -- comments, outside string literals and dollar-quoted bodies (good enough: the scripts'
    # comments never hold a quote that matters here).
    return re.sub(r"--[^\n]*", "", sql)


def without_bodies(sql):
    """The script with function bodies ($fn$ ... $fn$, $$ ... $$, '...' AS bodies) blanked."""
    return re.sub(r"(\$\w*\$).*?\1", "''", sql, flags=re.S)


# A function's name, with the schema snowflake_internal when it is in it (quotes dropped by unquoted()).
NAME = r'(?:@extschema@\.)?((?:snowflake_internal\.)?"?\w+"?)'


def unquoted(name):
    return name.replace('"', "")


def functions(sql, verb):
    out = []
    for m in re.finditer(rf"\b{verb}\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+{NAME}\s*\(", sql, re.I):
        out.append(signature(unquoted(m.group(1)), balanced(sql, m.end() - 1)))
    return out


def changelog_sections(text):
    """{version: (line number, text of the section)}."""
    lines = text.split("\n")
    heads = [(i, m.group(1)) for i, l in enumerate(lines) if (m := re.match(r"## \[([^\]]+)\]", l))]
    out = {}
    for n, (i, v) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        out[v] = (i + 1, "\n".join(lines[i:end]))
    return out


def named_signatures(section):
    return {f"{m.group(1)}({', '.join(norm_type(t) for t in split_args(m.group(2)))})"
            for m in re.finditer(r"`(snowflake_internal\.\w+|snowflake_\w+)\(([^`]*)\)`", section)}


def items(section):
    """The list items of a section, each with its continuation lines."""
    out = []
    for line in section.split("\n"):
        if line.startswith("- "):
            out.append(line)
        elif out and line.startswith("  "):
            out[-1] += "\n" + line
    return out


def code_spans(section):
    return set(re.findall(r"`([^`]+)`", section))


def settings_table():
    with open(os.path.join(ROOT, "docs/settings.md")) as f:
        return set(re.findall(r"^\| `(snowflake\.\w+)` \|", f.read(), re.M))


def main():
    path = os.path.join(ROOT, "CHANGELOG.md")
    if not os.path.isfile(path):
        sys.exit("CHANGELOG.md: missing")
    with open(path) as f:
        sections = changelog_sections(f.read())
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        current = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    versions = list(sections)
    if not versions or versions[0] != current:
        failures.append(f"CHANGELOG.md: its newest section must be [{current}], the version of Cargo.toml (it is {versions[:1]})")
    sql_dir = os.path.join(ROOT, "sql")
    for name in sorted(os.listdir(sql_dir)):
        script = re.fullmatch(r"pg_snowflake--([0-9.]+)(?:--([0-9.]+))?\.sql", name)
        if not script:
            continue
        version = script.group(2) or script.group(1)
        if version not in sections:
            failures.append(f"CHANGELOG.md: no section [{version}] (sql/{name})")
            continue
        line, section = sections[version]
        with open(os.path.join(sql_dir, name)) as f:
            sql = without_bodies(strip_comments(f.read()))
        named = named_signatures(section)
        spans = code_spans(section)
        want = []  # (what, it is named)
        for sig in functions(sql, "CREATE") + functions(sql, "DROP"):
            want.append((f"the function {sig}", sig in named))
        for m in re.finditer(rf"\b(?:GRANT|REVOKE)\s+\w+(?:\s*,\s*\w+)*\s+ON\s+FUNCTION\s+{NAME}\s*\(", sql, re.I):
            sig = signature(unquoted(m.group(1)), balanced(sql, m.end() - 1))
            # in an item that says whom: PUBLIC, or the role
            said = any(sig in named_signatures(item) and ("PUBLIC" in item or " TO " in item) for item in items(section))
            want.append((f"the privileges of {sig} (in an item that says PUBLIC)", said))
        if script.group(2) is None:  # an install script: its types and their columns
            for t in re.finditer(rf"\bCREATE\s+TYPE\s+{NAME}\s+AS\s*\(", sql, re.I):
                want.append((f"the type {unquoted(t.group(1))}", unquoted(t.group(1)) in spans))
                for col in split_args(balanced(sql, t.end() - 1)):
                    c = col.split()[0].strip('"')
                    want.append((f"the column {c} of {unquoted(t.group(1))}", c in spans))
        for t in re.finditer(rf"\bALTER\s+TYPE\s+{NAME}\s+(.*?);", sql, re.I | re.S):
            for action in split_args(t.group(2)):
                a = re.match(r"\s*ADD\s+ATTRIBUTE\s+\"?(\w+)\"?", action, re.I)
                if a:
                    want.append((f"the column {a.group(1)} added to {t.group(1)}", a.group(1) in spans))
                a = re.match(r"\s*ALTER\s+ATTRIBUTE\s+\"?(\w+)\"?\s+(?:SET\s+DATA\s+)?TYPE\s+(.+)", action, re.I)
                if a:
                    new = norm_type(a.group(2))
                    ok = a.group(1) in spans and any(norm_type(s) == new for s in spans)
                    want.append((f"the column {a.group(1)} of {t.group(1)} made {a.group(2).strip()}", ok))
        for what, ok in want:
            if not ok:
                failures.append(f"CHANGELOG.md:{line}: the section [{version}] does not name {what} (sql/{name})")
    # Settings: each version's section names what changed since the one before it.
    settings = {v: set(re.findall(r"`(snowflake\.\w+)`", sections[v][1])) for v in versions}
    oldest = versions[-1] if versions else None
    have = set()
    for v in reversed(versions):
        line, section = sections[v]
        if v == oldest:
            have = settings[v]
            continue
        now = settings_table() if v == versions[0] else None
        if now is None:
            continue  # a middle version: its settings are its section's (not checked)
        for s in sorted(now - have):
            if s not in settings[v]:
                failures.append(f"CHANGELOG.md:{line}: the section [{v}] does not name the setting {s}, added since (docs/settings.md)")
        for s in sorted(have - now):
            if s not in settings[v]:
                failures.append(f"CHANGELOG.md:{line}: the section [{v}] does not name the setting {s}, gone since (docs/settings.md lacks it)")
    # Upgrading sends its readers here.
    upgrading = os.path.join(ROOT, "docs/upgrading.md")
    if os.path.isfile(upgrading):
        with open(upgrading) as f:
            text = f.read()
        if "](../CHANGELOG.md)" not in text:
            failures.append("docs/upgrading.md: no link to the changelog (../CHANGELOG.md)")
        # Its summary of the newest update names the settings that the changelog's section does.
        if len(versions) > 1:
            new, old = versions[0], versions[1]
            para = next((p for p in text.split("\n\n") if f"From {old} to {new}:" in p), None)
            if para is None:
                failures.append(f"docs/upgrading.md: no paragraph saying \"From {old} to {new}:\"")
            else:
                line = text[:text.index(para)].count("\n") + 1
                said = set(re.findall(r"`(snowflake\.\w+)`", para))
                for s in sorted(settings[new] ^ said):
                    where = "the changelog's section" if s in settings[new] else "docs/upgrading.md"
                    failures.append(f"docs/upgrading.md:{line}: {s} is named by {where} only (From {old} to {new})")
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print(f"CHANGELOG.md: {len(versions)} versions, every function, type, column, privilege and setting change of sql/ named")


main()
