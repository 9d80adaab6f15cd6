# majors: 15
# long: half a minute or more, queued first
# The manual as a site: MkDocs (PyPI; pinned in pgrx-tests/checks/readme/docs-requirements.txt, installed
# idempotently into a venv under $(pg_cache_dir)/docs) builds README.md and docs/*.md (mkdocs.yml)
# into target/site/ in strict mode, where a broken link or anchor fails the build. Then:
# - pgrx-tests/checks/readme/links.py: every relative link of the README and of each page leads to a file,
#   every anchor to a heading as GitHub makes its anchor, and that anchor is an id of the built
#   page too (one link, both renderings); each page of docs/ is in the nav; a failure names the file
#   and line;
# - pgrx-tests/checks/readme/look.py: pages opened in headless Chromium (Debian's chromium) from
#   file://, at 1280 and 400 px: their H1 and `##` headings, code highlighted in every language
#   the manual uses (sql, sh, python, js, java, rust, yaml), a copy button on each block, the
#   light/dark toggle, the navigation's five groups, every table fitting the page (no cut-off
#   column), nothing fetched from outside the site; screenshots in target/site-screenshots/
#   (NAME-1280.png, NAME-400.png); and "55P03" typed into the search finds the Errors page first.
# The PostgreSQL major does not matter here: 15 only. MkDocs and its Material theme are installed
# by the set-up (`ensure_docs_tools` in harness/setup.sh); this scenario installs nothing.
HERE="$PROJECT_DIR/pgrx-tests/checks/readme"
docs_tools_ready || { echo "MkDocs is not installed: run pgrx-tests/test.sh (its set-up installs it)"; exit 1; }
venv="$(pg_cache_dir)/docs/venv"
export NO_MKDOCS_2_WARNING=1
PAGES=(README.md docs/sql-reference.md docs/errors.md docs/application.md docs/monitoring.md)
command -v chromium >/dev/null || { echo "chromium is not installed (test.sh installs Debian's chromium for PostgreSQL 15)"; exit 1; }

site="$PROJECT_DIR/target/site"
shots="$PROJECT_DIR/target/site-screenshots"
echo "-- the site, built (mkdocs build --strict)"
# (Not with -q: mkdocs 1.6 does not count the warnings it does not show, and strict mode passes.)
if "$venv/bin/mkdocs" build --strict -f "$PROJECT_DIR/mkdocs.yml" -d "$site" >"$SCRATCH/mkdocs.out" 2>&1; then
  echo "built: $(ls "$site"/*.html | grep -vc 404.html) pages"
else
  grep -v '^INFO' "$SCRATCH/mkdocs.out"
fi
echo "-- links and anchors, as GitHub reads them and as the site has them"
python3 "$HERE/links.py" "$PROJECT_DIR" "$site"
echo "-- pages in headless Chromium, at 1280 and 400 px, and the search"
python3 "$HERE/look.py" "$PROJECT_DIR" "$site" "$shots" --search 55P03=docs/errors.md "${PAGES[@]}"

# The negative controls. 1. A copy of the manual with broken links: an anchor that no heading has
# (in a page, and from the README into a page), a page that does not exist, a page left out of the
# nav. links.py names each file and line, and no other; mkdocs' strict build fails too.
drifted="$SCRATCH/manual.drifted"
rm -rf "$drifted" && mkdir -p "$drifted/pgrx-tests"
cp -r "$PROJECT_DIR/README.md" "$PROJECT_DIR/docs" "$PROJECT_DIR/mkdocs.yml" "$PROJECT_DIR/ARCHITECTURE.md" "$PROJECT_DIR/CHANGELOG.md" "$PROJECT_DIR/monitoring" "$drifted/"
mkdir -p "$drifted/pgrx-tests/bench" "$drifted/pgrx-tests/checks" && cp -r "$PROJECT_DIR/pgrx-tests/checks/readme" "$drifted/pgrx-tests/checks/"
cp -r "$PROJECT_DIR/pgrx-tests/bench/results" "$drifted/pgrx-tests/bench/"
python3 - "$drifted" >"$SCRATCH/drift.lines" <<'PY'
import os, re, sys
root = sys.argv[1]
def drift(name, pattern, new, what):
    path = os.path.join(root, name)
    lines = open(path).read().split("\n")
    at = [i for i, l in enumerate(lines) if re.search(pattern, l)]
    lines[at[0]] = re.sub(pattern, new, lines[at[0]], count=1)
    open(path, "w").write("\n".join(lines))
    print(f"{name}:{at[0] + 1}", what)
