"""The monitoring scenario's checks of a postgres_exporter scrape (Prometheus' text format).

  monitoring.py compare SCRAPE EXPECTED_JSON   each metric of monitoring/queries.yaml against the
                                               values snowflake_stats(), snowflake_layout() and
                                               snowflake_machine_id_status() gave
  monitoring.py value SCRAPE NAME              the value of the one sample NAME (or "none")
  monitoring.py count SCRAPE PREFIX            how many samples have a name starting with PREFIX
  monitoring.py page-lines PAGE FILE           the lines the page gives for the server's FILE
                                               (pg_hba.conf, pg_ident.conf): its code block under
                                               "<!-- test: skip ... writes these lines into its
                                               server's FILE -->", as printed

EXPECTED_JSON is one object: "columns" (snowflake_stats()'s columns, in order), "values" (metric
name -> the value computed from the functions' row, independently of the queries file), "info"
(the info metric's labels), "status_columns" (snowflake_machine_id_status()'s columns, in order),
"status" (metric name -> value, as "values") and "source" (the label of those metrics). Prints one line per check, the same on every run: results, never
the varying numbers.
"""
import json
import math
import re
import sys

# Each column of snowflake_stats(), and the metric that carries it: the info metric's labels for
# the two that are no numbers.
METRIC_OF_COLUMN = {
    "ids_issued": "snowflake_ids_issued_total",
    "sequence_waits": "snowflake_sequence_waits_total",
    "clock_rollbacks": "snowflake_clock_rollbacks_total",
    "largest_rollback_ms": "snowflake_largest_rollback_seconds",
    "wait_time_ms": "snowflake_wait_time_seconds_total",
    "last_issued": "snowflake_last_issued_timestamp_seconds",
    "high_water_mark": "snowflake_high_water_mark_timestamp_seconds",
    "mark_writes": "snowflake_mark_writes_total",
    "mark_waits": "snowflake_mark_waits_total",
    "machine_id": "snowflake_server_info (label machine_id)",
    "layout": "snowflake_server_info (label layout)",
    "stats_reset": "snowflake_stats_reset_timestamp_seconds",
    "mark_ahead_ms": "snowflake_mark_ahead_seconds",
    "writer_waits": "snowflake_writer_waits_total",
    "mark_wait_timeouts": "snowflake_mark_wait_timeouts_total",
    "writer_takeovers": "snowflake_writer_takeovers_total",
    "standby_waits": "snowflake_standby_waits_total",
    "standby_wait_timeouts": "snowflake_standby_wait_timeouts_total",
    "clock_waits": "snowflake_clock_waits_total",
    "clock_wait_timeouts": "snowflake_clock_wait_timeouts_total",
}
# Of snowflake_layout(): when the timestamp field ends, and the most ids per second.
LAYOUT_METRICS = ["snowflake_timestamp_field_ends_timestamp_seconds", "snowflake_ids_per_second_max"]
# Each column of snowflake_machine_id_status(), and the metric of the query snowflake_machine_id
# that carries it; None: not exported (text, or kept for the function itself: the endpoints, the
# lease's id, the recorded mark, the last error).
METRIC_OF_STATUS_COLUMN = {
    "source": "the label source of the snowflake_machine_id_ metrics",
    "machine_id": "snowflake_server_info (label machine_id)",
    "leased_from": None,
    "held": "snowflake_machine_id_held",
    "lease_id": None,
    "deadline": "snowflake_machine_id_lease_deadline_timestamp_seconds",
    "time_left_ms": "snowflake_machine_id_lease_left_seconds",
    "last_renewal": "snowflake_machine_id_last_renewal_timestamp_seconds",
    "recorded_mark": None,
    "claims": "snowflake_machine_id_claims_total",
    "renewals": "snowflake_machine_id_renewals_total",
    "renewal_failures": "snowflake_machine_id_renewal_failures_total",
    "leases_lost": "snowflake_machine_id_leases_lost_total",
    "refused_calls": "snowflake_machine_id_refused_calls_total",
    "last_error": None,
    "last_error_at": None,
    # How many servers held an id of the space at the last claim: read in the status when the
    # log's claim line is not at hand (a prefix of its own: 0), not a series to watch.
    "holders_at_claim": None,
    # Where a hand-set id is reserved (text), and how many ids of the space were reserved at the
    # last read: read in the status beside holders_at_claim, not series to watch.
    "reserved_in": None,
    "reservations": None,
}
STATUS_METRICS = {m for m in METRIC_OF_STATUS_COLUMN.values() if m and m.startswith("snowflake_machine_id_")}
# The mark's lead moves with the clock between the scrape and the query: this much is the same.
# Everything else is equal (to a rounding of its decimal text).
TOLERANCE = {"snowflake_mark_ahead_seconds": 2.0}

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(path):
    """(samples, types): samples as (name, labels, value); types: name -> counter|gauge|..."""
    samples, types = [], {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                types[name] = kind
            elif line and not line.startswith("#"):
                m = SAMPLE.match(line)
                if not m:
                    raise SystemExit(f"{path}: not a sample: {line}")
                labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in LABEL.findall(m.group(3) or "")}
                samples.append((m.group(1), labels, float(m.group(4))))
    return samples, types


