#!/usr/bin/env python3
"""What the client packages take from the rest of the repository, written into them: the presets,
generated from the core's (src/core/src/presets.rs, the one source of every preset's epoch, tick and
bit widths), as clients/python/src/pg_snowflake/presets.py and clients/js/presets.js; the licence
(LICENSE, which each package ships); and the version (Cargo.toml's, which pyproject.toml and
package.json must carry). `--check` writes nothing and fails, naming the file, where a package
differs from what this would write, so that a preset changed in the core without the clients fails
the checks (pgrx-tests/checks/checks.sh runs it). The packages' tests compare each preset with the
server's `snowflake_decode(id, preset)` as well (pgrx-tests/scenarios/client_packages.sh).

Usage: python3 clients/generate.py [--check] [ROOT]   (ROOT: a checkout, default this one)
"""
import os
import re
import sys

CHECK = "--check" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--check"]
ROOT = os.path.abspath(ARGS[0] if ARGS else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SOURCE = "src/core/src/presets.rs"
FIELDS = ["name", "epoch_ms", "tick_ms", "timestamp_bits", "machine_bits", "sequence_bits", "sequence_above_machine"]


def presets():
    """[(comment, {field: value})] of PRESETS, in its order."""
    with open(os.path.join(ROOT, SOURCE)) as f:
        text = f.read()
    body = text[text.index("pub const PRESETS: &[Preset] = &["):]
    body = body[:body.index("\n];")]
    out = []
    # Each entry to the line that closes it (an entry's own example has braces of its own); only
    # the layout's fields are the packages' (the publisher's source and example stay in the core).
    for m in re.finditer(r"((?:\s*//[^\n]*\n)*)\s*Preset \{\n(.*?)\n    \},", body, re.S):
        comment = " ".join(line.strip()[2:].strip() for line in m.group(1).strip().split("\n") if line.strip())
        values = {}
        for field, value in re.findall(r"^\s*(\w+):\s*(.+),$", m.group(2), re.M):
            if field not in FIELDS:
                continue
            value = value.strip()
            if value.startswith('"'):
                values[field] = value.strip('"')
            elif value in ("true", "false"):
                values[field] = value == "true"
            else:
                values[field] = int(value.replace("_", ""))
        if sorted(values) != sorted(FIELDS):
            sys.exit(f"{SOURCE}: a preset with the fields {sorted(values)}, not {sorted(FIELDS)}: update {__file__}")
        out.append((comment, values))
    if len(out) < 5:
        sys.exit(f"{SOURCE}: found {len(out)} presets: the file moved; update {__file__}")
    return out


HEAD = "generated from src/core/src/presets.rs by clients/generate.py: do not edit"


def python_text(found):
    lines = [f'"""The layouts of other systems\' snowflake ids, as the server knows them ({HEAD})."""', "",
             "# name: (epoch_ms, tick_ms, timestamp_bits, machine_bits, sequence_bits, sequence_above_machine)",
             "PRESETS = {"]
    for comment, v in found:
        lines.append(f"    # {comment}")
        lines.append(f'    "{v["name"]}": ({v["epoch_ms"]}, {v["tick_ms"]}, {v["timestamp_bits"]}, {v["machine_bits"]}, '
                     f'{v["sequence_bits"]}, {v["sequence_above_machine"]}),')
    lines.append("}")
    return "\n".join(lines) + "\n"


def js_text(found):
    lines = [f"// The layouts of other systems' snowflake ids, as the server knows them ({HEAD}).", "",
             "/** @type {Record<string, {epochMs: number, tickMs: number, timestampBits: number, machineBits: number, sequenceBits: number, sequenceAboveMachine: boolean}>} */",
             "export const PRESET_FIELDS = Object.freeze({"]
    for comment, v in found:
        lines.append(f"  // {comment}")
        lines.append(f'  {v["name"]}: Object.freeze({{ epochMs: {v["epoch_ms"]}, tickMs: {v["tick_ms"]}, timestampBits: {v["timestamp_bits"]}, '
                     f'machineBits: {v["machine_bits"]}, sequenceBits: {v["sequence_bits"]}, '
                     f'sequenceAboveMachine: {"true" if v["sequence_above_machine"] else "false"} }}),')
    lines.append("});")
    return "\n".join(lines) + "\n"


def version():
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        return re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)


def with_version(rel, pattern, v):
    """The file's text with its version (the first match of `pattern`'s group) set to v."""
    with open(os.path.join(ROOT, rel)) as f:
        text = f.read()
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit(f"{rel}: no version ({pattern}): update {__file__}")
    return text[:m.start(1)] + v + text[m.end(1):]


def main():
    found = presets()
    v = version()
    with open(os.path.join(ROOT, "LICENSE")) as f:
        licence = f.read()
    stale = []
    for rel, text in (("clients/python/src/pg_snowflake/presets.py", python_text(found)), ("clients/js/presets.js", js_text(found)),
                      ("clients/python/LICENSE", licence), ("clients/js/LICENSE", licence),
                      ("clients/python/pyproject.toml", with_version("clients/python/pyproject.toml", r'^version = "([^"]+)"', v)),
                      ("clients/python/src/pg_snowflake/__init__.py", with_version("clients/python/src/pg_snowflake/__init__.py", r'^__version__ = "([^"]+)"', v)),
                      ("clients/js/package.json", with_version("clients/js/package.json", r'^  "version": "([^"]+)"', v))):
        path = os.path.join(ROOT, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        if CHECK:
            stale.append(rel)
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {rel}")
    if stale:
        for rel in stale:
            print(f"{rel}: not what clients/generate.py makes of {SOURCE}, LICENSE and Cargo.toml's version: run python3 clients/generate.py")
        sys.exit(1)
    if CHECK:
        print(f"clients/: both packages have {SOURCE}'s presets ({', '.join(p['name'] for _, p in found)}), LICENSE and version {v}")


main()