drift("docs/public-ids-and-security.md", r"\(#the-key-file\)", "(#the-key-files)", "an anchor no heading of the page has")
drift("README.md", r"\(docs/sql-reference\.md#querying-by-time\)", "(docs/sql-reference.md#querying-by-times)", "an anchor of another page that it lacks")
drift("docs/sql-reference.md", r"\]\(operations\.md\)", "](operation.md)", "a page that does not exist")
PY
sed -i '/^      - Troubleshooting: troubleshooting.md$/d' "$drifted/mkdocs.yml"
echo "mkdocs.yml nav: a page left out" >>"$SCRATCH/drift.lines"
python3 "$HERE/links.py" "$drifted" >"$SCRATCH/drift.out" 2>&1 && echo "the drifted links passed"
named=$(sed -n 's/^\([^ :]*\.md:[0-9]*\): .*/\1/p' "$SCRATCH/drift.out" | sort | uniq)
while read -r line what; do
  if [ "$line" = mkdocs.yml ]; then
    grep -q "^mkdocs.yml: its nav lacks docs/troubleshooting.md" "$SCRATCH/drift.out" && echo "drift named: $what" || echo "drift NOT named: $what"
  elif grep -qxF "$line" <<<"$named"; then echo "drift named at its file and line: $what"; else echo "drift NOT named: $what"; fi
done <"$SCRATCH/drift.lines"
echo "failures at other lines: $(grep -cvxF -f <(cut -d' ' -f1 "$SCRATCH/drift.lines") <<<"$named" || true)"
# MkDocs itself refuses the drifted copy (its strict build: the missing page and each missing anchor).
if "$venv/bin/mkdocs" build --strict -f "$drifted/mkdocs.yml" -d "$SCRATCH/site.drifted" >"$SCRATCH/mkdocs.drift.out" 2>&1; then
  echo "mkdocs built the drifted copy"
else
  echo "mkdocs refused the drifted copy:"
  grep '^WARNING' "$SCRATCH/mkdocs.drift.out" | LC_ALL=C sort -u | sed 's/^WARNING -  /  /'
fi
# 2. A site whose pages lost their code blocks and their navigation: look.py says so.
cp -r "$site" "$SCRATCH/site.stripped"
python3 - "$SCRATCH/site.stripped" <<'PY'
import re, sys
for name in ("index.html", "sql-reference.html"):
    path = f"{sys.argv[1]}/{name}"
    text = open(path).read()
    text = re.sub(r"<pre.*?</pre>", "", text, flags=re.S)
    text = text.replace("md-nav--primary", "md-nav--stripped")  # the navigation's groups, gone
    open(path, "w").write(text)
PY
python3 "$HERE/look.py" "$PROJECT_DIR" "$SCRATCH/site.stripped" "$SCRATCH/shots.stripped" README.md docs/sql-reference.md >"$SCRATCH/look.out" 2>&1 \
  && echo "the stripped site passed"
