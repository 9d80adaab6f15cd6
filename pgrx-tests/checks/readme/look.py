#!/usr/bin/env python3
"""The built site, looked at as a reader would, in headless Chromium (Debian's `chromium`, driven
through the DevTools protocol on a pipe), from file:// as the manual the packages install is read.

For each page, at 1280 px and at 400 px wide:
- the page's H1 and `##` headings as the Markdown has them, and a code block;
- every fenced block with a language (sql, sh, python, js, java, rust, yaml) highlighted: its
  code holds tokens of more than one kind, and each language of the page's blocks is there;
- a copy button on every code block;
- the light/dark toggle (two colour schemes, and clicking the toggle changes the scheme);
- the navigation in mkdocs.yml's groups (Get started, Guides, ...), each with its pages;
- every table readable: it fits the page's column at both widths (no cut-off column, nothing to
  scroll; at 400 px its rows are cards, css/extra.css), and the page is no wider than the window;
- nothing fetched but the site's own files (no CDN font, no script from elsewhere);
- a screenshot (SHOT_DIR/NAME-1280.png, NAME-400.png), checked to be a picture of that size.
And the search, with the built search index, typed into the search box: each QUERY=PAGE pair (an
SQLSTATE and the page of its row) must rank that page first. The search runs over HTTP from a
server on 127.0.0.1 that this program starts (headless Chromium does not start the theme's search
worker from file://).

    look.py ROOT SITE_DIR SHOT_DIR [--search QUERY=docs/x.md]... PAGE...   (PAGE: README.md or docs/x.md)

Prints what it saw; exit 1 on anything missing, each failure naming the page and width."""
import base64
import functools
import http.server
import json
import os
import re
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT, SITE, SHOTS = sys.argv[1:4]
args = sys.argv[4:]
SEARCHES, PAGES = [], []
while args:
    a = args.pop(0)
    if a == "--search":
        q, _, p = args.pop(0).partition("=")
        SEARCHES.append((q, p))
    else:
        PAGES.append(a)
WIDTHS = (1280, 400)
HEIGHT = 1600
LANGUAGES = ("sql", "sh", "python", "js", "java", "rust", "yaml")
failures = []


