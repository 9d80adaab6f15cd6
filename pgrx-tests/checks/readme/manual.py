"""The README and the manual's pages (docs/*.md, in the order of mkdocs.yml's nav), as the
checkers read them: by file, by line, by section. A section is found by its heading's text, on
whichever page it is, whatever its level; a failure names the file and the line.

MANUAL_ROOT (default PROJECT_DIR) is the checkout whose README.md, docs/ and mkdocs.yml are read:
the negative controls point it at a drifted copy."""
import os
import re

from markdown_lines import outside_code

PROJECT = os.environ["PROJECT_DIR"]
ROOT = os.environ.get("MANUAL_ROOT") or PROJECT


def nav_pages(root=ROOT):
    """The pages of mkdocs.yml's nav, as paths from the checkout (docs/x.md), in nav order."""
    with open(os.path.join(root, "mkdocs.yml")) as f:
        text = f.read()
    return [f"docs/{p}" for p in re.findall(r"^\s+- [^:]+: (\S+\.md)\s*$", text, re.M) if p != "index.md"]


def files(root=ROOT):
    """README.md first, then every page of the nav (each page of docs/ must be in it)."""
    nav = nav_pages(root)
    docs = os.path.join(root, "docs")
    names = os.listdir(docs) if os.path.isdir(docs) else []
    outside = sorted(f"docs/{n}" for n in names if n.endswith(".md") and f"docs/{n}" not in nav)
    if outside:
        raise SystemExit(f"mkdocs.yml: its nav lacks {', '.join(outside)}: a page no check would read")
    return ["README.md"] + nav


class Page:
    def __init__(self, name, root=ROOT):
        self.name = name
        self.path = os.path.join(root, name)
        with open(self.path) as f:
            self.lines = f.read().split("\n")
        self.changed = False

    def headings(self):
        """[(index, level, text)] of the headings outside code blocks."""
        out = []
        for i, line in outside_code(self.lines):
            m = re.match(r"(#{1,6}) (.*)$", line)
            if m:
                out.append((i, len(m.group(1)), m.group(2).strip()))
        return out

    def section(self, title):
        """(first, end) line indexes of the section headed `title` (the heading's line, and the
        next heading of the same or a higher level), or None."""
        hs = self.headings()
        for n, (i, level, text) in enumerate(hs):
            if text == title:
                end = next((j for j, l, _ in hs[n + 1:] if l <= level), len(self.lines))
                return i, end
        return None

    def write(self):
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines))


def pages(root=ROOT):
    return [Page(name, root) for name in files(root)]


def find_section(all_pages, title):
    """(page, first, end) of the section headed `title`, on the one page that has it."""
    found = [(p, *p.section(title)) for p in all_pages if p.section(title)]
    if len(found) != 1:
        where = ", ".join(p.name for p, _, _ in found) or "no page"
        raise SystemExit(f"the section {title!r} must be on one page of the manual; it is on {where}")
    return found[0]


def install_sql(db, root=ROOT):
    """The README's install statements (its ```sql block under `<!-- test: skip the install
    itself`), for database `db` (the block's `mydb`), without their comments: the extension in the
    schema `snowflake`, on the database's search_path (ALTER DATABASE ... SET: sessions started
    afterwards have it). The checkers set up every database they use with them."""
    lines = Page("README.md", root).lines
    i = next((n for n, line in enumerate(lines) if line.startswith("<!-- test: skip the install itself")), None)
    if i is None or lines[i + 1] != "```sql":
        raise SystemExit("README.md: no ```sql block under <!-- test: skip the install itself ... -->")
    end = lines.index("```", i + 2)
    sql = [re.sub(r"\s*--.*$", "", line) for line in lines[i + 2:end]]
    if not any("SCHEMA snowflake" in line for line in sql) or not any(" mydb " in line for line in sql):
        raise SystemExit(f"README.md:{i + 3}: the install block must create the extension SCHEMA snowflake and ALTER DATABASE mydb")
    return "\n".join(line.replace(" mydb ", f" {db} ") for line in sql) + "\n"
