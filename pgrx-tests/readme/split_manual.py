#!/usr/bin/env python3
"""Splits a long README.md into a short README and a manual of pages in docs/, deterministically:
whole `##`/`###` sections are moved by the mapping below, every internal link is rewritten to the
page its anchor ends up on, and the short README is written from pgrx-tests/readme/README.template.md.

    python3 pgrx-tests/readme/split_manual.py [SOURCE_README] [OUT_DIR]

SOURCE_README defaults to README.md and OUT_DIR to the checkout: it writes OUT_DIR/README.md,
OUT_DIR/docs/*.md and OUT_DIR/mkdocs.yml's nav. It refuses (exit 1, naming it) a heading of the
source the mapping does not place, a heading the mapping names that the source lacks, a link to
an anchor no heading has, and a template placeholder it cannot fill: it never drops text. Every
line of the source ends up in exactly one output (checked at the end).
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))

# The manual: (file, navigation label, the page's H1 or None, the headings it takes, in any
# order; each heading takes its own text, up to the next heading of any level). With H1 None the
# page's first top heading (one whose parent is not on the page) becomes its H1 and the others
# `##`; otherwise the H1 is written and every top heading becomes `##`. Every `##`/`###` heading of the source must be named here or in README_KEEPS.
PAGES = [
    ("install.md", "Installation", None, [
        "## Installation", "### Install on Debian/Ubuntu", "### Other Linux systems: the tarball",
        "### Build from source", "### Building the packages", "## Supported PostgreSQL versions"]),
    ("sql-reference.md", "SQL reference", None, [
        "## SQL reference", "### Layouts fixed in the query", "### Querying by time", "### Other systems' ids",
        "## JSON and JavaScript"]),
    ("settings.md", "Settings", None, ["## Settings"]),
    ("errors.md", "Errors", None, ["## Errors"]),
    ("public-ids-and-security.md", "Public ids and security", "Public ids and security", [
        "## Public ids", "## Security", "### Who may call what", "### The install schema",
        "### Converting tables of other owners", "### What public ids protect against, and what not",
        "### The key file", "### Connecting to peers"]),
    ("conversion.md", "Converting a table", None, ["## Converting an existing table"]),
    ("partitioning.md", "Partitioning by time", None, ["## Partitioning by time", "### With pg_partman"]),
    ("application.md", "From your application", None, [
        "## From your application", "### Python: psycopg 3", "### Python: Django",
        "### Python: SQLAlchemy 2", "### Node.js: node-postgres (`pg` 8)", "### Node.js: Postgres.js (`postgres` 3.4)",
        "### Java: JDBC", "### Rust: tokio-postgres", "### Pitfalls"]),
    ("operations.md", "Operations and the mark", None, [
        "## Operations", "### The high-water mark", "### When the clock goes back", "### Waits, and what ends them",
        "### `snowflake_stats()`", "### Clock faults that outlive a restart"]),
    ("failover-and-backups.md", "Failover and backups", "Failover and backups", [
        "### Failover, backups and copies", "### Patroni", "### Copies and layout changes", "## Backup and restore"]),
    ("many-servers.md", "Many servers and replication", None, ["## Running on many servers", "### Citus"]),
    ("upgrading.md", "Upgrading", None, ["## Upgrading", "### Extension versions", "### PostgreSQL majors"]),
    ("tests.md", "Tests", None, ["## Tests"]),
    ("benchmarks.md", "Benchmarks", None, ["## Benchmarks"]),
    ("troubleshooting.md", "Troubleshooting", None, ["## Troubleshooting"]),
]
# Sections that stay in the README (the template places them, whole, with `{{## Heading}}`;
# `{{preamble}}` is the text above the first `##`; the template's map of the manual must link
# every page).
README_KEEPS = ["## Why", "## Quick start"]
TEMPLATE = os.path.join(HERE, "README.template.md")


class SplitError(Exception):
    pass


def slug(text):
    """GitHub's anchor of a heading (and MkDocs' with its default toc, for these headings: the
    site's build checks that they agree)."""
    text = re.sub(r"`", "", text.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(lines):
    """[(index, level, text)] of the `#` headings outside code blocks."""
    out = []
    fence = None
    for i, line in enumerate(lines):
        s = line.strip()
        if fence:
            if s.startswith(fence) and s.strip("`~") == "":
                fence = None
            continue
        m = re.match(r"(```+|~~~+)", s)
        if m:
            fence = m.group(1)
            continue
        m = re.match(r"(#{1,6}) (.*)$", line)
        if m:
            out.append((i, len(m.group(1)), m.group(2).strip()))
    return out


def split(source_text, template_text):
    lines = source_text.rstrip("\n").split("\n")
    hs = headings(lines)
    if not hs or hs[0][1] != 1:
        raise SplitError("README.md:1: the source must start with its `# title`")
    # Each heading's own text: from it to the next heading of any level.
    chunks = {}
    order = []
    for n, (i, level, text) in enumerate(hs[1:], start=1):
        end = hs[n + 1][0] if n + 1 < len(hs) else len(lines)
        key = "#" * level + " " + text
        if key in chunks:
            raise SplitError(f"README.md:{i + 1}: the heading {key!r} appears twice; the mapping needs unique headings")
        if level > 3:
            raise SplitError(f"README.md:{i + 1}: a level-{level} heading {key!r}: the mapping places `##`/`###` only")
        chunks[key] = (i, end, level, text)
        order.append(key)
    preamble = (hs[0][0], hs[1][0] if len(hs) > 1 else len(lines))
    if any(l.strip() for l in lines[:hs[0][0]]):
        raise SplitError("README.md:1: text above the `# title`")

    placed = {}
    for f, _, _, keys in PAGES:
        for k in keys:
            if k in placed:
                raise SplitError(f"split_manual.py: {k!r} is mapped twice ({placed[k]} and {f})")
            placed[k] = f
    for k in README_KEEPS:
        placed[k] = "README.md"
    unknown = [k for k in order if k not in placed]
    if unknown and any(k in template_text for k in unknown):
        raise SplitError("README.md: this README looks split already (it has the template's own sections): "
                         "run the script on the long README, e.g. `git show main:README.md > /tmp/long.md`")
    if unknown:
        raise SplitError("\n".join(
            f"README.md:{chunks[k][0] + 1}: the section {k!r} is not in the mapping of pgrx-tests/readme/split_manual.py "
            f"(PAGES or README_KEEPS): say which page it goes to" for k in unknown))
    missing = [k for k in placed if k not in chunks]
    if missing:
        raise SplitError("\n".join(f"split_manual.py: the mapping names {k!r}, which the README does not have (renamed?)" for k in missing))

    # Where each anchor ends up, and the level each heading gets on its page.
    anchor_page = {}
    for k in order:
        a = slug(chunks[k][3])
        anchor_page[a] = placed[k]
    page_h1 = {}
    shift = {}
    for f, label, h1, keys in PAGES:
        keyset = set(keys)
        # A top heading is one whose parent (the nearest heading above it of a lower level) is
        # not on the page.
        tops = []
        for k in (k for k in order if k in keyset):
            i, _, level, _ = chunks[k]
            parent = next((p for p in reversed(order[:order.index(k)]) if chunks[p][2] < level), None)
            if parent in keyset:
                shift[k] = shift[parent]
            else:
                shift[k] = (1 if h1 is None and not tops else 2) - level
                tops.append(k)
        page_h1[f] = slug(chunks[tops[0]][3]) if h1 is None else slug(h1)
        slugs = [page_h1[f]] if h1 else []
        slugs += [slug(chunks[k][3]) for k in order if k in keyset]
        dup = sorted({a for a in slugs if slugs.count(a) > 1})
        if dup:
            raise SplitError(f"split_manual.py: {f} would have two headings with the anchor #{dup[0]}: rename one, or give the page another H1")

    def link_target(anchor, from_file, line_no):
        page = anchor_page.get(anchor)
        if page is None:
            raise SplitError(f"README.md:{line_no}: a link to #{anchor}, which no heading of the README has")
        if page == from_file:
            return f"#{anchor}"
        if from_file == "README.md":
            path = f"docs/{page}"
        elif page == "README.md":
            path = "../README.md"
        else:
            path = page
        return path if page != "README.md" and page_h1[page] == anchor else f"{path}#{anchor}"

    def rewrite(src_index, line, from_file):
        """One line's links, as they must read in from_file."""
        def repl(m):
            target = m.group(2)
            if target.startswith("#"):
                return f"{m.group(1)}({link_target(target[1:], from_file, src_index + 1)})"
            if re.match(r"[a-z]+:", target) or from_file == "README.md":
                return m.group(0)
            path, _, frag = target.partition("#")
            if not os.path.exists(os.path.join(PROJECT, path)) and path not in ("README.md",):
                raise SplitError(f"README.md:{src_index + 1}: a link to {path}, which the checkout does not have")
            return f"{m.group(1)}(../{target})"
        # Not inside inline code: split on backtick spans.
        parts = re.split(r"(`+[^`]*`+)", line)
        return "".join(p if p.startswith("`") else re.sub(r"(\])\(([^)\s]+)\)", repl, p) for p in parts)

    def render(s, e, f):
        """Lines s..e of the source as they read in f: links rewritten outside code blocks."""
        out = []
        fence = None
        for n in range(s, e):
            line = lines[n]
            st = line.strip()
            if fence:
                if st.startswith(fence) and st.strip("`~") == "":
                    fence = None
                out.append(line)
                continue
            m = re.match(r"(```+|~~~+)", st)
            if m:
                fence = m.group(1)
                out.append(line)
                continue
            out.append(rewrite(n, line, f))
        while out and not out[-1].strip():
            out.pop()
        return out

    def chunk_text(k, f):
        i, end, level, text = chunks[k]
        return ["#" * (level + shift.get(k, 0)) + " " + text] + render(i + 1, end, f)

    used = set()
    outputs = {}
    for f, label, h1, keys in PAGES:
        keyset = set(keys)
        body = [f"# {h1}", ""] if h1 else []
        for k in (k for k in order if k in keyset):
            body += chunk_text(k, f) + [""]
            used.update(range(chunks[k][0], chunks[k][1]))
        outputs[f"docs/{f}"] = "\n".join(body).rstrip("\n") + "\n"

    # The README, from the template.
    def fill(m):
        what = m.group(1).strip()
        if what == "preamble":
            s, e = preamble
            used.update(range(s, e))
            return "\n".join(render(s, e, "README.md"))
        if what in README_KEEPS:
            i, end, _, _ = chunks[what]
            used.update(range(i, end))
            return "\n".join(chunk_text(what, "README.md"))
        raise SplitError(f"README.template.md: the placeholder {{{{{what}}}}} is not one this script fills")
    readme = re.sub(r"\{\{([^}]*)\}\}", fill, template_text)
    for f, _, _, _ in PAGES:
        if f"](docs/{f})" not in template_text:
            raise SplitError(f"README.template.md: its map of the manual does not link docs/{f}")
    for k in README_KEEPS:
        if k not in template_text:
            raise SplitError(f"README.template.md: it does not place {k!r}, which README_KEEPS keeps in the README")
    # Links the template writes itself (to pages, or pages' anchors) are checked by the site's
    # link check; those of the kept text are rewritten above.
    outputs["README.md"] = readme.rstrip("\n") + "\n"
    dropped = [n for n in range(len(lines)) if n not in used and lines[n].strip() and n != hs[0][0]]
    if dropped:
        raise SplitError("\n".join(f"README.md:{n + 1}: this line would be dropped: {lines[n][:80]}" for n in dropped))

    nav = ["nav:", "  - Home: index.md"] + [f"  - {label}: {f}" for f, label, _, _ in PAGES]
    return outputs, nav


def write_nav(path, nav):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^nav:\n(?:  - .*\n)*", text, re.M)
    if not m:
        raise SplitError(f"{path}: no `nav:` list to replace")
    text = text[:m.start()] + "\n".join(nav) + "\n" + text[m.end():]
    with open(path, "w") as f:
        f.write(text)


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(PROJECT, "README.md")
    out_dir = sys.argv[2] if len(sys.argv) > 2 else PROJECT
    with open(source) as f:
        source_text = f.read()
    with open(TEMPLATE) as f:
        template_text = f.read()
    try:
        outputs, nav = split(source_text, template_text)
    except SplitError as e:
        sys.exit(f"split_manual.py: refused, nothing written:\n{e}")
    os.makedirs(os.path.join(out_dir, "docs"), exist_ok=True)
    for name in os.listdir(os.path.join(out_dir, "docs")):
        if name.endswith(".md") and f"docs/{name}" not in outputs:
            os.remove(os.path.join(out_dir, "docs", name))
    for name, text in outputs.items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    mkdocs = os.path.join(out_dir, "mkdocs.yml")
    if not os.path.exists(mkdocs):
        with open(os.path.join(PROJECT, "mkdocs.yml")) as f, open(mkdocs, "w") as g:
            g.write(f.read())
    write_nav(mkdocs, nav)
    for name in sorted(outputs):
        print(f"{name}: {outputs[name].count(chr(10))} lines")


main()