sed -E 's/(groups are) \[.*/\1 .../' "$SCRATCH/look.out" | grep -E "no code block|groups are" || true
# 3. The site built as plain as it was: each thing look.py checks switched off in a copy of
# mkdocs.yml, css/extra.css and the hooks (highlighting, copy buttons, the toggle, the groups, no
# web font, the narrow screen's tables, the Errors page's search boost). Each must be reported.
plain="$SCRATCH/manual.plain"
rm -rf "$plain" && mkdir -p "$plain/pgrx-tests/checks" "$plain/pgrx-tests/bench"
cp -r "$PROJECT_DIR/README.md" "$PROJECT_DIR/docs" "$PROJECT_DIR/mkdocs.yml" "$PROJECT_DIR/ARCHITECTURE.md" "$PROJECT_DIR/CHANGELOG.md" "$PROJECT_DIR/monitoring" "$plain/"
cp -r "$PROJECT_DIR/pgrx-tests/checks/readme" "$plain/pgrx-tests/checks/" && cp -r "$PROJECT_DIR/pgrx-tests/bench/results" "$plain/pgrx-tests/bench/"
python3 - "$plain" <<'PY'
import re, sys
root = sys.argv[1]
def edit(name, old, new):
    path = f"{root}/{name}"
    text = open(path).read()
    assert old in text, (name, old)
    open(path, "w").write(text.replace(old, new, 1))
edit("mkdocs.yml", "      pygments_lang_class: true\n", "      pygments_lang_class: true\n      use_pygments: false\n")
edit("mkdocs.yml", "    - content.code.copy\n", "")
text = open(f"{root}/mkdocs.yml").read()
open(f"{root}/mkdocs.yml", "w").write(re.sub(r"\n  palette:\n.*?\n(?=plugins:)", "\n", text, flags=re.S))
edit("mkdocs.yml", "  font: false\n", "")
edit("mkdocs.yml", "    - navigation.tabs\n", "")
text = open(f"{root}/mkdocs.yml").read()
nav = text.index("\nnav:\n")
flat = re.sub(r"^  - [^:]+:\n", "", text[nav:], flags=re.M).replace("\n      - ", "\n  - ")
open(f"{root}/mkdocs.yml", "w").write(text[:nav] + flat)
edit("docs/css/extra.css", "@media screen and (max-width: 44.984375em)", "@media screen and (max-width: 1px)")
edit("pgrx-tests/checks/readme/mkdocs_hooks.py", 'SEARCH_BOOST = {"errors.md": 10}', "SEARCH_BOOST = {}")
PY
if "$venv/bin/mkdocs" build --strict -f "$plain/mkdocs.yml" -d "$SCRATCH/site.plain" >"$SCRATCH/mkdocs.plain.out" 2>&1; then
  python3 "$plain/pgrx-tests/checks/readme/look.py" "$plain" "$SCRATCH/site.plain" "$SCRATCH/shots.plain" --search 55P03=docs/errors.md \
    "${PAGES[@]}" >"$SCRATCH/look.plain.out" 2>&1 && echo "the plain site passed"
  for what in "code not highlighted" "have no copy button" "no light/dark toggle" "the navigation's groups are" \
      "fetched from outside the site" "its last columns are cut off" "search '55P03': the first result is"; do
    grep -qF "$what" "$SCRATCH/look.plain.out" && echo "plain site reported: $what" || echo "plain site NOT reported: $what"
  done
  grep -F "search '55P03'" "$SCRATCH/look.plain.out" | sed -E 's/ \(pages in order.*//'
else
  echo "mkdocs did not build the plain copy:"; grep -v '^INFO' "$SCRATCH/mkdocs.plain.out"
fi
rm -rf "$drifted" "$plain" "$SCRATCH/site.drifted" "$SCRATCH/site.stripped" "$SCRATCH/shots.stripped" "$SCRATCH/site.plain" "$SCRATCH/shots.plain" \
  "$SCRATCH/drift.lines" "$SCRATCH/drift.out" "$SCRATCH/mkdocs.drift.out" "$SCRATCH/look.out" "$SCRATCH/mkdocs.out" "$SCRATCH/mkdocs.plain.out" "$SCRATCH/look.plain.out"
