#!/usr/bin/env python3
"""Finds import cycles between the modules of one folder of Rust code: `crate::m`, `super::m` and
`super::super::m` references (in `use` lines and in paths), and `use super::{a, b}` groups. A
module's tests (`#[cfg(test)]` and below) and comments are left out.

Usage: module_cycles.py DIR PREFIX...   (PREFIX: how files in DIR name their siblings, e.g.
`crate::` for a crate root's modules, `super::` for a module folder's). Exit 1 on a cycle."""
import re
import sys
from pathlib import Path


def references(text, prefixes, names):
    text = text.split("#[cfg(test)]")[0]
    text = re.sub(r"//.*", "", text)  # comments and doc links are no dependency
    found = set()
    for prefix in prefixes:
        # `super::super::m` in a file's inline module (e.g. `mod settings { ... }`) names a
        # sibling as `super::m` does at the file's top: a run of the prefix counts as one.
        p = "(?:" + re.escape(prefix) + ")+"
        for m in re.finditer(p + r"(\w+)", text):
            found.add(m.group(1))
        for m in re.finditer(p + r"\{([^}]*)\}", text):
            found.update(re.findall(r"\b(\w+)\b", m.group(1)))
    return {n for n in found if n in names}


def main():
    folder, prefixes = Path(sys.argv[1]), sys.argv[2:]
    files = {f.stem: f for f in folder.glob("*.rs") if f.stem not in ("lib", "mod")}
    files.update({d.name: d / "mod.rs" for d in folder.iterdir() if (d / "mod.rs").is_file()})
    graph = {}
    for name, path in files.items():
        text = path.read_text()
        if path.name == "mod.rs":  # a module folder: its files reach the folder's siblings with
            # super::super:: (their own siblings, with one super::, are inside the folder)
            for f in path.parent.glob("*.rs"):
                inner = re.sub(r"(?<!super::)super::(?!super::)", "self::", f.read_text())
                text += inner.replace("super::super::", "super::")
        graph[name] = references(text, prefixes, set(files)) - {name}
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                return stack[stack.index(m):] + [m]
            if m not in state and (cycle := visit(m)):
                return cycle
        state[n] = "done"
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (cycle := visit(n)):
            print(f"{folder}: import cycle: {' -> '.join(cycle)}")
            return 1
    print(f"{folder}: {len(graph)} modules, no import cycle")
    return 0


sys.exit(main())
