#!/usr/bin/env python3
"""One fact, one place: each list the project keeps is written once, in the code, and every other
place either is made from it (generated, or a function of it shown in a checked block) or is
compared with it here. A failure names the stale place (file:line) and the source.

The lists, their sources, and what is compared here (ARCHITECTURE.md, "Files to touch", says the
rest; the slower checks are named there too):

1. presets (other systems' layouts): `PRESETS` of src/core/src/presets.rs.
   - a copy: any paragraph (text between blank lines) of any file that names more than three
     quarters of the presets names them all (a stale list: name `snowflake_presets()` instead, or let a
     command write it);
   - the manual's blocks that read `snowflake_presets()`: their output has a row for each preset
     (for each preset with an example, under `WHERE ... example IS NOT NULL`), and no other.
2. the actions of `snowflake_internal.as_owner()`: `ACTIONS` of src/postgres/sql_api/as_owner.rs.
   - a copy: any paragraph that names more than three quarters of the actions names them all (the
     description in sql/comments.sql and its copies among them).
3. the settings: every `snowflake.*` setting that src/postgres defines (but the test builds'
   `snowflake.fault_*`): docs/settings.md's table has a row for each, and no other (the readme
   scenario compares each row with pg_settings).
4. the functions: every function of the SQL snapshot (pgrx-tests/checks/sql-snapshot/, the code's
   generated SQL, which the sql_snapshot scenario keeps equal to it): a row of docs/sql-reference.md
   (those in the extension's schema), a row of the Security page's inventory (every schema), and a
   description in sql/ (those in the extension's schema); and none of those names a function the
   snapshot lacks. (The readme scenario compares signatures and privileges with the catalog.)
5. the tests: every scenario (pgrx-tests/scenarios/NAME.sh or .sql), pg_regress test
   (pgrx-tests/regress/sql/NAME.sql) and pg_upgrade has its line in docs/tests.md's list
   ("- `NAME`: ..."), and every line there names one.
(The SQLSTATEs: pgrx-tests/checks/errors_page.py. The files that are frozen as released, the
install and upgrade scripts of earlier versions and their sections of CHANGELOG.md, keep the lists
of their release and are not read.)

Usage: python3 pgrx-tests/checks/lists.py [ROOT]   (ROOT: a checkout, default this one)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []
SKIP_DIRS = {".git", "target", "node_modules", "__pycache__", "site"}
TEXT = re.compile(r"\.(rs|sql|md|py|sh|toml|yml|yaml|out|txt|json|control|js|mjs|ts)$")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def line_of(text, at):
    return text.count("\n", 0, at) + 1


def version():
    return re.search(r'^version = "(.*)"$', read("Cargo.toml"), re.M).group(1)


def frozen(path, current):
    """A file kept as released: an install script of an earlier version, an upgrade script into one."""
    m = re.fullmatch(r"sql/pg_snowflake--(?:[\d.]+--)?([\d.]+)\.sql", path)
    return bool(m) and m.group(1) != current


def files():
    """The checkout's text files (git's list where there is one), as paths relative to ROOT."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True).stdout
        if not out.strip():
            raise ValueError
        names = out.split("\n")
    except (OSError, subprocess.CalledProcessError, ValueError):
        names = []
        for d, dirs, fs in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            names += [os.path.relpath(os.path.join(d, f), ROOT) for f in fs]
    # (The client packages' presets are written from presets.rs by clients/generate.py, whose
    # --check compares them: they are no hand-kept copy.)
    return sorted(n for n in names if n and TEXT.search(n) and os.path.isfile(os.path.join(ROOT, n))
                  and not generated(os.path.join(ROOT, n)))


def generated(path):
    with open(path, errors="replace") as f:
        return "by clients/generate.py: do not edit" in f.read(400)


def paragraphs(text):
    """(offset, paragraph) for each run of text between blank lines."""
    for m in re.finditer(r"(?:[^\n]*\S[^\n]*(?:\n|$))+", text):
        yield m.start(), m.group(0)


def unreleased_changelog(text, current):
    """CHANGELOG.md's section of the current version, the others blanked (line numbers kept)."""
    out, keep = [], True
    for line in text.split("\n"):
        m = re.match(r"## \[([^\]]+)\]", line)
        if m:
            keep = m.group(1) == current
        out.append(line if keep else "")
    return "\n".join(out)


def word(name):
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", re.I)


def stale_copies(what, source, members, texts, checked=()):
    """Every paragraph naming more than three quarters of `members` names them all. (Fewer is not
    taken for a list: the conversion's statements use seven of the ten actions of as_owner().)"""
    patterns = {m: word(m) for m in members}
    for path, text in texts:
        if path == source:
            continue
        for at, para in paragraphs(text):
            first_line = line_of(text, at)
            if any((path, n) in checked for n in range(first_line, first_line + para.count("\n") + 1)):
                continue
            named = {m for m, p in patterns.items() if p.search(para)}
            if len(named) * 4 > len(members) * 3 and named != set(members):
                first = min(patterns[m].search(para).start() for m in named)
                missing = ", ".join(m for m in members if m not in named)
                failures.append(f"{path}:{line_of(text, at + first)}: a list of the {what} without {missing}: "
                                f"a stale copy of {source}'s (name the list's function or command instead, or add them)")


