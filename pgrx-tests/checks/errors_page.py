#!/usr/bin/env python3
"""The Errors page (docs/errors.md) lists every error the code can raise (issue 35). Its rows are
compared with the code, statically (the README check raises the first table's rows on a server):

1. every error of the core (src/core/src/error.rs, `Error` and `LayoutError`) has a row with the
   SQLSTATE that src/postgres/errors.rs gives it and a message holding the longest fixed part of
   the core's message; a row of a table with a column "where the tests raise it" must have the
   core's hint, word for word, when that hint is fixed text;
2. the mark write's table (its header starts `| system error |`) gives each system error the
   SQLSTATE of src/postgres/errors.rs's file_access(), and every one of them;
3. every other error the shell raises (an ErrorReport at ERROR level in src/postgres) has a row
   with its SQLSTATE and the fixed part of its message;
4. every `RAISE EXCEPTION` of sql/ (but the frozen and generated scripts pg_snowflake--*.sql)
   has an ERRCODE and a row with it and the fixed part of its message, but those caught inside
   the function, listed below with the reason; and every SQLSTATE that sql/ raises from a table of
   refusals (convert_column.sql's blockers) has a row;
5. a row of the table of errors raised elsewhere that names a scenario is in that scenario's
   expected output (pgrx-tests/expected/NAME.out): its SQLSTATE (where the output shows one) and
   the fixed part of its message;
6. the messages made of parts (issue 52: four were missing): every reason a machine id source can
   give (each format and literal of the functions that build an Error::MachineIdSource, and of the
   functions whose errors they turn into one) has a row of its SQLSTATE holding "no machine id
   from" and the reason's fixed part; every case of a message's inner match (the lapsed lease of
   "no machine id is held", say) has a row of its SQLSTATE holding the case's fixed part; and every
   hint of a refusal of the machine id (one per claim_status::Trouble) is a row's hint;
7. every reason a public id is refused for (issue 62: each spelling its own, src/core/src/public_id.rs's
   `Spelling::reason` and `from_public`) has a row of its SQLSTATE holding "invalid snowflake public
   id" and the reason's fixed part.
A failure names the file and line.

Usage: python3 pgrx-tests/checks/errors_page.py [ROOT]   (ROOT: a checkout, default this one)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []

# pgrx's names of the SQLSTATEs the code uses (PostgreSQL's errcodes.txt). A new one: add it.
SQLSTATES = {
    "ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE": "55000", "ERRCODE_INVALID_PARAMETER_VALUE": "22023",
    "ERRCODE_DATETIME_FIELD_OVERFLOW": "22008", "ERRCODE_DATA_CORRUPTED": "XX001",
    "ERRCODE_CONFIG_FILE_ERROR": "F0000", "ERRCODE_INVALID_TEXT_REPRESENTATION": "22P02",
    "ERRCODE_LOCK_NOT_AVAILABLE": "55P03", "ERRCODE_IO_ERROR": "58030", "ERRCODE_SYSTEM_ERROR": "58000",
    "ERRCODE_READ_ONLY_SQL_TRANSACTION": "25006", "ERRCODE_INSUFFICIENT_PRIVILEGE": "42501",
    "ERRCODE_UNDEFINED_FILE": "58P01", "ERRCODE_DUPLICATE_FILE": "58P02", "ERRCODE_WRONG_OBJECT_TYPE": "42809",
    "ERRCODE_DISK_FULL": "53100", "ERRCODE_OUT_OF_MEMORY": "53200", "ERRCODE_INSUFFICIENT_RESOURCES": "53000",
    "ERRCODE_PROGRAM_LIMIT_EXCEEDED": "54000", "ERRCODE_ADMIN_SHUTDOWN": "57P01",
    "ERRCODE_SUCCESSFUL_COMPLETION": "00000", "ERRCODE_NULL_VALUE_NOT_ALLOWED": "22004",
    "ERRCODE_UNDEFINED_TABLE": "42P01",
}
# RAISEs of sql/ that never reach the caller: (file, the message's fixed part): why.
CAUGHT = {
    ("sql/check_peers.sql", "its connection string does not parse"): "caught: a peer's problem in the result",
    ("sql/check_peers.sql", "pg_snowflake is not installed in that database"): "caught: a peer's problem in the result",
    ("sql/check_peers.sql", "it did not answer within"): "caught: a peer's problem in the result",
    ("sql/check_peers.sql", "rows (one was asked for)"): "caught: a peer's problem in the result",
    ("sql/check_peers.sql", "the query could not be sent: the link is still busy with its earlier answer"):
        "caught: a peer's problem in the result",
    ("sql/check_peers.sql", "it did not end its answer within"): "caught: a peer's problem in the result",
    ("sql/check_peers.sql", "it sent a second result after its answer ("): "caught: a peer's problem in the result",
}


# Errors of the core that never reach SQL as themselves: why.
UNRAISED = {
    ("Error", "PublicKeyInvalid"): "PublicKey::from_hex's error; the key file's reader turns it into the key file's (F0000, KeyFile)",
}


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def code(name, where):
    if name not in SQLSTATES:
        failures.append(f"{where}: {name} is not in errors_page.py's SQLSTATES: add it")
        return "?????"
    return SQLSTATES[name]


def fixed_part(fmt):
    """The longest piece of a format string (Rust's {..} or PL/pgSQL's %) without a placeholder."""
    pieces = re.split(r"\{[^{}]*\}|%[sIL]?", fmt.replace("{{", "").replace("}}", ""))
    return max(pieces, key=len).strip()


def rust_fn(text, name, indent=""):
    """The body of `fn name(`, to the closing brace at `indent`."""
    start = text.index(f"fn {name}(")
    body = text[start:]
    end = re.search(rf"^{indent}}}", body, re.M)
    return body[:end.start()] if end else body


def arms(body, enum):
    """[(variant, guard-free arm text)] of a match over `enum` in `body`."""
    out = []
    for m in re.finditer(rf"{enum}::(\w+)\s*(?:\{{[^}}]*\}}|\([^)]*\))?\s*(if [^=]*)?=>", body):
        out.append((m.group(1), m.end()))
    return out


def core_messages():
    """{(enum, variant): [message format, ...]} and {(enum, variant): [fixed hint or None, ...]}
    (a variant may have several arms: one per case its fields select)."""
    text = read("src/core/src/error.rs")
    messages, hints = {}, {}
    for enum in ("Error", "LayoutError"):
        impl = text[text.index(f"impl {enum} {{"):]
        for fn, store in (("message", messages), ("hint", hints)):
            body = rust_fn(impl, fn, "    ")
            found = arms(body, enum)
            for n, (variant, at) in enumerate(found):
                end = found[n + 1][1] if n + 1 < len(found) else len(body)
                arm = body[at:end]
                lit = re.search(r'"((?:[^"\\]|\\.)*)"', arm)
                value = lit.group(1).replace('\\"', '"') if lit else None
                if fn == "message":
                    store.setdefault((enum, variant), []).append(value)
                else:
                    fixed = value if value and ".into()" in arm[:arm.find('"') + len(value) + 12] else None
                    store.setdefault((enum, variant), []).append(fixed)
    return messages, hints


def shell_sqlstates():
    text = read("src/postgres/errors.rs")
    body = rust_fn(text, "sqlstate")
    out = {}
    for m in re.finditer(r"((?:\|?\s*(?:Error|LayoutError)::\w+(?:\s*\{[^}]*\})?(?:\([^)]*\))?\s*)+)=>\s*(?:match[^{]*\{|\{?\s*(\w+)|(\w+\([^)]*\)))", body):
        names = re.findall(r"(Error|LayoutError)::(\w+)", m.group(1))
        target = m.group(2) or m.group(3)
        for enum, variant in names:
            if enum == "Error" and variant == "Layout":
                continue
            out[(enum, variant)] = target
    fa = rust_fn(text, "file_access")
    errnos = {}
    for m in re.finditer(r"(Some\(([^)]*)\)|_)\s*=>\s*(\w+)", fa):
        st = code(m.group(3), "src/postgres/errors.rs")
        if m.group(1) == "_":
            errnos["*"] = st
        else:
            for e in re.findall(r"libc::(\w+)", m.group(2)):
                errnos[e] = st
    return out, errnos


def rust_fns(text):
    """{name: body} of every `fn` of a Rust file (bodies found by their braces, strings skipped)."""
    out = {}
    for m in re.finditer(r"\bfn (\w+)\s*(?:<[^>]*>)?\(", text):
        i = text.find("{", m.end())
        semi = text.find(";", m.end())
        if i < 0 or (0 <= semi < i):
            continue  # a declaration without a body
        depth, j = 0, i
        while j < len(text):
            ch = text[j]
            if ch == '"':
                j += 1
                while j < len(text) and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
            elif text.startswith("'{'", j) or text.startswith("'}'", j):
                j += 2
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.setdefault(m.group(1), []).append((text[i:j + 1], text[:m.start()].count("\n") + 1))
    return out


LITERAL = r'"((?:[^"\\]|\\.)*)"'


def made_strings(body):
    """The literals a body makes messages of: format!'s, and those turned into a String."""
    out = [m.group(1) for m in re.finditer(r"format!\(\s*" + LITERAL, body)]
    out += [m.group(1) for m in re.finditer(LITERAL + r"\s*\.(?:into|to_string|to_owned)\(\)", body)]
    return [o.replace('\\"', '"') for o in out]


