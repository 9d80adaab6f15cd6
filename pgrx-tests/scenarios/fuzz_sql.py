#!/usr/bin/env python3
"""Hostile input at the SQL boundary, for the scenario fuzz_sql (pgrx-tests/scenarios/fuzz_sql.sh).

Writes SQL on stdout: one `SELECT fuzz('<function>', $c$<expression>$c$)` per case, in batches of
a transaction each. `fuzz()` (defined by the scenario) runs the expression with EXECUTE and records
its SQLSTATE (or 'ok'), whether it was NULL, and the value, so that a refusal by PostgreSQL's own
input functions (a timestamp out of range, a byte that is not UTF-8) is caught like ours.

Deterministic: a fixed seed and a fixed number of cases. Each kind of case draws from a random
stream of its own (seeded by the seed and the kind's name), so that a new kind, or a new preset,
changes only its own lines of the summary (expected/fuzz_sql.out), never another kind's values.
The presets are the server's (snowflake_presets(), passed by the scenario): each is a kind.

Usage: fuzz_sql.py SEED CASES_PER_KIND PRESET...
"""
import random
import sys

seed, per_kind, presets = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]


def stream(kind):
    """The random stream of one kind of case (a str seed is hashed with SHA-512: the same on
    every run and machine)."""
    return random.Random(f"{seed}/{kind}")


I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
# Names that are no preset, or one written otherwise (case, blanks): a kind of their own.
ODD_LAYOUTS = ["server", "SERVER", " Discord ", "", "uuid", "twitter\t", "snowflake", "Sonyflake "]


def bigint(rng):
    pick = rng.random()
    if pick < 0.25:
        return rng.choice([I64_MIN, I64_MIN + 1, -1, 0, 1, I64_MAX, I64_MAX - 1, 2**62, -(2**62), 2**41, 4194304])
    if pick < 0.5:
        k = rng.randrange(0, 63)
        return rng.choice([2**k, 2**k - 1, -(2**k), 2**k + 1])
    if pick < 0.75:
        return rng.randrange(0, 2**63)  # ids of every era and field
    return rng.randrange(I64_MIN, I64_MAX + 1)


def int4(rng):
    pick = rng.random()
    if pick < 0.4:
        return rng.choice([I32_MIN, -1, 0, 1, 7, 1023, 1024, 4095, 4096, 65535, 65536, 2**24, I32_MAX])
    if pick < 0.8:
        return rng.randrange(-5, 70000)
    return rng.randrange(I32_MIN, I32_MAX + 1)


def timestamptz(rng):
    pick = rng.random()
    if pick < 0.3:
        return rng.choice([
            "'infinity'", "'-infinity'", "'epoch'", "'1969-12-31 23:59:59.999+00'", "'2024-12-31 23:59:59.999999+00'",
            "'2025-01-01 00:00:00+00'", "'2025-01-01 00:00:00.001+00'", "'294276-12-31 23:59:59.999999+00'",
            "'294277-01-01 00:00:00+00'", "'4713-01-01 00:00:00+00 BC'", "'4714-11-24 00:00:00+00 BC'",
            "'2094-09-07 15:47:35.551+00'", "'2094-09-07 15:47:35.552+00'", "'now'", "'allballs'", "''",
            "'2025-02-30 00:00:00+00'", "'2025-01-01 25:00:00+00'", "NULL",
        ]) + "::timestamptz"
    if pick < 0.6:
        # Anywhere in timestamptz's range, to the microsecond.
        us = rng.randrange(-211813488000000000, 9223371331200000000)
        return f"to_timestamp(0) + make_interval(secs => {us} / 1000000.0)"
    # Near the default layout's range (2025 to 2094).
    ms = rng.randrange(1735689600000 - 10**6, 3935689600000 + 10**6)
    return f"to_timestamp({ms} / 1000.0)"


ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
LOOKALIKES = ["а", "е", "о", "р", "с", "х", "ı", "ℓ", "０", "１", "ｚ", "Ａ", "\u200b", "\u00a0", "0", "1", "8", "9", "ß", "ǅ"]


def token_text(rng):
    """A Python string that looks like, or not at all like, a public id."""
    pick = rng.random()
    base = "".join(rng.choice(ALPHABET) for _ in range(26))
    if pick < 0.15:
        return rng.choice(["", " ", "a", "a" * 25, "a" * 27, "=" * 26, "\t" + base, base + "\n", "NULL", "null"])
    if pick < 0.3:
        return "".join(rng.choice([c.upper(), c]) for c in base)  # mixed case
    if pick < 0.5:
        i = rng.randrange(26)
        return base[:i] + rng.choice(LOOKALIKES) + base[i + 1:]
    if pick < 0.6:
        return "".join(chr(rng.randrange(1, 0x2FFFF)) for _ in range(rng.randrange(1, 40))).replace("\ud800", "")
    return base


def sql_text(s):
    """A SQL expression of type text for s (no surrogates, no NUL)."""
    s = "".join(c for c in s if not 0xD800 <= ord(c) <= 0xDFFF)
    return "'" + s.replace("'", "''") + "'::text"


