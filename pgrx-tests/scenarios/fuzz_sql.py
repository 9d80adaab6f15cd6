#!/usr/bin/env python3
"""Hostile input at the SQL boundary, for the scenario fuzz_sql (pgrx-tests/scenarios/fuzz_sql.sh).

Writes SQL on stdout: one `SELECT fuzz('<function>', $c$<expression>$c$)` per case, in batches of
a transaction each. `fuzz()` (defined by the scenario) runs the expression with EXECUTE and records
its SQLSTATE (or 'ok'), whether it was NULL, and the value, so that a refusal by PostgreSQL's own
input functions (a timestamp out of range, a byte that is not UTF-8) is caught like ours.

Deterministic: a fixed seed and a fixed number of cases, so the summary can be compared.

Usage: fuzz_cases.py SEED CASES_PER_KIND
"""
import random
import sys

seed, per_kind = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
PRESETS = ["twitter", "discord", "instagram", "sonyflake", "pgedge", "server", "SERVER", " Discord ", "", "uuid", "twitter\t"]


def bigint():
    pick = rng.random()
    if pick < 0.25:
        return rng.choice([I64_MIN, I64_MIN + 1, -1, 0, 1, I64_MAX, I64_MAX - 1, 2**62, -(2**62), 2**41, 4194304])
    if pick < 0.5:
        k = rng.randrange(0, 63)
        return rng.choice([2**k, 2**k - 1, -(2**k), 2**k + 1])
    if pick < 0.75:
        return rng.randrange(0, 2**63)  # ids of every era and field
    return rng.randrange(I64_MIN, I64_MAX + 1)


def int4():
    pick = rng.random()
    if pick < 0.4:
        return rng.choice([I32_MIN, -1, 0, 1, 7, 1023, 1024, 4095, 4096, 65535, 65536, 2**24, I32_MAX])
    if pick < 0.8:
        return rng.randrange(-5, 70000)
    return rng.randrange(I32_MIN, I32_MAX + 1)


def timestamptz():
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


def token_text():
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


def string_expr():
    pick = rng.random()
    if pick < 0.1:
        return rng.choice([
            "repeat('a', 10240)", "repeat('A2', 5120)", "repeat(' ', 10240)", "NULL::text",
            r"E'\xff\xfe'", r"E'\xc3\x28'", r"E'\u00e9tait'", r"E'\uD800'", r"E'\x'", r"E'\777'",
            "convert_from('\\xe282ac'::bytea, 'UTF8')", "chr(1) || repeat('b', 25)",
        ])
    return sql_text(token_text())


cases = []
for _ in range(per_kind):
    i = f"'{bigint()}'"  # quoted: -9223372036854775808::bigint would parse as -(9223372036854775808)
    cases.append(("snowflake_decode(bigint)", f"(snowflake_decode({i}::bigint)).*"))
    cases.append(("snowflake_decode(bigint,text)", f"(snowflake_decode({i}::bigint, {sql_text(rng.choice(PRESETS))})).*"))
    cases.append(("snowflake_timestamp", f"snowflake_timestamp({i}::bigint)"))
    cases.append(("snowflake_machine_id", f"snowflake_machine_id({i}::bigint)"))
    cases.append(("snowflake_sequence", f"snowflake_sequence({i}::bigint)"))
    cases.append(("snowflake_to_public", f"snowflake_to_public({i}::bigint)"))
    cases.append(("round trip", f"snowflake_from_public(snowflake_to_public({i}::bigint)) = {i}::bigint"))
    s = string_expr()
    # The input alone first: PostgreSQL may refuse it before any function of ours sees it.
    cases.append(("(the string input alone)", f"{s} AS input"))
    cases.append(("snowflake_from_public", f"snowflake_from_public({s})"))
    cases.append(("snowflake_try_from_public", f"snowflake_try_from_public({s})"))
    t = timestamptz()
    cases.append(("snowflake_from_timestamp", f"snowflake_from_timestamp({t})"))
    cases.append(("snowflake_compose", f"snowflake_compose({t}, {int4()}, {int4()})"))
    cases.append(("snowflake_compose round trip",
                  f"(SELECT snowflake_machine_id(c) || '/' || snowflake_sequence(c) FROM snowflake_compose({t}, {int4()}, {int4()}) c)"))
    cases.append(("snowflake_decode(bigint,text)", f"(snowflake_decode({i}::bigint, {string_expr()})).*"))
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
    cases.append(("altered token, from_public", f"snowflake_from_public({expr}) IS NOT DISTINCT FROM {expected}"))
    cases.append(("altered token, try_from_public", f"snowflake_try_from_public({expr}) IS NOT DISTINCT FROM {expected}"))

BATCH = 500
for n in range(0, len(cases), BATCH):
    print("BEGIN;")
    for fn, expr in cases[n:n + BATCH]:
        assert "$c$" not in expr
        print(f"SELECT fuzz('{fn}', $c${expr}$c$);")
    print("COMMIT;")
print(f"-- {len(cases)} cases", file=sys.stderr)