def machine_id_reasons():
    """[(file:line, reason's format)] of every reason an Error::MachineIdSource can carry: the
    strings made in each function that builds one, and in each function whose error is mapped to
    one (`f(...).map_err(|..| Error::MachineIdSource`)."""
    files = {}
    for top in ("src/core/src", "src/postgres"):
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                rel = os.path.relpath(os.path.join(d, n), ROOT)
                if n.endswith(".rs") and rel not in ("src/core/src/error.rs", "src/postgres/errors.rs"):
                    files[rel] = read(rel)
    builders, mapped = [], set()
    for rel, text in files.items():
        for name, bodies in rust_fns(text).items():
            for body, line in bodies:
                if "MachineIdSource" in body and not name.startswith("test") and "#[test]" not in text[:text.find(body)][-200:]:
                    builders.append((rel, line, body))
        for m in re.finditer(r"(\w+)\((?:[^;{}])*?\)\s*\.map_err\(\s*\|[^|]*\|\s*Error::MachineIdSource", text):
            mapped.add(m.group(1))
    for rel, text in files.items():
        for name in mapped:
            for body, line in rust_fns(text).get(name, []):
                builders.append((rel, line, body))
    reasons = []
    for rel, line, body in builders:
        if "mod tests" in rel:
            continue
        for fmt in made_strings(body):
            if fmt.startswith("snowflake.") and " " not in fmt:
                continue  # a setting's name
            reasons.append((f"{rel}:{line}", fmt))
    return reasons


