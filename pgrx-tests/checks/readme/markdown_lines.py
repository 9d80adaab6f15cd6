"""Markdown lines as the checkers read them: code blocks (fenced with ``` or ~~~, of any length)
left out, so that a heading or a link inside an example is not taken for one."""
import re


def outside_code(lines):
    """(index, line) of each line of `lines` outside fenced code blocks (fences excluded)."""
    fence = None
    for i, line in enumerate(lines):
        s = line.strip()
        if fence:
            if s.startswith(fence) and s.strip("`~") == "":
                fence = None
            continue
        m = re.match(r"(```+|~~~+)", s)
        if m:
            fence = m.group(1)
            continue
        yield i, line