def string_expr(rng):
    pick = rng.random()
    if pick < 0.1:
        return rng.choice([
            "repeat('a', 10240)", "repeat('A2', 5120)", "repeat(' ', 10240)", "NULL::text",
            r"E'\xff\xfe'", r"E'\xc3\x28'", r"E'\u00e9tait'", r"E'\uD800'", r"E'\x'", r"E'\777'",
            "convert_from('\\xe282ac'::bytea, 'UTF8')", "chr(1) || repeat('b', 25)",
        ])
    return sql_text(token_text(rng))


# Each kind: a name, and a function of its stream that returns its cases (function, expression)
# for one round. Cases that a check compares with their neighbours (the string input alone, then
# from_public, then try_from_public) are one kind, so they stay side by side.


def ids(rng):
    i = f"'{bigint(rng)}'"  # quoted: -9223372036854775808::bigint would parse as -(9223372036854775808)
    return [
        ("snowflake_decode(bigint)", f"(snowflake_decode({i}::bigint)).*"),
        ("snowflake_timestamp", f"snowflake_timestamp({i}::bigint)"),
        ("snowflake_machine_id", f"snowflake_machine_id({i}::bigint)"),
        ("snowflake_sequence", f"snowflake_sequence({i}::bigint)"),
        ("snowflake_to_public", f"snowflake_to_public({i}::bigint)"),
        ("round trip", f"snowflake_from_public(snowflake_to_public({i}::bigint)) = {i}::bigint"),
    ]


def json_form(rng):
    return [("snowflake_to_jsonb", f"snowflake_to_jsonb('{bigint(rng)}'::bigint)")]


def preset(name):
    def cases(rng):
        return [(f"snowflake_decode(bigint,text): {name}", f"(snowflake_decode('{bigint(rng)}'::bigint, {sql_text(name)})).*")]
    return cases


def odd_layouts(rng):
    return [("snowflake_decode(bigint,text): odd names",
             f"(snowflake_decode('{bigint(rng)}'::bigint, {sql_text(rng.choice(ODD_LAYOUTS))})).*")]


def any_layout(rng):
    return [("snowflake_decode(bigint,text): any string", f"(snowflake_decode('{bigint(rng)}'::bigint, {string_expr(rng)})).*")]


def strings(rng):
    s = string_expr(rng)
    # The input alone first: PostgreSQL may refuse it before any function of ours sees it.
    return [
        ("(the string input alone)", f"{s} AS input"),
        ("snowflake_from_public", f"snowflake_from_public({s})"),
        ("snowflake_try_from_public", f"snowflake_try_from_public({s})"),
    ]


def times(rng):
    t = timestamptz(rng)
    return [
        ("snowflake_from_timestamp", f"snowflake_from_timestamp({t})"),
        ("snowflake_compose", f"snowflake_compose({t}, {int4(rng)}, {int4(rng)})"),
        ("snowflake_compose round trip",
         f"(SELECT snowflake_machine_id(c) || '/' || snowflake_sequence(c) FROM snowflake_compose({t}, {int4(rng)}, {int4(rng)}) c)"),
    ]


def altered_tokens(rng):
    # A valid token of a random id, then altered as a user or an attacker might.
    k = rng.randrange(0, 2**63)
    tok = f"snowflake_to_public({k})"
    pos = rng.randrange(1, 27)
    expr = rng.choice([
        f"upper({tok})", f"initcap({tok})", f"' ' || {tok} || ' '", tok,
        f"translate({tok}, 'aeopcx', 'аеорсх')",  # Cyrillic lookalikes
        f"overlay({tok} placing {sql_text(rng.choice(LOOKALIKES + list(ALPHABET)))} from {pos} for 1)",
        f"left({tok}, 25)", f"{tok} || 'a'", f"reverse({tok})",
        f"translate({tok}, 'abcdefghijklmnopqrstuvwxyz', 'ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺ')",
    ])
    # It should decode to k exactly when it is the token up to ASCII case, with nothing around it:
    # whitespace is refused, not trimmed (issue 62); any other 26 characters decode with
    # probability 2^-64.
    expected = f"CASE WHEN lower({expr}) = {tok} THEN {k}::bigint END"
    return [
        ("altered token, from_public", f"snowflake_from_public({expr}) IS NOT DISTINCT FROM {expected}"),
        ("altered token, try_from_public", f"snowflake_try_from_public({expr}) IS NOT DISTINCT FROM {expected}"),
    ]


# (name, rounds, cases of a round). A preset's cases: a fifth of a kind's, each preset its own.
KINDS = [("ids", per_kind, ids), ("strings", per_kind, strings), ("times", per_kind, times),
         ("any layout", per_kind, any_layout), ("altered tokens", per_kind, altered_tokens),
         ("json form", per_kind, json_form),
         ("odd layouts", max(1, per_kind // 5), odd_layouts)]
KINDS += [(f"preset {name}", max(1, per_kind // 5), preset(name)) for name in presets]

cases = []
for name, rounds, kind in KINDS:
    rng = stream(name)
    for _ in range(rounds):
        cases.extend(kind(rng))

BATCH = 500
for n in range(0, len(cases), BATCH):
    print("BEGIN;")
    for fn, expr in cases[n:n + BATCH]:
        assert "$c$" not in expr
        print(f"SELECT fuzz('{fn}', $c${expr}$c$);")
    print("COMMIT;")
print(f"-- {len(cases)} cases", file=sys.stderr)
