# majors: 15
# alone: it listens on TCP ports, runs real HA engines, or times faults: not beside another scenario
# The manual as a site: MkDocs (PyPI; pinned in pgrx-tests/checks/readme/docs-requirements.txt, installed
# idempotently into a venv under $(pg_cache_dir)/docs) builds README.md and docs/*.md (mkdocs.yml)
# into target/site/ in strict mode, where a broken link or anchor fails the build. Then:
# - pgrx-tests/checks/readme/links.py: every relative link of the README and of each page leads to a file,
#   every anchor to a heading as GitHub makes its anchor, and that anchor is an id of the built
#   page too (one link, both renderings); each page of docs/ is in the nav; a failure names the file
#   and line;
# - pgrx-tests/checks/readme/look.py: the start page and one deep page opened in headless Chromium
#   (Debian's chromium), their rendered DOM holding the page's H1 and `##` headings, a code block
#   and the navigation; screenshots in target/site-screenshots/ (index.png, operations.png).
# The PostgreSQL major does not matter here: 15 only. MkDocs is installed by the set-up
# (`ensure_docs_tools` in harness/setup.sh); this scenario installs nothing.
HERE="$PROJECT_DIR/pgrx-tests/checks/readme"
docs_tools_ready || { echo "MkDocs is not installed: run pgrx-tests/test.sh (its set-up installs it)"; exit 1; }
venv="$(pg_cache_dir)/docs/venv"
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
echo "-- the start page and a deep page in headless Chromium"
python3 "$HERE/look.py" "$PROJECT_DIR" "$site" "$shots" README.md docs/operations.md

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
sed -i '/^  - Troubleshooting: troubleshooting.md$/d' "$drifted/mkdocs.yml"
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
for name in ("index.html", "operations.html"):
    path = f"{sys.argv[1]}/{name}"
    text = open(path).read()
    text = re.sub(r"<pre.*?</pre>", "", text, flags=re.S)
    text = re.sub(r'<div class="navbar.*?</ul>\s*</div>', "", text, count=1, flags=re.S)
    open(path, "w").write(text)
PY
python3 "$HERE/look.py" "$PROJECT_DIR" "$SCRATCH/site.stripped" "$SCRATCH/shots.stripped" README.md docs/operations.md >"$SCRATCH/look.out" 2>&1 \
  && echo "the stripped site passed"
sed -E 's/(lacks) \[.*/\1 .../' "$SCRATCH/look.out" | grep -E "no code block|navigation lacks" || true
rm -rf "$drifted" "$SCRATCH/site.drifted" "$SCRATCH/site.stripped" "$SCRATCH/shots.stripped" "$SCRATCH/drift.lines" "$SCRATCH/drift.out" "$SCRATCH/mkdocs.drift.out" "$SCRATCH/look.out" "$SCRATCH/mkdocs.out"
