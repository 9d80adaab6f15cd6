"""Markdown lines as the checkers read them: which are inside fenced code blocks (``` or ~~~, of
any length) and which are prose, so that a heading or a link inside an example is not taken for
one, and an example is not taken for prose."""
import re


def _fenced(lines):
    """(index, line, in_code) of each line that is not a fence itself."""
    fence = None
    for i, line in enumerate(lines):
        s = line.strip()
        if fence:
            if s.startswith(fence) and s.strip("`~") == "":
                fence = None
                continue
            yield i, line, True
            continue
        m = re.match(r"(```+|~~~+)", s)
        if m:
            fence = m.group(1)
            continue
        yield i, line, False


def outside_code(lines):
    """(index, line) of each line of `lines` outside fenced code blocks (fences excluded)."""
    return ((i, line) for i, line, code in _fenced(lines) if not code)


def inside_code(lines):
    """(index, line) of each line of `lines` inside fenced code blocks (fences excluded)."""
    return ((i, line) for i, line, code in _fenced(lines) if code)
