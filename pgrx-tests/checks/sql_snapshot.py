#!/usr/bin/env python3
"""The SQL surface of pg_snowflake may change only with a new version and an upgrade script.

pgrx generates the install script (pg_snowflake--<version>.sql) from the code. A normalized copy
of it is kept in pgrx-tests/checks/sql-snapshot/pg_snowflake--<version>.sql: without comments (pgrx puts
the Rust source paths and module names of each item into comments and /* */ annotations, and
those move when the code moves) and blank lines. pgrx does not keep the order of its blocks
("connected objects") stable, so the generated blocks are put in the snapshot's order first
(`in_snapshot_order`: a block the snapshot has takes its place there, a new one goes after every
block pgrx put before it), and the check compares that with the snapshot, the refresh writes it:
pgrx's order never shows as a change, and a refresh moves nothing that did not change. Function
bodies (dollar-quoted) are kept verbatim: they are what the catalog stores.

  check GENERATED     fails when the generated SQL differs from the snapshot, and says what to do:
                      bump the version, write sql/pg_snowflake--OLD--NEW.sql, refresh; it also
                      fails when a released version (a frozen sql/pg_snowflake--X.Y.Z.sql) has no
                      chain of upgrade scripts to the current version
  refresh GENERATED   replaces the snapshot with GENERATED, normalized; allowed only when the SQL
                      is unchanged or the version was bumped with an upgrade path from the
                      snapshot's version. The snapshot's version, now released, is frozen as
                      sql/pg_snowflake--OLD.sql (unless there is one), for the upgrade test.
                      With --unreleased: the current version was never released, so its SQL may
                      still change; the snapshot of it is replaced (the upgrade scripts into it
                      must say the same: the extension_upgrade scenario checks)
  normalize FILE      prints FILE normalized

Options: --project DIR (default: this checkout).
"""
import argparse
import difflib
import pathlib
import re
import sys
import tomllib

