#!/usr/bin/env python3
"""A code block of the manual that the README check does not run (`<!-- test: skip REASON -->`)
because a scenario runs it is compared with that scenario (issue 35):

- the scenario the reason names (pgrx-tests/scenarios/NAME.sh or .sql) must exist;
- a scenario that reads the page itself (its source names the page, or the heading of the
  block's section) runs the block as printed: nothing more to compare;
- otherwise what the block shows as output must be in the scenario's expected output
  (pgrx-tests/expected/NAME.out, or a NAME.pgNN.out), as consecutive lines: the output block that
  follows it, or, in the block, the `-- ` comment lines after its last statement. `...` in the
  page stands for any text; a line the scenario shortens with `...` matches the page's line that
  begins as it does;
- a block that shows no output: each of its statements must be in the scenario's source or its
  expected output, by its first two words, the extension's functions it calls and its WITH (...) options (the names of
  databases and servers differ: the page's mydb and db1 are the scenario's app and n1).

A failure names the file and line.

Usage: python3 pgrx-tests/checks/mirrored_blocks.py [ROOT]   (ROOT: a checkout, default this one)
"""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."))
os.environ.setdefault("PROJECT_DIR", ROOT)
os.environ["MANUAL_ROOT"] = ROOT
sys.path.insert(0, os.path.join(HERE, "readme"))
import manual  # noqa: E402

failures = []


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def blocks(lines):
    """(index of the directive, reason, code lines (index, text), output lines) of skipped blocks."""
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"\s*<!-- test: skip (.*?)\s*-->\s*$", line)
        if not m or i + 1 >= len(lines) or not lines[i + 1].strip().startswith("```"):
            continue
        j = i + 2
        code = []
        while j < len(lines) and lines[j].strip() != "```":
            code.append((j, lines[j]))
            j += 1
        output = []
        if j + 1 < len(lines) and lines[j + 1].strip() == "```":
            k = j + 2
            while k < len(lines) and lines[k].strip() != "```":
                output.append((k, lines[k]))
                k += 1
        out.append((i, m.group(1), code, output))
    return out


def line_matches(page, expected):
    page, expected = page.strip(), expected.strip()
    if page == expected:
        return True
    if "..." in page and re.fullmatch(".*".join(re.escape(p) for p in page.split("...")), expected):
        return True
    if expected.endswith("...") and page.startswith(expected[:-3].rstrip()):
        return True
    return False


def found_in(shown, outputs):
    """Whether the lines `shown` are consecutive lines of one of the outputs; else the first
    line of `shown` that no output has where the run would need it."""
    best = (0, shown[0])
    for text in outputs:
        lines = text.split("\n")
        for start in range(len(lines)):
            n = 0
            while n < len(shown) and start + n < len(lines) and line_matches(shown[n][1], lines[start + n]):
                n += 1
            if n == len(shown):
                return None
            if n > best[0]:
                best = (n, shown[n])
    return best[1]


def statements(code):
    text = "\n".join(re.sub(r"--.*$", "", l) for _, l in code)
    return [" ".join(s.split()) for s in text.split(";") if s.strip()]


def main():
    compared = 0
    for page in manual.pages(ROOT):
        lines = page.lines
        heads = page.headings()
        for i, reason, code, output in blocks(lines):
            names = re.findall(r"pgrx-tests/scenarios/(\w+)\.(sh|sql)", reason)
            if not names:
                continue
            name, ext = names[0]
            src_path = f"pgrx-tests/scenarios/{name}.{ext}"
            if not os.path.isfile(os.path.join(ROOT, src_path)):
                failures.append(f"{page.name}:{i + 1}: the scenario {src_path} does not exist")
                continue
            source = read(src_path)
            section = next((t for h, _, t in reversed(heads) if h < i), None)
            if os.path.basename(page.name) in source or (section and re.search(rf"\b{re.escape(section)}\b", source)):
                continue  # it reads the page and runs the block as printed
            outputs = [read(os.path.relpath(p, ROOT)) for p in sorted(glob.glob(os.path.join(ROOT, f"pgrx-tests/expected/{name}.*out")))]
            if not outputs:
                failures.append(f"{page.name}:{i + 1}: the scenario {name} has no expected output")
                continue
            compared += 1
            shown = [(k, l) for k, l in output if l.strip()]
            if not shown:
                # The comment lines after the block's last statement: what it printed.
                last = max((n for n, (_, l) in enumerate(code) if l.strip() and not l.strip().startswith("--")), default=-1)
                shown = [(k, re.sub(r"^\s*-- ?", "", l)) for k, l in code[last + 1:] if l.strip().startswith("--")]
            if shown:
                missing = found_in(shown, outputs)
                if missing:
                    failures.append(f"{page.name}:{missing[0] + 1}: this line, shown as what {src_path} prints, is not in its expected output: {missing[1].strip()}")
                continue
            flat_source = " ".join(source.split())
            flat_out = " ".join(" ".join(outputs).split())
            for st in statements(code):
                # Names differ (the page's mydb and db1 are the scenario's app and n1): the
                # statement's first three words and the extension's functions it calls.
                words = " ".join(st.split()[:2])
                parts = re.findall(r"snowflake_\w+\(", st) + re.findall(r"WITH \([^)]*\)", st)
                missing = [w for w in [words] + parts if w not in flat_source and w not in flat_out]
                if missing:
                    k = next((k for k, l in code if missing[0] in " ".join(l.split())), None)
                    if k is None:
                        k = next((k for k, l in code if " ".join(l.split()).startswith(st[:30])), code[0][0])
                    failures.append(f"{page.name}:{k + 1}: this statement is not in {src_path}, which the block says runs it: {st[:80]}")
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print(f"the manual's blocks that scenarios run: {compared} compared with their scenario")


main()