# --- 1. presets --------------------------------------------------------------------------------

def presets():
    """[(name, has an example)] of PRESETS, in order."""
    text = read("src/core/src/presets.rs")
    body = text[text.index("pub const PRESETS"):]
    body = body[:body.index("\n];")]
    found = []
    for entry in body.split("Preset {")[1:]:
        name = re.search(r'\bname: "([^"]+)"', entry).group(1)
        found.append((name, bool(re.search(r"\bexample: Some\(", entry))))
    if not found:
        failures.append("src/core/src/presets.rs: no preset found in PRESETS (has its form changed? see lists.py)")
    return found


def preset_blocks(all_presets, texts):
    """The manual's SQL blocks that read snowflake_presets(), and their output. Returns (path,
    line) of each output checked here (not again as a paragraph)."""
    checked = set()
    names = [n for n, _ in all_presets]
    with_example = [n for n, e in all_presets if e]
    for path, text in texts:
        if not (path.startswith("docs/") or path == "README.md") or not path.endswith(".md"):
            continue
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            if lines[i].strip() != "```sql":
                i += 1
                continue
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            code = "\n".join(lines[i + 1:end])
            if "snowflake_presets()" in code and end + 1 < len(lines) and lines[end + 1].strip() == "```":
                o_start = end + 2
                o_end = o_start
                while o_end < len(lines) and lines[o_end].strip() != "```":
                    o_end += 1
                output = "\n".join(lines[o_start:o_end])
                checked.update((path, n + 1) for n in range(o_start, o_end))
                want = with_example if re.search(r"example IS NOT NULL", code, re.I) else names
                shown = [n for n in names if word(n).search(output)]
                for n in want:
                    if n not in shown:
                        failures.append(f"{path}:{o_start + 1}: the output of the block above lacks the preset {n} "
                                        f"(src/core/src/presets.rs): README_ACCEPT=1 bash pgrx-tests/test.sh --pg 15 readme writes it")
                for n in shown:
                    if n not in want:
                        failures.append(f"{path}:{o_start + 1}: the output of the block above shows {n}, which this query "
                                        f"would not return (src/core/src/presets.rs)")
                i = o_end
            i = end + 1
    return checked


# --- 2. the actions of as_owner() ---------------------------------------------------------------

def actions():
    text = read("src/postgres/sql_api/as_owner.rs")
    found = re.findall(r'\("([a-z_]+)", Action::\w+\)', text)
    if not found:
        failures.append("src/postgres/sql_api/as_owner.rs: no action found in ACTIONS (has its form changed? see lists.py)")
    return found


# --- 3. the settings ----------------------------------------------------------------------------

def settings():
    found = {}
    for d, _, fs in os.walk(os.path.join(ROOT, "src/postgres")):
        for f in sorted(fs):
            if not f.endswith(".rs"):
                continue
            path = os.path.relpath(os.path.join(d, f), ROOT)
            text = read(path)
            for m in re.finditer(r'(?:define_\w+_guc|DefineCustom\w+Variable)\(\s*c"(snowflake\.\w+)"', text):
                if not m.group(1).startswith("snowflake.fault_"):
                    found.setdefault(m.group(1), f"{path}:{line_of(text, m.start(1))}")
    if not found:
        failures.append("src/postgres: no setting defined (has the form of their definitions changed? see lists.py)")
    return found


def settings_page(defined):
    path = "docs/settings.md"
    text = read(path)
    rows = {m.group(1): line_of(text, m.start()) for m in re.finditer(r"^\| `(snowflake\.\w+)`", text, re.M)}
    last = max(rows.values(), default=1)
    for name, where in sorted(defined.items()):
        if name not in rows:
            failures.append(f"{path}:{last + 1}: the Settings table lacks {name} ({where})")
    for name, line in sorted(rows.items(), key=lambda x: x[1]):
        if name not in defined:
            failures.append(f"{path}:{line}: {name} is no setting the code defines (src/postgres)")


# --- 4. the functions ---------------------------------------------------------------------------

def functions():
    snaps = [f for f in os.listdir(os.path.join(ROOT, "pgrx-tests/checks/sql-snapshot")) if f.endswith(".sql")]
    text = read(f"pgrx-tests/checks/sql-snapshot/{sorted(snaps)[-1]}")
    found = {n.replace('"', "") for n in re.findall(r'CREATE\s+(?:OR REPLACE\s+)?FUNCTION\s+((?:\w+\.)?"?\w+"?)\s*\(', text)}
    if not found:
        failures.append("pgrx-tests/checks/sql-snapshot: no function found (see lists.py)")
    return found


