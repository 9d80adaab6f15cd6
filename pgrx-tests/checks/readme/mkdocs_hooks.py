"""MkDocs hooks of the manual's site (mkdocs.yml): the README is the start page, and the files of
the checkout that the pages link to outside docs/ (ARCHITECTURE.md, the benchmark reports and
their figures) come along under repo/, so that every link of the site leads somewhere.

On GitHub the same Markdown reads as it is: docs/x.md from the README, ../path from a page."""
import os
import re

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


def on_files(files, config):
    root = os.path.dirname(config["docs_dir"])
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
