"""MkDocs hooks of the manual's site (mkdocs.yml): the README is the start page, and the files of
the checkout that the pages link to outside docs/ (ARCHITECTURE.md, the benchmark reports and
their figures) come along under repo/, so that every link of the site leads somewhere. The
Material theme's offline search needs a shim to run its search worker from file:// (the manual the
packages install under /usr/share/doc/): the set-up installs it from npm into the docs venv
(ensure_docs_tools), and it is served from the site itself (mkdocs.yml's extra.polyfills names
it), never from a CDN. And the Errors page is boosted in the search, so that an SQLSTATE finds its
row there before the pages that mention it. Each table cell carries its column's name
(data-label), so that css/extra.css can show a table's rows as cards on a narrow screen.

On GitHub the same Markdown reads as it is: docs/x.md from the README, ../path from a page."""
import os
import re
import sys

from mkdocs.structure.files import File

LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")


def _outside_links(root, text, base):
    """Checkout paths (relative to root, the checkout) of the relative links in text, read from base."""
    out = []
    for m in LINK.finditer(text):
        target = m.group(2)
        if re.match(r"[a-z]+:", target):
            continue
        path = os.path.normpath(os.path.join(base, target))
        if path == "README.md":  # the start page, index.md
            continue
        if not path.startswith("docs" + os.sep) and path != "docs" and os.path.isfile(os.path.join(root, path)):
            out.append(path)
    return out


def _readme_as_index(text):
    def repl(m):
        target = m.group(2)
        if re.match(r"[a-z]+:", target):
            return m.group(0)
        if target.startswith("docs/"):
            return m.group(1) + target[5:] + m.group(3)
        return m.group(1) + "repo/" + target + m.group(3)
    return LINK.sub(repl, text)


SHIM = os.path.join(sys.prefix, "npm", "node_modules", "iframe-worker", "shim", "index.js")
SHIM_URI = "assets/javascripts/iframe-worker-shim.js"
SEARCH_BOOST = {"errors.md": 10}


def on_config(config):
    if config["extra"].get("polyfills") != [SHIM_URI]:
        raise SystemExit(f"mkdocs.yml: extra.polyfills must be [{SHIM_URI}] (the search shim, served from the site)")
    return config


def on_files(files, config):
    root = os.path.dirname(config["docs_dir"])
    if not os.path.isfile(SHIM):
        raise SystemExit(f"{SHIM} is missing: the set-up installs it (ensure_docs_tools in pgrx-tests/harness/setup.sh)")
    with open(SHIM, "rb") as f:
        files.append(File.generated(config, SHIM_URI, content=f.read()))
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    files.append(File.generated(config, "index.md", content=_readme_as_index(readme)))
    todo = _outside_links(root, readme, "")
    docs = config["docs_dir"]
    for name in sorted(os.listdir(docs)):
        if name.endswith(".md"):
            with open(os.path.join(docs, name)) as f:
                todo += _outside_links(root, f.read(), "docs")
    seen = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(os.path.join(root, path), "rb") as f:
            content = f.read()
        files.append(File.generated(config, "repo/" + path, content=content))
        if path.endswith(".md"):
            todo += _outside_links(root, content.decode(), os.path.dirname(path))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri in SEARCH_BOOST:
        page.meta["search"] = {"boost": SEARCH_BOOST[page.file.src_uri]}
    if page.file.src_uri.startswith("repo/") or page.file.src_uri == "index.md":
        return markdown

    def repl(m):
        target = m.group(2)
        if target == "../README.md":
            return m.group(1) + "index.md" + m.group(3)
        if target.startswith("../") and not re.match(r"[a-z]+:", target):
            return m.group(1) + "repo/" + target[3:] + m.group(3)
        return m.group(0)
    return LINK.sub(repl, markdown)


TABLE = re.compile(r"<table>.*?</table>", re.S)


def _labelled(m):
    table = m.group(0)
    heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
    if not heads:
        return table
    body_at = table.find("<tbody>")
    head, body = table[:body_at], table[body_at:]

    def row(r):
        cells = iter(heads)
        return re.sub(r"<td(?=[\s>])", lambda c: f'<td data-label="{next(cells, "")}"', r.group(0))
    return head + re.sub(r"<tr>.*?</tr>", row, body, flags=re.S)


def on_page_content(html, page, config, files):
    return TABLE.sub(_labelled, html)