def compare(scrape, expected_path):
    samples, types = parse(scrape)
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    print("every column of snowflake_stats() has a metric:",
          "yes" if expected["columns"] == list(METRIC_OF_COLUMN) else f"no: the columns are {expected['columns']}")
    print("every column of snowflake_machine_id_status() has a metric or is left out on purpose:",
          "yes" if expected["status_columns"] == list(METRIC_OF_STATUS_COLUMN) else f"no: the columns are {expected['status_columns']}")
    ours = sorted({n for n, _, _ in samples if n.startswith("snowflake_")})
    wanted = sorted({m for m in METRIC_OF_COLUMN.values() if " " not in m} | set(LAYOUT_METRICS) | {"snowflake_server_info"}
                    | STATUS_METRICS)
    print("the snowflake metrics scraped are those expected:", "yes" if ours == wanted else
          f"no: missing {sorted(set(wanted) - set(ours))}, unexpected {sorted(set(ours) - set(wanted))}")
    for name in wanted:
        found = [(labels, v) for n, labels, v in samples if n == name]
        if len(found) != 1:
            print(f"{name}: {len(found)} samples, not one")
            continue
        labels, value = found[0]
        kind = "counter" if name.endswith("_total") else "gauge"
        if types.get(name) != kind:
            print(f"{name}: type {types.get(name)}, not {kind}")
        if name == "snowflake_server_info":
            got = {k: labels.get(k) for k in expected["info"]}
            print(f"{name}: value {value:g}, labels match:", "yes" if got == expected["info"] and value == 1 else f"no: {got}")
            continue
        if name in STATUS_METRICS:
            want, source = expected["status"].get(name), "snowflake_machine_id_status()"
            if labels.get("source") != expected["source"]:
                print(f"{name}: label source {labels.get('source')!r}, not {expected['source']!r}")
        else:
            want = expected["values"].get(name)
            source = f"snowflake_{'layout' if name in LAYOUT_METRICS else 'stats'}()"
        if want is None:
            same = math.isnan(value)
        else:
            same = abs(value - float(want)) <= TOLERANCE.get(name, 1e-5)
        print(f"{name} ({kind}) matches {source}:", "yes" if same else "no")


def page_lines(page, file):
    """The code block of the page under its one directive that says the scenario writes its lines
    into the server's `file`: the scenario configures its server as the page says."""
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    mark = f"pgrx-tests/scenarios/monitoring.sh writes these lines into its server's {file} "
    at = [i for i, line in enumerate(lines) if line.startswith("<!-- test: skip") and mark in line + " "]
    if len(at) != 1 or not lines[at[0] + 1].startswith("```"):
        raise SystemExit(f"{page}: not one code block under a directive saying {mark.strip()!r}")
    end = lines.index("```", at[0] + 2)
    print("\n".join(lines[at[0] + 2:end]))


def main():
    cmd = sys.argv[1]
    if cmd == "compare":
        compare(sys.argv[2], sys.argv[3])
    elif cmd == "value":
        found = [v for n, _, v in parse(sys.argv[2])[0] if n == sys.argv[3]]
        print(f"{found[0]:g}" if len(found) == 1 else "none" if not found else f"{len(found)} samples")
    elif cmd == "page-lines":
        page_lines(sys.argv[2], sys.argv[3])
    elif cmd == "count":
        print(sum(1 for n, _, _ in parse(sys.argv[2])[0] if n.startswith(sys.argv[3])))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