class Chromium:
    """One headless Chromium, its DevTools protocol on fds 3 and 4 (--remote-debugging-pipe)."""

    def __init__(self):
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-profile.")
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             "--allow-file-access-from-files", f"--user-data-dir={self.profile.name}", "--remote-debugging-pipe",
             "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        self.buf, self.next_id, self.events = b"", 0, []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, timeout):
        while b"\0" not in self.buf:
            ready, _, _ = select.select([self.r], [], [], timeout)
            if not ready:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("chromium ended")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=False, timeout=60, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def js(self, expression):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:60]}...: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url, width):
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)
        self.events = []
        self.call("Page.navigate", session=True, url=url)
        deadline = time.time() + 30
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read(max(0.1, deadline - time.time())))
        # The theme's script adds the copy buttons and the search after the load: wait for them.
        self.wait("document.querySelectorAll('pre > code').length == 0 || document.querySelector('button.md-code__button[data-md-type=copy]') != null", 5)

    def wait(self, expression, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.js(expression):
                return True
            time.sleep(0.1)
        return False

    def fetched(self):
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        self.proc.wait(timeout=30)
        self.profile.cleanup()


FACTS = r"""(() => {
  const text = e => e.textContent.replace(/\s+/g, ' ').replace(/\u00b6/g, '').trim();
  const article = document.querySelector('article') || document.body;
  const blocks = [...article.querySelectorAll('pre > code')];
  const langs = {};
  for (const div of article.querySelectorAll('div.highlight[class*="language-"]')) {
    const lang = [...div.classList].find(c => c.startsWith('language-')).slice(9);
    const kinds = new Set([...div.querySelectorAll('code span[class]')].map(s => s.className));
    langs[lang] = Math.max(langs[lang] || 0, kinds.size);
  }
  const groups = [...document.querySelectorAll('nav.md-nav--primary > ul > li')].map(li => ({
    label: text(li.querySelector(':scope > label, :scope > a, :scope > .md-nav__link')),
    pages: [...li.querySelectorAll(':scope > nav a.md-nav__link')].map(text)}));
  const tabs = [...document.querySelectorAll('.md-tabs__item')].filter(t => t.offsetParent !== null).map(text);
  const tables = [...article.querySelectorAll('table')].map((t, i) => {
    // The room a table has: its column of the page (the article); what scrolls: the table itself
    // or a box between it and the article whose overflow-x scrolls, inside the window, able to
    // bring the table's last column into view.
    const cols = t.rows[0] ? t.rows[0].cells.length : 0;
    let scrolls = false;
    for (let e = t; e && e !== article; e = e.parentElement) {
      const r = e.getBoundingClientRect();
      if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && r.left >= -1 && r.right <= innerWidth + 1
          && e.scrollWidth >= t.scrollWidth) scrolls = true;
    }
    return {i, cols, width: t.scrollWidth, room: article.clientWidth, scrolls,
            narrowest: Math.min(...[...(t.rows[0] ? t.rows[0].cells : [])].map(c => c.getBoundingClientRect().width))};
  });
  const schemes = [...document.querySelectorAll('input[data-md-color-scheme]')].map(i => i.getAttribute('data-md-color-scheme'));
  return {
    headings: [...article.querySelectorAll('h1, h2')].map(h => [Number(h.tagName[1]), text(h)]),
    blocks: blocks.length, copy: article.querySelectorAll('button.md-code__button[data-md-type="copy"]').length, langs, tabs,
    groups, tables, schemes, pageWidth: document.documentElement.scrollWidth, window: innerWidth,
    toggle: document.querySelector('form[data-md-component="palette"] label') != null};
})()"""

TOGGLE = r"""(async () => {
  const before = document.body.getAttribute('data-md-color-scheme');
  const label = [...document.querySelectorAll('form[data-md-component="palette"] label')].find(l => l.offsetParent !== null);
  if (!label) return [before, null];
  label.click();
  await new Promise(r => setTimeout(r, 300));
  const after = document.body.getAttribute('data-md-color-scheme');
  [...document.querySelectorAll('form[data-md-component="palette"] label')].find(l => l.offsetParent !== null).click();
  return [before, after];
})()"""

SEARCH = r"""(async (q) => {
  const input = document.querySelector('input.md-search__input');
  if (!input) return {error: 'no search box'};
  input.focus();
  input.value = q;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true, key: q.slice(-1)}));
  for (let i = 0; i < 300; i++) {
    const hits = [...document.querySelectorAll('.md-search-result__list > li a')].map(a => a.getAttribute('href'));
    if (hits.length) return {hits};
    await new Promise(r => setTimeout(r, 100));
  }
  return {error: 'no result within 10 s: ' + (document.querySelector('.md-search-result__meta') || {}).textContent};
})"""


def markdown_facts(path):
    """The page's H1 and `##` headings as text (inline code and links as plain text), and the
    languages of its fenced blocks."""
    heads, langs, fence, blocks = [], set(), None, 0
    for line in open(path).read().split("\n"):
        s = line.strip()
        if fence:
            fence = None if s.startswith(fence) and s.strip("`~") == "" else fence
            continue
        m = re.match(r"(```+|~~~+)\s*([A-Za-z0-9_+-]*)", s)
        if m:
            fence = m.group(1)
            blocks += 1
            if m.group(2):
                langs.add(m.group(2))
            continue
        m = re.match(r"(#{1,2}) (.*)$", line)
        if m:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).replace("`", "")
            heads.append((len(m.group(1)), " ".join(text.split())))
    return heads, langs, blocks


def nav_groups(root):
    """mkdocs.yml's nav as [(group, [page labels])]."""
    groups = []
    text = open(os.path.join(root, "mkdocs.yml")).read()
    for line in text[text.index("\nnav:\n"):].split("\n"):
        m = re.match(r"^  - ([^:]+):\s*$", line)
        if m:
            groups.append((m.group(1), []))
            continue
        m = re.match(r"^\s{4,}- ([^:]+): \S+\.md\s*$", line)
        if m and groups:
            groups[-1][1].append(m.group(1))
    return groups


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


def html_of(page):
    return "index.html" if page == "README.md" else page[5:-3] + ".html"