EXT = "pg_snowflake"
BEGIN = "/* <begin connected objects> */"
END = "/* </end connected objects> */"
DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def strip_comments(sql):
    """The SQL without -- and /* */ comments; quoted strings, identifiers and dollar-quoted bodies
    are kept as they are. Returns (code, literals): literals replaced by \0N\0 placeholders."""
    out, lits, i, n = [], [], 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c in "'\"":
            j = i + 1
            while j < n:
                if sql[j] == c and sql[j + 1:j + 2] == c:
                    j += 2
                elif sql[j] == c:
                    break
                else:
                    j += 1
            lits.append(sql[i:j + 1])
            out.append(f"\0{len(lits) - 1}\0")
            i = j + 1
        elif c == "$" and DOLLAR.match(sql, i) and not (i and (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            tag = DOLLAR.match(sql, i).group(0)
            j = sql.find(tag, i + len(tag))
            j = n if j < 0 else j + len(tag)
            lits.append(sql[i:j])
            out.append(f"\0{len(lits) - 1}\0")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out), lits


def normalize_block(block):
    code, lits = strip_comments(block)
    lines = [line.rstrip() for line in code.split("\n")]
    code = "\n".join(line for line in lines if line.strip())
    return re.sub("\0([0-9]+)\0", lambda m: lits[int(m.group(1))], code).strip()


def blocks(sql):
    """pgrx's blocks of connected objects, normalized, in their order; empty ones dropped."""
    parts = []
    for chunk in sql.split(BEGIN)[1:] if BEGIN in sql else [sql]:
        body = normalize_block(chunk.split(END)[0])
        if body:
            parts.append(body)
    return parts


def normalized(sql):
    """The blocks in their order, each between pgrx's markers (so that a snapshot splits the same
    way): still a valid install script."""
    return joined(blocks(sql))


def joined(parts):
    return "".join(f"{BEGIN}\n{b}\n{END}\n\n" for b in parts)


def block_key(block):
    """What a block creates: a function's name and arguments (up to the line that closes them),
    else its first line."""
    lines = block.split("\n")
    if lines[0].rstrip().endswith("("):
        for i, line in enumerate(lines):
            if line.startswith(")"):
                return "\n".join(lines[:i + 1])
    return lines[0]


def keyed(parts):
    """(key, n-th block of that key) for each block: two blocks may say the same."""
    seen = {}
    out = []
    for b in parts:
        k = block_key(b)
        seen[k] = seen.get(k, 0) + 1
        out.append((k, seen[k]))
    return out


def in_snapshot_order(snapshot_parts, generated_parts):
    """The generated blocks in the snapshot's order: each block the snapshot has (by what it
    creates) in its place there, changed or not; each new one right after the last placed of the
    blocks pgrx put before it (so whatever it needs, which pgrx puts before it, comes first). Blocks
    the snapshot has and pgrx no longer generates are left out."""
    rank = {k: i for i, k in enumerate(keyed(snapshot_parts))}
    gen_keys = keyed(generated_parts)
    order = sorted((k for k in gen_keys if k in rank), key=rank.get)
    for i, k in enumerate(gen_keys):
        if k in rank:
            continue
        before = [order.index(p) for p in gen_keys[:i]]
        order.insert(max(before, default=-1) + 1, k)
    text = dict(zip(gen_keys, generated_parts))
    return [text[k] for k in order]


def project_facts(root):
    version = tomllib.loads((root / "Cargo.toml").read_text())["package"]["version"]
    frozen, edges = [], {}
    for f in sorted((root / "sql").glob(f"{EXT}--*.sql")):
        parts = f.name[len(EXT) + 2:-4].split("--")
        if len(parts) == 1:
            frozen.append(parts[0])
        elif len(parts) == 2:
            edges.setdefault(parts[0], set()).add(parts[1])
    snaps = sorted((root / "pgrx-tests" / "checks" / "sql-snapshot").glob(f"{EXT}--*.sql"))
    return version, frozen, edges, snaps


def has_path(edges, a, b):
    seen, todo = {a}, [a]
    while todo:
        x = todo.pop()
        if x == b:
            return True
        for y in edges.get(x, ()):
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return False


def snapshot_version(path):
    return path.name[len(EXT) + 2:-4]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["check", "refresh", "normalize"])
    ap.add_argument("file")
    ap.add_argument("--project", default=pathlib.Path(__file__).resolve().parents[2])
    ap.add_argument("--unreleased", action="store_true")
    args = ap.parse_args()
    root = pathlib.Path(args.project)
    text = pathlib.Path(args.file).read_text()
    if args.command == "normalize":
        sys.stdout.write(normalized(text))
        return 0

    version, frozen, edges, snaps = project_facts(root)
    refresh_cmd = "bash pgrx-tests/checks/sql_snapshot.sh --refresh"
    problems = []
    if len(snaps) > 1:
        problems.append(f"more than one snapshot in pgrx-tests/checks/sql-snapshot/: {', '.join(s.name for s in snaps)}")
    snap = snaps[0] if len(snaps) == 1 else None
    old = snapshot_version(snap) if snap else None
    snap_parts = blocks(snap.read_text()) if snap else []
    ordered = in_snapshot_order(snap_parts, blocks(text))
    changed = snap is None or snap_parts != ordered
    new_script = f"sql/{EXT}--{old}--<new version>.sql"

    if args.command == "refresh":
        if snap and not changed and old == version:
            print(f"the snapshot of {version} is up to date")
            return 0
        if snap and old == version and args.unreleased:
            dest = root / "pgrx-tests" / "checks" / "sql-snapshot" / f"{EXT}--{version}.sql"
            dest.write_text(joined(ordered))
            print(f"replaced the snapshot of the unreleased {version}: pgrx-tests/checks/sql-snapshot/{dest.name}")
            return 0
        if snap and old == version:
            print(f"refusing: the SQL changed but the version is still {version}: bump the version in Cargo.toml "
                  f"(and pg_module_magic!, META.json) and write {new_script} first "
                  f"(or, if {version} was never released, --unreleased)")
            return 1
        if snap and not has_path(edges, old, version):
            print(f"refusing: no upgrade path from {old} (the snapshot's version) to {version}: "
                  f"write sql/{EXT}--{old}--{version}.sql first")
            return 1
        if snap:
            frozen_file = root / "sql" / f"{EXT}--{old}.sql"
            if not frozen_file.exists():
                frozen_file.write_text(f"-- The install script of {EXT} {old} as released (normalized by "
                                       f"pgrx-tests/checks/sql_snapshot.py: pgrx's comments removed).\n\n"
                                       + snap.read_text())
                print(f"froze the install script of {old} as sql/{frozen_file.name}")
            snap.unlink()
        dest = root / "pgrx-tests" / "checks" / "sql-snapshot" / f"{EXT}--{version}.sql"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(joined(ordered))
        print(f"wrote the snapshot of {version}: pgrx-tests/checks/sql-snapshot/{dest.name}")
        return 0

    # check
    if (root / "sql" / f"{EXT}--{version}.sql").exists():
        problems.append(f"sql/{EXT}--{version}.sql is there, but the install script of the current version "
                        f"is generated by pgrx; freeze a version only once it is released and a newer one is built")
    # A released version that reaches the snapshot's version is reported below, with that link.
    link_missing = old is not None and old != version and not has_path(edges, old, version)
    for f in frozen:
        if f != version and not has_path(edges, f, version) and not (link_missing and has_path(edges, f, old)):
            problems.append(f"the released version {f} has no chain of upgrade scripts to {version}: "
                            f"write sql/{EXT}--{f}--{version}.sql (or the missing link)")
    if snap is None:
        problems.append(f"there is no snapshot of the generated SQL: create it with {refresh_cmd}")
    elif changed and old == version:
        problems.append(f"the generated SQL differs from the snapshot of {version}, and the version was not bumped: "
                        f"the SQL of {version} must stay as released. Bump the version in Cargo.toml "
                        f"(and pg_module_magic!, META.json), write {new_script} to bring a database from "
                        f"{old} to it (the extension_upgrade scenario checks it does), then refresh the "
                        f"snapshot with {refresh_cmd}. (If {version} was never released, change the upgrade "
                        f"scripts into {version} instead, then {refresh_cmd} --unreleased.)")
    elif old != version and not has_path(edges, old, version):
        problems.append(f"the version is {version}, the snapshot is of {old}, and there is no upgrade path "
                        f"from {old} to {version}: write sql/{EXT}--{old}--{version}.sql, then refresh the "
                        f"snapshot with {refresh_cmd}")
    elif old != version:
        problems.append(f"the snapshot is of {old}, the version is {version} (with an upgrade path): "
                        f"refresh the snapshot with {refresh_cmd}")
    if problems:
        for p in problems:
            print(f"SQL check: {p}")
        if changed and snap:
            print("SQL check: what changed (- snapshot, + generated in the snapshot's order, comments removed;"
                  " what a refresh writes):")
            a = "\n\n".join(snap_parts).split("\n")
            b = "\n\n".join(ordered).split("\n")
            for line in list(difflib.unified_diff(a, b, n=1, lineterm=""))[2:]:
                print("    " + line)
        return 1
    print(f"SQL check: the generated SQL matches the snapshot of {version}; "
          f"every released version ({', '.join(frozen) or 'none'}) has an upgrade path to it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
