# majors: 15
# long: half a minute or more, queued first
# The manual's section "From your application" (docs/application.md), executed (pgrx-tests/checks/readme/clients.py): every
# recipe as the page prints it, run by its real client against a server with the extension, and
# the pitfalls table shown by tests. The clients do not depend on the major: they run on 15 only.
#
# The recipes use the repository's client packages (clients/python, clients/js) as they stand;
# the client_packages scenario tests those as built.
#
# The clients are installed by the set-up (`ensure_client_tools` in harness/setup.sh, which
# pgrx-tests/test.sh runs before any scenario when 15 is tested), under $(pg_cache_dir)/clients:
# psycopg, Django, SQLAlchemy, DRF and pydantic from PyPI into a venv, pg and postgres from npm,
# Debian's JDBC driver and Jackson, tokio-postgres's crates. This scenario installs nothing.
CLIENTS_DIR="$(pg_cache_dir)/clients"
client_tools_ready || { echo "the clients are not installed: run pgrx-tests/test.sh (its set-up installs them)"; exit 1; }

check() {
  SCRATCH=$SCRATCH PG_BIN=$PG_BIN PG_CONFIG=$PG_CONFIG PROJECT_DIR=$PROJECT_DIR CLIENTS_DIR=$CLIENTS_DIR \
    CLIENT_PYTHON="$(client_venv)/bin/python" CLIENT_NODE_MODULES="$(client_node)/node_modules" \
    python3 "$PROJECT_DIR/pgrx-tests/checks/readme/clients.py"
}
check

# The negative control: a copy of the manual whose recipes drifted (node-postgres told to make an int8 a
# Number, psycopg's id decoded by hand with the wrong shift, the by-hand SQLAlchemy key without its server
# default, the Django model changed without its migration, the SQLAlchemy recipe's API model taking
# the id for an int (a JSON number), Postgres.js's BigInt given to JSON.stringify, the Rust batch inserted in reverse, its
# sorted ids then given to the wrong rows) and a pitfall row with a wrong value: each fails, naming
# the page and line of its recipe's code block (of the pitfall row itself), and no other line.
drifted="$SCRATCH/manual.drifted"
rm -rf "$drifted" && mkdir -p "$drifted" && cp -r "$PROJECT_DIR/README.md" "$PROJECT_DIR/docs" "$PROJECT_DIR/mkdocs.yml" "$drifted/"
python3 - "$drifted" >"$SCRATCH/drift.lines" <<'PY'
import glob, os, sys
# The page with the section (its heading at any level).
name = next(n for n in ["README.md"] + sorted(os.path.relpath(p, sys.argv[1]) for p in glob.glob(sys.argv[1] + "/docs/*.md"))
            if any(l.lstrip("#") == " From your application" and l.startswith("#") for l in open(os.path.join(sys.argv[1], n)).read().split("\n")))
path = os.path.join(sys.argv[1], name)
lines = open(path).read().split("\n")
start = next(n for n, l in enumerate(lines) if l.startswith("#") and l.lstrip("#") == " From your application")
for what, old, new in [
    ("pg: int8 as a Number", 'import pg from "pg";', 'import pg from "pg"; pg.types.setTypeParser(20, Number);'),
    ("psycopg: decoded by hand with the wrong shift", "timedelta(milliseconds=order_id >> 22)", "timedelta(milliseconds=order_id >> 20)"),
    ("SQLAlchemy: no server default", "primary_key=True, server_default=func.snowflake_nextval(monotonic=True))", "primary_key=True)"),
    ("Django: the model changed, not its migration", "    id = SnowflakeField(primary_key=True)  # bigint DEFAULT snowflake_nextval()", "    id = models.BigIntegerField(primary_key=True)"),
    ("SQLAlchemy: the API's model with an int id", "    id: SnowflakeId", "    id: int"),
    ("postgres: JSON.stringify without the replacer", '{ id: orderId, item: "book" }, asString);', '{ id: orderId, item: "book" });'),
    ("Rust: the batch inserted in reverse", "WITH ORDINALITY AS t(item, n) ORDER BY n RETURNING id", "WITH ORDINALITY AS t(item, n) ORDER BY n DESC RETURNING id"),
    ("pitfalls: a wrong value", "comes back as `253178563728011260`", "comes back as `253178563728011264`"),
]:
    at = [n for n in range(start, len(lines)) if lines[n] == old or (old in lines[n] and not old.startswith(" "))]
    assert len(at) == 1, old
    n = at[0]
    lines[n] = lines[n].replace(old, new)
    # The line a failure must name: the code block's opening fence, or the table row itself.
    fence = n if lines[n].startswith("|") else max(k for k in range(start, n) if lines[k].startswith("```"))
    print(f"{name}:{fence + 1}", what)
open(path, "w").write("\n".join(lines))
PY
MANUAL_ROOT=$drifted CLIENTS_ONLY="psycopg pg postgres sqlalchemy sqlalchemy_by_hand django rust pitfalls" check >"$SCRATCH/drift.out" 2>&1 \
  && echo "the drifted manual passed"
named=$(sed -n 's/^\([^ :]*\.md:[0-9]*\): .*/\1/p' "$SCRATCH/drift.out" | sort | uniq)
while read -r line what; do
  if grep -qxF "$line" <<<"$named"; then echo "drift named at its file and line: $what"; else echo "drift NOT named: $what"; fi
done <"$SCRATCH/drift.lines"
echo "failures at other lines: $(grep -cvxF -f <(cut -d' ' -f1 "$SCRATCH/drift.lines") <<<"$named" || true)"
# What the drifts did, as the clients said it (the values a user would see).
# (Not the pg drift's: how many of its ids a double still holds exactly depends on their sequence
# numbers, and so on timing.)
grep -oE "an id at or below 2\^53 \([0-9]+\)|TypeError: Do not know how to serialize a BigInt|ids are not the one stored for their row|does not show \`[0-9]+\`|the README's migration is not [^:]*|the body's id is a int, not a string|minted_by_hand is" "$SCRATCH/drift.out" | LC_ALL=C sort -u || true
# A client's error that names a line of its recipe file names the page's line as well: each such
# line is one of a recipe's code lines.
python3 - "$drifted/$(head -n 1 "$SCRATCH/drift.lines" | cut -d: -f1)" "$SCRATCH/drift.out" <<'PY'
import os, re, sys
lines = open(sys.argv[1]).read().split("\n")
page = re.escape(os.path.basename(sys.argv[1]))
cited = {int(n) for n in re.findall(r"\((?:docs/)?" + page + r":(\d+)\)", open(sys.argv[2]).read())}
def in_recipe(n):
    k = n - 2
    while k >= 0 and not lines[k].startswith("```"):
        k -= 1
    return k > 0 and lines[k] != "```" and lines[k - 1].startswith("<!-- test: client ")
print("errors naming a recipe's line of the page:", "yes" if cited else "none", "(all inside a recipe)" if cited and all(map(in_recipe, cited)) else "")
PY
rm -rf "$drifted" "$SCRATCH/drift.lines" "$SCRATCH/drift.out"
