#!/usr/bin/env python3
"""The built site, looked at as a reader would: pages opened in headless Chromium (Debian's
`chromium`), their rendered DOM checked for the content (the page's H1 and its `##` headings as
the Markdown has them, a code block, the navigation with every page of mkdocs.yml's nav), and a
screenshot of each saved and checked to be a picture (its size, more than a few colours).

    look.py ROOT SITE_DIR SHOT_DIR PAGE...      (PAGE: README.md or docs/x.md)

Prints what it saw; exit 1 on a page that does not render so."""
import html.parser
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT, SITE, SHOTS = sys.argv[1:4]
PAGES = sys.argv[4:]
WIDTH, HEIGHT = 1280, 1600
failures = []


def chromium(url, *args):
    with tempfile.TemporaryDirectory(prefix="chromium-profile.") as profile:
        cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}", *args, url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class Dom(html.parser.HTMLParser):
    """The rendered page's headings (level, text), code blocks, and the navigation's link texts."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.headings = []
        self.code_blocks = 0
        self.nav_links = []
        self.text = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        in_nav = any(t == "nav" or "navbar" in (c or "") for t, c in self.stack)
        self.stack.append((tag, a.get("class")))
        if re.fullmatch(r"h[1-6]", tag):
            self.text = [int(tag[1]), ""]
        if tag == "code" and any(t == "pre" for t, _ in self.stack[:-1]):
            self.code_blocks += 1
        if tag == "a" and in_nav:
            self.nav_links.append("")

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if self.text and re.fullmatch(r"h[1-6]", tag):
            self.headings.append((self.text[0], " ".join(self.text[1].split())))
            self.text = None

    def handle_data(self, data):
        if self.text is not None:
            self.text[1] += data
        if self.nav_links and any(t == "a" for t, _ in self.stack) and any(t == "nav" or "navbar" in (c or "") for t, c in self.stack):
            self.nav_links[-1] += data


def markdown_headings(path):
    """The page's H1 and `##` headings as text (inline code and links as plain text)."""
    out, fence = [], None
    for line in open(path).read().split("\n"):
        s = line.strip()
        if fence:
            fence = None if s.startswith(fence) and s.strip("`~") == "" else fence
            continue
        m = re.match(r"(```+|~~~+)", s)
        if m:
            fence = m.group(1)
            continue
        m = re.match(r"(#{1,2}) (.*)$", line)
        if m:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).replace("`", "")
            out.append((len(m.group(1)), " ".join(text.split())))
    return out


def png_facts(path):
    """(width, height, distinct byte values in its pixel rows, sampled): a blank page has a few."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    width, height = struct.unpack(">II", data[16:24])
    idat, i = b"", 8
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        if kind == b"IDAT":
            idat += data[i + 8:i + 8 + n]
        i += 12 + n
    raw = zlib.decompress(idat)
    return width, height, len(set(raw[::7]))


nav_text = open(os.path.join(ROOT, "mkdocs.yml")).read()
nav_labels = re.findall(r"^\s+- ([^:]+): \S+\.md\s*$", nav_text, re.M)
os.makedirs(SHOTS, exist_ok=True)
for page in PAGES:
    html_name = "index.html" if page == "README.md" else page[5:-3] + ".html"
    url = "file://" + os.path.abspath(os.path.join(SITE, html_name))
    r = chromium(url, "--dump-dom")
    if r.returncode or "<html" not in r.stdout:
        failures.append(f"{page}: chromium did not render {html_name} (exit {r.returncode}): {r.stderr[-500:]}")
        continue
    dom = Dom()
    dom.feed(r.stdout)
    want = markdown_headings(os.path.join(ROOT, page))
    got = [(lv, t) for lv, t in dom.headings if lv <= 2]
    missing = [t for t in want if t not in got]
    if not want or want[0][0] != 1:
        failures.append(f"{page}: the Markdown has no H1 first")
    if missing:
        failures.append(f"{page}: the rendered page lacks the headings {missing}")
    if dom.code_blocks == 0:
        failures.append(f"{page}: the rendered page has no code block")
    nav = {" ".join(t.split()) for t in dom.nav_links}
    lacking = [label for label in nav_labels if label not in nav]
    if lacking:
        failures.append(f"{page}: the rendered navigation lacks {lacking}")
    shot = os.path.join(SHOTS, html_name[:-5] + ".png")
    if os.path.exists(shot):
        os.remove(shot)
    r = chromium(url, f"--screenshot={shot}")
    facts = png_facts(shot) if os.path.exists(shot) else None
    if not facts:
        failures.append(f"{page}: no screenshot ({r.stderr[-300:]})")
    elif facts[:2] != (WIDTH, HEIGHT) or facts[2] < 16:
        failures.append(f"{page}: the screenshot is {facts[0]}x{facts[1]} with {facts[2]} byte values: not a rendered page")
    if not failures or not any(f.startswith(page + ":") for f in failures):
        print(f"{page}: {html_name} rendered: H1 {want[0][1]!r} and its {len(want) - 1} `##` headings, "
              f"{'a code block' if dom.code_blocks == 1 else 'code blocks'}, the navigation's {len(nav_labels)} pages; "
              f"screenshot {WIDTH}x{HEIGHT}")
for f in failures:
    print(f)
sys.exit(1 if failures else 0)
