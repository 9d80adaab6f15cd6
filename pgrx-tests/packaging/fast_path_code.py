#!/usr/bin/env python3
"""The raw entry point's machine code (issue 61): `snowflake_nextval_fast` in a built library may
call nothing but the vDSO clock (`clock_gettime`) and, for every case but the plain one, the
guarded function (`pg_snowflake_nextval_guarded`, exported so that a stripped library, as the
packages ship it, still names it): no panic site, no trap, no call into PostgreSQL,
no allocation. Every call and jump out of the function's own code is read from objdump's
disassembly and named. Prints what it found; exits 1 when the function calls or jumps anywhere
else (naming each target), or has no code. A call through the GOT is named by the library's
dynamic relocation of that slot (objdump -R), since a stripped library has no other name for it.

Usage: fast_path_code.py LIBRARY [SYMBOL]   (SYMBOL: snowflake_nextval_fast by default)
"""
import re
import subprocess
import sys

ALLOWED = [
    (re.compile(r"^clock_gettime(@|$)"), "the vDSO clock"),
    (re.compile(r"^pg_snowflake_nextval_guarded(@|$)"), "the guarded function"),
]


def got_slots(library):
    """{address: symbol} of the library's dynamic relocations (its GOT's slots)."""
    out = subprocess.run(["objdump", "-R", library], check=True, capture_output=True, text=True).stdout
    slots = {}
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+)\s+R_\S+\s+(\S+)", line)
        if m:
            slots[int(m.group(1), 16)] = re.sub(r"\+0x[0-9a-f]+$", "", m.group(2))
    return slots


def targets(library, symbol):
    slots = got_slots(library)
    out = subprocess.run(
        ["objdump", "-d", "-C", "--no-show-raw-insn", f"--disassemble={symbol}", library],
        check=True, capture_output=True, text=True).stdout
    lines = [l for l in out.splitlines() if re.match(r"^\s+[0-9a-f]+:\t", l)]
    if not lines:
        return None, []
    addrs = [int(l.split(":")[0], 16) for l in lines]
    lo, hi = min(addrs), max(addrs)
    found = []
    for line in lines:
        ins = line.split("\t", 1)[1].strip()
        op = ins.split()[0]
        if op == "ud2":
            found.append(("a trap (ud2)", line.strip()))
            continue
        if not (op.startswith("call") or op.startswith("j")):
            continue
        # A direct target: "call 1137f6 <name+0x..>"; through the GOT: "call *0x..(%rip) # addr <name@GLIBC>".
        m = re.search(r"\s([0-9a-f]+) <([^>]+)>", ins) if "#" not in ins else re.search(r"#\s*([0-9a-f]+) <([^>]+)>", ins)
        if m is None:
            found.append(("an indirect call or jump", line.strip()))
            continue
        address, name = int(m.group(1), 16), m.group(2)
        if "#" not in ins and lo <= address <= hi:
            continue  # within the function
        if "#" in ins:
            name = slots.get(address, name)  # the GOT slot's symbol, stripped library or not
        elif re.search(r"\+0x[0-9a-f]+$", name):
            name = f"code at {address:x}, inside {re.sub(r'[+]0x[0-9a-f]+$', '', name)} as far as the symbols say (a local function of a stripped library)"
        name = re.sub(r"\+0x[0-9a-f]+$", "", name)
        found.append((name, line.strip()))
    return len(lines), found


def main():
    library = sys.argv[1]
    symbol = sys.argv[2] if len(sys.argv) > 2 else "snowflake_nextval_fast"
    count, found = targets(library, symbol)
    if count is None:
        print(f"{symbol}: not in {library}")
        return 1
    allowed, refused = set(), []
    for name, line in found:
        what = next((why for pattern, why in ALLOWED if pattern.search(name)), None)
        if what:
            allowed.add(what)
        else:
            refused.append((name, line))
    if refused:
        print(f"{symbol}: calls or jumps outside the fast path's allowed set:")
        for name, line in refused:
            print(f"  {name}: {line}")
        return 1
    print(f"{symbol}: calls only {', '.join(sorted(allowed))}; no panic site, no trap, no call into PostgreSQL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