def inner_cases(enum, variant):
    """The formats and literals of the inner match of `enum::variant`'s message arm, past its
    first (the frame the rule 1 compares)."""
    text = read("src/core/src/error.rs")
    body = rust_fn(text[text.index(f"impl {enum} {{"):], "message", "    ")
    found = arms(body, enum)
    for n, (v, at) in enumerate(found):
        if v == variant:
            end = found[n + 1][1] if n + 1 < len(found) else len(body)
            return re.findall(LITERAL, body[at:end])[1:]
    return []


def trouble_hints():
    """The hints of the refusals of the machine id: one per claim_status::Trouble."""
    text = read("src/core/src/error.rs")
    body = rust_fn(text[text.index("impl Error {"):], "hint", "    ")
    return [(m.group(1), m.group(2).replace('\\"', '"')) for m in re.finditer(r"Trouble::(\w+)\s*=>\s*" + LITERAL, body)]


def public_id_reasons():
    """[(file:line, reason's format)] of every reason an Error::InvalidPublicId can carry: the
    strings made in `Spelling::reason` and in `from_public`."""
    rel = "src/core/src/public_id.rs"
    text = read(rel)
    fns = rust_fns(text)
    out = []
    for name in ("reason", "from_public"):
        for body, line in fns.get(name, []):
            out += [(f"{rel}:{line}", fmt) for fmt in made_strings(body)]
    return out


def page_rows():
    """[(line, table header, cells)] of every row of every table of the Errors page."""
    rows, header = [], None
    for n, line in enumerate(read("docs/errors.md").split("\n")):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        rows.append((n + 1, header, cells))
    return rows


def unquote(cell):
    cell = cell.strip()
    if cell.startswith("`` ") and cell.endswith(" ``"):
        cell = cell[3:-3]
    return cell.strip("`").replace("\\|", "|")