def table_rows(text, header):
    """(line, first cell) of the table whose header starts with `header`."""
    at = text.find(header)
    if at < 0:
        return None
    rows = []
    lines = text[at:].split("\n")
    first = line_of(text, at)
    for k, line in enumerate(lines[2:], start=2):
        if not line.startswith("|"):
            break
        rows.append((first + k, line.split("|")[1]))
    return rows


def function_places(defined, current):
    public = {f for f in defined if "." not in f}
    # The SQL reference: a row for each function users call.
    path = "docs/sql-reference.md"
    rows = table_rows(read(path), "| function | returns |") or []
    named = {}
    for line, cell in rows:
        for n in re.findall(r"`(\w+)", cell):
            if n.startswith("snowflake_"):
                named.setdefault(n, line)
    for f in sorted(public - set(named)):
        failures.append(f"{path}:{rows[-1][0] + 1 if rows else 1}: the SQL reference lacks {f}() (the SQL snapshot has it)")
    for f, line in sorted(named.items(), key=lambda x: x[1]):
        if f not in public:
            failures.append(f"{path}:{line}: {f}() is no function of the extension (the SQL snapshot lacks it)")
    # The Security page's inventory: every function, every schema (`.name()` continues a schema).
    path = "docs/public-ids-and-security.md"
    rows = table_rows(read(path), "| function | who may execute |") or []
    listed = {}
    for line, cell in rows:
        prefix = ""
        for n in re.findall(r"`([\w.]+)\(\)`", cell):
            if n.startswith("."):
                n = prefix + n[1:]
            elif "." in n:
                prefix = n.rsplit(".", 1)[0] + "."
            listed.setdefault(n, line)
    for f in sorted(defined - set(listed)):
        failures.append(f"{path}:{rows[-1][0] + 1 if rows else 1}: the inventory \"Who may call what\" lacks {f}() "
                        f"(the SQL snapshot has it)")
    for f, line in sorted(listed.items(), key=lambda x: x[1]):
        if f not in defined:
            failures.append(f"{path}:{line}: {f}() is no function of the extension (the SQL snapshot lacks it)")
    # A description (\df+) of each function users call, in sql/.
    described = set()
    for name in sorted(os.listdir(os.path.join(ROOT, "sql"))):
        if name.endswith(".sql") and not name.startswith("pg_snowflake--"):
            described |= set(re.findall(r"COMMENT ON FUNCTION ((?:\w+\.)?\w+)\s*\(", read(f"sql/{name}")))
    for f in sorted(public - described):
        failures.append(f"sql/comments.sql:1: no description (COMMENT ON FUNCTION) of {f}() in sql/")


# --- 5. the tests -------------------------------------------------------------------------------

def tests_page():
    names = {}
    for d, kind in (("pgrx-tests/scenarios", "scenario"), ("pgrx-tests/regress/sql", "pg_regress test")):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            m = re.fullmatch(r"(\w+)\.(sh|sql)", f)
            if m and (kind == "scenario" or f.endswith(".sql")):
                names[m.group(1)] = f"{d}/{f}"
    names["pg_upgrade"] = "pgrx-tests/major_upgrade/pg_upgrade.sh"
    path = "docs/tests.md"
    text = read(path)
    lines = {m.group(1): line_of(text, m.start()) for m in re.finditer(r"^- `(\w+)`:", text, re.M)}
    end = max(lines.values(), default=1)
    for name, where in sorted(names.items()):
        if name not in lines:
            after = [l for n, l in lines.items() if n > name]
            failures.append(f"{path}:{min(after) if after else end + 1}: the list of tests lacks {name} ({where}): "
                            f"add its line")
    for name, line in sorted(lines.items(), key=lambda x: x[1]):
        if name not in names:
            failures.append(f"{path}:{line}: {name} is no test (pgrx-tests/scenarios, pgrx-tests/regress/sql)")
    return len(names)


def main():
    current = version()
    texts = []
    for path in files():
        if frozen(path, current):
            continue
        try:
            text = read(path)
        except UnicodeDecodeError:
            continue
        if path == "CHANGELOG.md":
            text = unreleased_changelog(text, current)
        texts.append((path, text))
    all_presets = presets()
    names = [n for n, _ in all_presets]
    if names:
        checked = preset_blocks(all_presets, texts)
        stale_copies("presets", "src/core/src/presets.rs", names, texts, checked)
    acts = actions()
    if acts:
        stale_copies("actions of as_owner()", "src/postgres/sql_api/as_owner.rs", acts, texts)
    defined_settings = settings()
    settings_page(defined_settings)
    defined_functions = functions()
    function_places(defined_functions, current)
    tests = tests_page()
    for f in failures:
        print(f)
    if failures:
        print(f"lists.py: {len(failures)} places out of step with their source")
        return 1
    print(f"one fact, one place: {len(names)} presets, {len(acts)} actions of as_owner(), {len(defined_settings)} settings, "
          f"{len(defined_functions)} functions, {tests} tests; no stale copy in {len(texts)} files")
    return 0


sys.exit(main())
