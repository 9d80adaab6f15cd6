#!/usr/bin/env python3
"""The manual's links, checked as GitHub reads them and as the site has them.

    links.py ROOT [SITE_DIR]

ROOT is a checkout (README.md, docs/, mkdocs.yml). Every relative link and image of README.md and
of every page (outside code) must lead to a file of the checkout, and an anchor to a heading of
that page (GitHub's anchor of it); a page may not have two headings with one anchor, and every page
of docs/ must be in mkdocs.yml's nav. With SITE_DIR (the built site) each heading's anchor must
also be an id of the page's HTML (MkDocs' anchor is GitHub's), so that one link works in both.
A failure names the file and line; exit 1 if any."""
import html.parser
import os
import re
import sys

from markdown_lines import outside_code

ROOT = sys.argv[1]
SITE = sys.argv[2] if len(sys.argv) > 2 else None
failures = []


def slug(text):
    """GitHub's anchor of a heading."""
    text = re.sub(r"`", "", text.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def scan(lines):
    """([(index, level, text)] headings, [(index, target)] links), both outside code."""
    heads, links = [], []
    for i, line in outside_code(lines):
        m = re.match(r"(#{1,6}) (.*)$", line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2).strip()))
        for part in re.split(r"(`+[^`]*`+)", line):
            if not part.startswith("`"):
                links += [(i, t) for t in re.findall(r"\]\(([^)\s]+)\)", part)]
    return heads, links


def read(path):
    with open(path) as f:
        return f.read().split("\n")


nav_text = open(os.path.join(ROOT, "mkdocs.yml")).read()
nav = re.findall(r"^\s+- [^:]+: (\S+\.md)\s*$", nav_text, re.M)
pages = ["README.md"] + [f"docs/{n}" for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")]
for p in pages[1:]:
    if p[5:] not in nav:
        failures.append(f"mkdocs.yml: its nav lacks {p}")
for n in nav:
    if n != "index.md" and not os.path.isfile(os.path.join(ROOT, "docs", n)):
        failures.append(f"mkdocs.yml: its nav names docs/{n}, which does not exist")

anchors = {}
scanned = {}
for p in pages:
    heads, links = scan(read(os.path.join(ROOT, p)))
    scanned[p] = links
    seen = {}
    for i, _, text in heads:
        a = slug(text)
        if a in seen:
            failures.append(f"{p}:{i + 1}: a second heading with the anchor #{a} (the first at line {seen[a] + 1}): links to it would go to the first")
        seen[a] = i
    anchors[p] = seen

checked = 0
for p, links in scanned.items():
    for i, target in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        checked += 1
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(p), path)) if path else p
        if dest.startswith(".."):
            failures.append(f"{p}:{i + 1}: the link {target} leads out of the checkout")
            continue
        if not os.path.exists(os.path.join(ROOT, dest)):
            failures.append(f"{p}:{i + 1}: the link {target} leads to {dest}, which does not exist")
            continue
        if frag:
            if dest not in anchors:
                if dest.endswith(".md"):
                    heads, _ = scan(read(os.path.join(ROOT, dest)))
                    anchors[dest] = {slug(t): i for i, _, t in heads}
                else:
                    failures.append(f"{p}:{i + 1}: the link {target} has an anchor, but {dest} is not a page")
                    continue
            if frag not in anchors[dest]:
                failures.append(f"{p}:{i + 1}: the link {target}: {dest} has no heading with the anchor #{frag}")


class Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id":
                self.ids.add(v)


ids_checked = 0
if SITE:
    for p in pages:
        page_html = os.path.join(SITE, "index.html" if p == "README.md" else p[5:-3] + ".html")
        if not os.path.isfile(page_html):
            failures.append(f"{p}: the site has no {os.path.relpath(page_html, SITE)}")
            continue
        parser = Ids()
        with open(page_html) as f:
            parser.feed(f.read())
        for a, i in anchors[p].items():
            ids_checked += 1
            if a not in parser.ids:
                failures.append(f"{p}:{i + 1}: the site's page has no id {a!r} for this heading (MkDocs made another anchor than GitHub)")

for f in failures:
    print(f)
print(f"links: {len(pages)} files, {checked} relative links checked" + (f", {ids_checked} headings' anchors found in the site" if SITE else ""))
sys.exit(1 if failures else 0)