def main():
    rows = page_rows()
    errors = [(line, h, c) for line, h, c in rows if h and h[0] == "SQLSTATE"]
    by_state = [(c[0], unquote(c[1]), line, h, c) for line, h, c in errors]

    def has(state, fragment):
        return [r for r in by_state if r[0] == state and fragment in r[1]]

    messages, hints = core_messages()
    states, errnos = shell_sqlstates()
    for (enum, variant), target in sorted(states.items()):
        if target == "file_access":
            continue  # the mark write: its table, below
        st = code(target, "src/postgres/errors.rs")
        if (enum, variant) in UNRAISED:
            continue
        for fmt in messages.get((enum, variant), [None]):
            if fmt is None:
                if not any(r[0] == st for r in by_state):
                    failures.append(f"docs/errors.md: no row with {st}, the SQLSTATE of {enum}::{variant}")
                continue
            frag = fixed_part(fmt)
            found = has(st, frag)
            if not found:
                failures.append(f"docs/errors.md: no row for {enum}::{variant}: {st} with a message holding {frag!r}")
            fixed_hints = [h for h in hints.get((enum, variant), []) if h]
            for _, _, line, h, c in found:
                if len(h) > 3 and fixed_hints and c[2] not in fixed_hints:
                    failures.append(f"docs/errors.md:{line}: the hint of {enum}::{variant} differs from the core's: {fixed_hints[0]!r}")
    # 2. the mark write's table.
    mark_rows = [(line, c) for line, h, c in rows if h and h[0] == "system error"]
    if not mark_rows:
        failures.append("docs/errors.md: no table of the mark write's SQLSTATEs (a header starting `| system error |`)")
    listed = {}
    for line, c in mark_rows:
        names = ["*"] if c[0].lower().startswith("any other") else re.findall(r"`(E[A-Z]+)`", c[0])
        for e in names:
            listed[e] = (line, c[1].strip())
    for e, st in sorted(errnos.items()):
        if e not in listed:
            failures.append(f"docs/errors.md: the mark write's table lacks {e if e != '*' else 'any other error'} ({st})")
        elif listed[e][1] != st:
            failures.append(f"docs/errors.md:{listed[e][0]}: the mark write gives {e} the SQLSTATE {st} (src/postgres/errors.rs), not {listed[e][1]}")
    for e, (line, _) in sorted(listed.items()):
        if e not in errnos:
            failures.append(f"docs/errors.md:{line}: {e} is not a system error that file_access() names")
    # 3. other ErrorReports of the shell.
    for d, _, names in os.walk(os.path.join(ROOT, "src/postgres")):
        for n in sorted(names):
            rel = os.path.relpath(os.path.join(d, n), ROOT)
            if not n.endswith(".rs") or rel == "src/postgres/errors.rs":
                continue
            text = read(rel)
            # A helper that raises with a fixed SQLSTATE (fn refuse(message: String) -> ! {
            # ErrorReport::new(PgSqlErrorCode::X, message, ...)): its calls are errors too.
            calls = []
            for h in re.finditer(r"fn (\w+)\(message: String\) -> ! \{\s*ErrorReport::new\(PgSqlErrorCode::(\w+), message", text):
                for c in re.finditer(h.group(1) + r"\(format!\(\s*\"((?:[^\"\\]|\\.)*)\"", text):
                    calls.append((c, h.group(2), c.group(1)))
            for c, errcode, message in calls:
                st = code(errcode, rel)
                frag = fixed_part(message)
                if not has(st, frag):
                    line = text[:c.start()].count("\n") + 1
                    failures.append(f"{rel}:{line}: no row of docs/errors.md with {st} and a message holding {frag!r}")
            for m in re.finditer(r"ErrorReport::new\(\s*PgSqlErrorCode::(\w+),\s*(?:format!\(\s*)?\"((?:[^\"\\]|\\.)*)\"", text):
                rest = text[m.end():m.end() + 1500]
                level = re.search(r"PgLogLevel::(\w+)", rest)
                if not level or level.group(1) != "ERROR":
                    continue
                st = code(m.group(1), rel)
                frag = fixed_part(m.group(2))
                if not has(st, frag):
                    line = text[:m.start()].count("\n") + 1
                    failures.append(f"{rel}:{line}: no row of docs/errors.md with {st} and a message holding {frag!r}")
    # 4. sql/.
    for n in sorted(os.listdir(os.path.join(ROOT, "sql"))):
        if not n.endswith(".sql") or n.startswith("pg_snowflake--"):
            continue
        rel = f"sql/{n}"
        text = read(rel)
        for m in re.finditer(r"RAISE\s+EXCEPTION\s+'((?:[^']|'')*)'(.*?);", text, re.S):
            line = text[:m.start()].count("\n") + 1
            frag = fixed_part(m.group(1).replace("''", "'"))
            if frag in ("",):
                continue  # RAISE EXCEPTION '%', ...: a message made elsewhere
            st = re.search(r"ERRCODE\s*=\s*'([0-9A-Z]{5})'", m.group(2))
            if not st:
                failures.append(f"{rel}:{line}: RAISE EXCEPTION without an ERRCODE (it would be P0001)")
                continue
            if (rel, frag) in CAUGHT or any(rel == f and frag.startswith(p) for f, p in CAUGHT):
                continue
            if not has(st.group(1), frag):
                failures.append(f"{rel}:{line}: no row of docs/errors.md with {st.group(1)} and a message holding {frag!r}")
        for m in re.finditer(r"\(?\d+,\s*(?:\d+,\s*)?'([0-9A-Z]{5})',", text):
            if not any(r[0] == m.group(1) for r in by_state):
                line = text[:m.start()].count("\n") + 1
                failures.append(f"{rel}:{line}: no row of docs/errors.md with {m.group(1)}")
    # 5. rows raised by a scenario.
    for line, h, c in errors:
        if len(h) < 4:
            continue
        for scen in re.findall(r"`(\w+)` scenario|scenario `(\w+)`", c[3]):
            name = scen[0] or scen[1]
            path = f"pgrx-tests/expected/{name}.out"
            if not os.path.isfile(os.path.join(ROOT, path)):
                failures.append(f"docs/errors.md:{line}: no scenario {name} ({path})")
                continue
            out = read(path)
            frag = fixed_part(unquote(c[1]).replace("...", "{}").replace(" N ", " {} "))
            if frag not in out:
                failures.append(f"docs/errors.md:{line}: {path} does not show this message ({frag!r})")
            else:
                # Where the output shows a SQLSTATE before the message, it is the row's.
                # (Each code on the message's line, psql's level words aside: "ERROR:  55000: ...".)
                shown = set(re.findall(r"\b([0-9A-Z]{5}): (?=[^\n]*" + re.escape(frag) + ")", out)) - {"ERROR", "FATAL", "PANIC"}
                if shown and c[0] not in shown:
                    failures.append(f"docs/errors.md:{line}: {path} shows this message with {', '.join(sorted(shown))}, not {c[0]}")
    # 6. messages made of parts.
    source_state = code(states.get(("Error", "MachineIdSource"), "?"), "src/postgres/errors.rs")
    reasons = machine_id_reasons()
    for where, fmt in reasons:
        frag = fixed_part(fmt)
        if not [r for r in has(source_state, frag) if "no machine id from" in r[1]]:
            failures.append(f"{where}: no row of docs/errors.md with {source_state} and a message 'no machine id from ...' holding {frag!r}")
    held_state = code(states.get(("Error", "MachineIdNotHeld"), "?"), "src/postgres/errors.rs")
    cases = inner_cases("Error", "MachineIdNotHeld")
    for fmt in cases:
        frag = fixed_part(fmt)
        if not has(held_state, frag):
            failures.append(f"docs/errors.md: no row for a case of Error::MachineIdNotHeld: {held_state} with a message holding {frag!r}")
    hints_listed = {c[2] for _, _, c in errors if len(c) > 2}
    troubles = trouble_hints()
    for trouble, hint in troubles:
        if hint not in hints_listed:
            failures.append(f"docs/errors.md: no row with the hint of Trouble::{trouble} ({hint[:60]!r}...)")
    # 7. the reasons a public id is refused for.
    public_state = code(states.get(("Error", "InvalidPublicId"), "?"), "src/postgres/errors.rs")
    spellings = public_id_reasons()
    for where, fmt in spellings:
        frag = fixed_part(fmt)
        if not [r for r in has(public_state, frag) if "invalid snowflake public id" in r[1]]:
            failures.append(f"{where}: no row of docs/errors.md with {public_state} and a message 'invalid snowflake public id ...' holding {frag!r}")
    if len(spellings) < 5:
        failures.append(f"errors_page.py: found {len(spellings)} reasons of InvalidPublicId: the code moved; update the check")
    if len(reasons) < 10 or len(cases) < 3 or len(troubles) < 8:
        failures.append(f"errors_page.py: found {len(reasons)} reasons of MachineIdSource, {len(cases)} cases of MachineIdNotHeld, {len(troubles)} hints of Trouble: the code moved; update the check")
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print(f"docs/errors.md: {len(states)} errors of the core, {len(errnos)} system errors of the mark write, the shell's and sql/'s errors: each has its row")


if __name__ == "__main__":
    main()
