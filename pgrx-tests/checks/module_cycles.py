#!/usr/bin/env python3
"""Finds import cycles between the modules of one folder of Rust code: `crate::m`, `super::m` and
`super::super::m` references (in `use` lines and in paths), and `use super::{a, b}` groups. A
module's tests (`#[cfg(test)]` and below) and comments are left out.

With --order FILE: FILE (a crate root's doc comment) lists the modules, leaves first, as lines
`//! - [`name`]: ...`; each module may use only those listed above it (exit 1 if one uses a module
listed below it, or if a module is missing from the list).

Usage: module_cycles.py DIR PREFIX... [--order FILE]   (PREFIX: how files in DIR name their
siblings, e.g. `crate::` for a crate root's modules, `super::` for a module folder's). Exit 1 on a
cycle."""
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


def listed_order(graph, order_file):
    """1 if a module uses one listed below it in order_file's list, or is not listed."""
    text = Path(order_file).read_text()
    order = re.findall(r"^//! - \[`(\w+)`\]", text, re.M)
    # the modules it declares, but those of tests (`#[cfg(test)]` on the line before)
    declared = set(re.findall(r"^(?<!#\[cfg\(test\)\]\n)(?:pub )?mod (\w+);", text, re.M))
    bad = 0
    for name in sorted(set(graph) & declared):
        if name not in order:
            print(f"{order_file}: module {name} is not in its list of modules")
            bad = 1
            continue
        for dep in sorted(graph[name]):
            if dep in order and order.index(dep) > order.index(name):
                print(f"{order_file}: {name} uses {dep}, which is listed below it")
                bad = 1
    return bad


def main():
    args = sys.argv[1:]
    order_file = None
    if "--order" in args:
        i = args.index("--order")
        order_file = args[i + 1]
        del args[i : i + 2]
    folder, prefixes = Path(args[0]), args[1:]
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
    if order_file and listed_order(graph, order_file):
        return 1
    print(f"{folder}: {len(graph)} modules, no import cycle" + (f", each uses only those listed above it in {order_file}" if order_file else ""))
    return 0


sys.exit(main())