def look(browser, page, width):
    where = f"{page} at {width} px"
    html_name = html_of(page)
    url = "file://" + os.path.abspath(os.path.join(SITE, html_name))
    browser.open(url, width)
    f = browser.js(FACTS)
    out = []
    want, langs, blocks = markdown_facts(os.path.join(ROOT, page))
    missing = [t for t in want if tuple(t) not in {tuple(h) for h in f["headings"]}]
    if not want or want[0][0] != 1:
        out.append(f"{where}: the Markdown has no H1 first")
    if missing:
        out.append(f"{where}: the rendered page lacks the headings {missing}")
    if f["blocks"] == 0 and blocks:
        out.append(f"{where}: the rendered page has no code block")
    unlit = sorted(l for l in langs if l in LANGUAGES and f["langs"].get(l, 0) < 2)
    if unlit:
        out.append(f"{where}: code not highlighted: {', '.join(unlit)}")
    if f["copy"] < f["blocks"]:
        out.append(f"{where}: {f['blocks'] - f['copy']} of its {f['blocks']} code blocks have no copy button")
    before, after = browser.js(TOGGLE)
    if sorted(set(f["schemes"])) != ["default", "slate"] or not f["toggle"] or before == after or after is None:
        out.append(f"{where}: no light/dark toggle (schemes {f['schemes']}, {before} -> {after})")
    want_groups = nav_groups(ROOT)
    got_groups = [(g["label"], g["pages"]) for g in f["groups"]]
    if [g for g, _ in got_groups] != [g for g, _ in want_groups]:
        out.append(f"{where}: the navigation's groups are {[g for g, _ in got_groups]}, not {[g for g, _ in want_groups]}")
    elif width >= 1280 and f["tabs"] != [g for g, _ in want_groups]:
        out.append(f"{where}: the groups' tabs above the page are {f['tabs']}, not {[g for g, _ in want_groups]}")
    else:
        for (g, pages), (_, got) in zip(want_groups, got_groups):
            if [p for p in pages if p not in got]:
                out.append(f"{where}: the navigation's group {g} lacks {[p for p in pages if p not in got]}")
    for t in f["tables"]:
        if t["width"] > t["room"] + 1:
            out.append(f"{where}: table {t['i'] + 1} ({t['cols']} columns) is {t['width']} px wide in {t['room']} px: its last columns are cut off")
    if f["pageWidth"] > f["window"] + 1:
        out.append(f"{where}: the page is {f['pageWidth']} px wide in a {f['window']} px window")
    outside = sorted({u for u in browser.fetched() if not u.startswith(("file://", "data:", "blob:", "about:"))})
    if outside:
        out.append(f"{where}: fetched from outside the site: {outside}")
    shot = os.path.join(SHOTS, f"{html_name[:-5]}-{width}.png")
    if os.path.exists(shot):
        os.remove(shot)
    browser.screenshot(shot)
    facts = png_facts(shot) if os.path.exists(shot) else None
    if not facts:
        out.append(f"{where}: no screenshot")
    elif facts[:2] != (width, HEIGHT) or facts[2] < 16:
        out.append(f"{where}: the screenshot is {facts[0]}x{facts[1]} with {facts[2]} byte values: not a rendered page")
    if not out:
        lit = ", ".join(sorted(l for l in langs if l in LANGUAGES)) or "none"
        print(f"{where}: {html_name}: H1 {want[0][1]!r} and its {len(want) - 1} `##` headings, {f['blocks']} code blocks "
              f"with copy buttons (highlighted: {lit}), the toggle, {len(want_groups)} navigation groups, "
              f"{len(f['tables'])} tables readable, nothing from outside; screenshot {width}x{HEIGHT}")
    return out


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


os.makedirs(SHOTS, exist_ok=True)
browser = Chromium()
try:
    for page in PAGES:
        for width in WIDTHS:
            failures += look(browser, page, width)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=os.path.abspath(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for query, page in SEARCHES:
        browser.open(f"http://127.0.0.1:{server.server_port}/index.html", 1280)
        r = browser.js(SEARCH + f"({json.dumps(query)})")
        if "error" in r:
            failures.append(f"search {query!r}: {r['error']}")
            continue
        first = re.split("[#?]", r["hits"][0])[0].split("/")[-1]
        if first != html_of(page):
            pages = []
            for h in r["hits"]:
                name = re.split("[#?]", h)[0].split("/")[-1]
                if name not in pages:
                    pages.append(name)
            failures.append(f"search {query!r}: the first result is {first}, not {html_of(page)} (pages in order: {pages[:6]})")
        else:
            print(f"search {query!r}: the first result is {first}, of {len(r['hits'])}")
finally:
    browser.close()
for f in failures:
    print(f)
sys.exit(1 if failures else 0)
