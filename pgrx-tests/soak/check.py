"""The soak's checker: every id the clients were told, judged against etcd's history of the id
space and the servers' logs; the availability each fault cost, against what the manual says it
costs; a plot of ids per second per server with the faults marked.

The promises checked (a violation names its ids, decoded, with the server, the connection and
when it was acknowledged):
1. No id twice, across every server and connection.
2. A server's lives: every id a server acknowledged in a life (from its start, or from the
   re-initialisation after a crash, as its log says: "starting PostgreSQL", "all server processes
   terminated; reinitializing") is above every id it acknowledged in its earlier lives. Each id
   belongs to the life its connection was made in.
3. A machine id's holders, by etcd's history (every event of the id space from the first
   revision: etcd_history.json). A holding is one claim key of one machine id m, from its creation
   (the claim) to its deletion (released, or its lease expired), held by the server its value
   names (the data directory). The mark before a holding is the value of `<prefix>/mark/<m>` at
   the claim's revision: the protocol's promise is that it covers every id issued under m before
   (the earlier holder recorded each deadline there before using it, and a new holder takes every
   tick up to it as used). So the holdings of m, in the order etcd applied their claims, cut m's
   ticks into ranges: holding k owns (mark before k, mark before k+1], the last one up to the end.
   Every id issued under m by a leasing server must lie in the range of one of that server's own
   holdings of m: an id above the mark the next holder found was issued past its grant (or the
   mark came down, a write applied late), and one in another server's range could be that
   server's id too, whether or not the clients happened to see both. A leasing server never
   issues under an id it never claimed. (Two holdings of one server may overlap each other's
   ranges: its lives are promise 2's.) The server set by hand issues only under its own id.
4. A reservation and a claim of one id never both stand (etcd's history), but the reserving
   server's own claim.

Availability: for each fault the nemesis injected, the longest stretch without an acknowledged
id on each server it hit (from its start until the first id after its end), what the clients
were told meanwhile, and what the manual says such a fault costs. Reported, never judged.

Usage: python check.py OUT    (OUT: what soak.py wrote). Writes OUT/report.txt and OUT/plot.png
(OUT/plot.svg when matplotlib is missing); prints the report; exits 1 when a promise is broken.
"""
import bisect
import calendar
import json
import os
import re
import sys
import time

import numpy as np

EXAMPLES = 12


class Ids:
    """Every acknowledged id: parallel arrays (server index, connection, life, ack ns, id)."""

    def __init__(self, out, servers, lives):
        cols = {k: [] for k in ("server", "conn", "life", "at", "id", "pid")}
        self.conns = []  # (server, client connection k, backend pid, connected at ns)
        for si, name in enumerate(servers):
            d = os.path.join(out, "clients")
            for fname in sorted(os.listdir(d)):
                m = re.fullmatch(r"(.+)-(\d+)\.ids", fname)
                if not m or m.group(1) != name:
                    continue
                a = np.fromfile(os.path.join(d, fname), dtype="<i8")
                a = a[: len(a) // 2 * 2].reshape(-1, 2)
                marker = a[:, 1] < 0
                starts = np.nonzero(marker)[0]
                for j, row in enumerate(starts):
                    end = starts[j + 1] if j + 1 < len(starts) else len(a)
                    pid, at = int(-a[row, 1]), int(a[row, 0])
                    life = bisect.bisect_right(lives[name], at) - 1
                    ci = len(self.conns)
                    self.conns.append((name, int(m.group(2)), pid, at))
                    rows = a[row + 1:end]
                    cols["server"].append(np.full(len(rows), si, dtype=np.int16))
                    cols["conn"].append(np.full(len(rows), ci, dtype=np.int32))
                    cols["life"].append(np.full(len(rows), life, dtype=np.int32))
                    cols["at"].append(rows[:, 0])
                    cols["id"].append(rows[:, 1])
        for k in ("server", "conn", "life", "at", "id"):
            setattr(self, k, np.concatenate(cols[k]) if cols[k] else np.array([], dtype=np.int64))
        self.servers = servers


class Layout:
    def __init__(self, cfg):
        self.mb, self.sb = cfg["machine_bits"], cfg["sequence_bits"]
        self.epoch, self.unit = cfg["epoch_ms"], cfg["time_unit_ms"]

    def tick(self, ids):
        return ids >> (self.mb + self.sb)

    def machine(self, ids):
        return (ids >> self.sb) & ((1 << self.mb) - 1)

    def tick_of_mark(self, ms):
        return (ms - self.epoch) // self.unit

    def decode(self, i):
        i = int(i)
        t = (i >> (self.mb + self.sb)) * self.unit + self.epoch
        return "%d (%s, machine id %d, sequence %d)" % (
            i, stamp(t / 1000), (i >> self.sb) & ((1 << self.mb) - 1), i & ((1 << self.sb) - 1))


def stamp(secs):
    return time.strftime("%H:%M:%S", time.gmtime(secs)) + ".%03d" % int(secs * 1000 % 1000)


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) UTC \[(\d+)\] ")


def log_lines(path):
    """(ns, pid, text) of each line of a server log that begins with its prefix."""
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return
    with f:
        for line in f:
            m = LOG_TIME.match(line)
            if m:
                t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) * 10**9 + int(m.group(2)) * 10**6
                yield t, int(m.group(3)), line[m.end():].rstrip("\n")


def lives_of(out, name):
    """When each life of a server began (ns): its starts and its re-initialisations after a crash."""
    return [t for t, _, text in log_lines(os.path.join(out, "logs", name + ".log"))
            if text.startswith("LOG:  starting PostgreSQL") or "all server processes terminated; reinitializing" in text]


def holdings(history, cfg, servers):
    """The claims of etcd's history: {m: [holding in revision order]}, each a dict with server,
    lease, rev (its claim), end (its deletion's revision or None), mark_before (ms or None); the
    reservations' and claims' overlaps (promise 4)."""
    prefix = cfg["prefix"] + "/"
    by_dir = {os.path.basename(s["data_directory"].rstrip("/")): n for n, s in servers.items()}

    def server_of(value):
        try:
            return by_dir.get(os.path.basename(json.loads(value)["data_directory"].rstrip("/")), "?")
        except (ValueError, KeyError, TypeError):
            return "?"

    marks, claims, reserved, overlaps = {}, {}, {}, []
    open_claims = {}
    for e in sorted(history["events"], key=lambda e: e["mod_revision"]):
        rest = e["key"][len(prefix):] if e["key"].startswith(prefix) else ""
        kind, _, num = rest.partition("/")
        if not num.isdigit():
            continue
        m, rev = int(num), e["mod_revision"]
        if kind == "mark" and e["type"] == "PUT":
            try:
                marks.setdefault(m, []).append((rev, int(json.loads(e["value"])["mark_ms"])))
            except (ValueError, KeyError):
                pass
        elif kind == "claim":
            if e["type"] == "PUT" and e["create_revision"] == rev:
                h = {"m": m, "server": server_of(e["value"]), "lease": e["lease"], "rev": rev, "end": None}
                claims.setdefault(m, []).append(h)
                open_claims[m] = h
                r = reserved.get(m)
                if r and r[0] != h["server"]:
                    overlaps.append((m, h, r))
            elif e["type"] == "DELETE" and m in open_claims:
                open_claims.pop(m)["end"] = rev
        elif kind == "reserved":
            if e["type"] == "PUT":
                reserved[m] = (server_of(e["value"]), rev)
                if m in open_claims and open_claims[m]["server"] != reserved[m][0]:
                    overlaps.append((m, open_claims[m], reserved[m]))
            else:
                reserved.pop(m, None)
    for m, hs in claims.items():
        ms = marks.get(m, [])
        revs = [r for r, _ in ms]
        for h in hs:
            i = bisect.bisect_left(revs, h["rev"]) - 1
            h["mark_before"] = ms[i][1] if i >= 0 else None
    return claims, overlaps


def describe_conn(ids, layout, i, names):
    name, k, pid, _ = ids.conns[int(ids.conn[i])]
    return "%s by %s (connection %d, backend %d, life %d), acknowledged at %s" % (
        layout.decode(ids.id[i]), name, k, pid, int(ids.life[i]), stamp(int(ids.at[i]) / 1e9))


def check(out, cfg, ids, layout, history):
    """The promises: [(name, [violation lines])]."""
    servers = list(cfg["servers"])
    results = []
    # 1. No id twice.
    lines = []
    if len(ids.id):
        order = np.argsort(ids.id, kind="stable")
        sorted_ids = ids.id[order]
        dup = np.nonzero(sorted_ids[1:] == sorted_ids[:-1])[0]
        seen = set()
        for j in dup:
            v = int(sorted_ids[j])
            if v in seen:
                continue
            seen.add(v)
            where = order[np.searchsorted(sorted_ids, v, "left"):np.searchsorted(sorted_ids, v, "right")]
            lines.append("id %s acknowledged %d times: %s" % (layout.decode(v), len(where), "; ".join(
                "by %s (connection %d, life %d) at %s" % (ids.conns[int(ids.conn[w])][0], ids.conns[int(ids.conn[w])][1],
                                                         int(ids.life[w]), stamp(int(ids.at[w]) / 1e9)) for w in where)))
    results.append(("no id twice", lines))
    # 2. Every life above the earlier ones.
    lines = []
    for si, name in enumerate(servers):
        mine = np.nonzero(ids.server == si)[0]
        if not len(mine):
            continue
        lives = sorted(set(ids.life[mine].tolist()))
        for life in lives[1:]:
            earlier = mine[ids.life[mine] < life]
            if not len(earlier):
                continue
            top = earlier[np.argmax(ids.id[earlier])]
            now = mine[ids.life[mine] == life]
            bad = now[ids.id[now] <= ids.id[top]]
            for i in bad[:EXAMPLES]:
                lines.append("%s is not above %s" % (describe_conn(ids, layout, i, servers),
                                                     describe_conn(ids, layout, top, servers)))
            if len(bad) > EXAMPLES:
                lines.append("... and %d more ids of %s's life %d" % (len(bad) - EXAMPLES, name, life))
    results.append(("every life of a server above its earlier lives", lines))
    # 3. Within the holdings of its machine id.
    claims, overlaps = holdings(history, cfg, cfg["servers"])
    lines = []
    ticks, machines = layout.tick(ids.id), layout.machine(ids.id)
    hand = [si for si, n in enumerate(servers) if cfg["servers"][n]["source"] == "manual"]
    for m in sorted(set(machines.tolist()) | set(claims)):
        under = np.nonzero(machines == m)[0]
        if not len(under):
            continue
        hs = claims.get(m, [])
        ok = np.zeros(len(under), dtype=bool)
        owner = np.full(len(under), -1, dtype=np.int64)  # the holding whose range holds the id
        for k, h in enumerate(hs):
            lo = -(1 << 62) if h["mark_before"] is None else layout.tick_of_mark(h["mark_before"])
            nxt = hs[k + 1]["mark_before"] if k + 1 < len(hs) else None
            hi = (1 << 62) if k + 1 == len(hs) else (-(1 << 62) if nxt is None else layout.tick_of_mark(nxt))
            inside = (ticks[under] > lo) & (ticks[under] <= hi)
            owner[inside & (owner < 0)] = k
            if h["server"] in servers:
                ok |= inside & (ids.server[under] == servers.index(h["server"]))
        for si in hand:
            if m == cfg["hand_id"]:
                # The server set by hand owns its id wherever no claim's range lies.
                ok |= (ids.server[under] == si) & (owner < 0)
        bad = under[~ok]
        for j, i in enumerate(bad[:EXAMPLES]):
            k = owner[np.nonzero(under == i)[0][0]]
            if k >= 0:
                h = hs[k]
                where = "in the range of machine id %d's holding by %s (lease %x, claimed at revision %d, the mark before it %s)" % (
                    m, h["server"], h["lease"], h["rev"], "none" if h["mark_before"] is None else stamp(h["mark_before"] / 1000))
            else:
                where = "in no holding's range of machine id %d (%s)" % (
                    m, "never claimed" if not hs else "below the mark its first claim found")
            lines.append("%s: %s" % (describe_conn(ids, layout, i, servers), where))
        if len(bad) > EXAMPLES:
            lines.append("... and %d more ids under machine id %d" % (len(bad) - EXAMPLES, m))
    results.append(("every id within a holding of its server's (etcd's claims and marks)", lines))
    # 4. Reservations.
    lines = ["machine id %d claimed by %s (lease %x, revision %d) while %s's reservation of it stood (revision %d)"
             % (m, h["server"], h["lease"], h["rev"], r[0], r[1]) for m, h, r in overlaps]
    results.append(("no claim of an id another server reserved", lines))
    return results, claims


# --- availability

# What the manual says each fault costs: (seconds or None, where it says so). ttl, margin in s.
def documented(kind, server, cfg, f):
    ttl = cfg["ttl"]
    margin = max(0.5, ttl / 5)
    leased = cfg["servers"].get(server, {}).get("source") == "etcd"
    # A partition or every member faulted for d seconds: ids stop once the deadline (the last
    # renewal's send + TTL - margin) passes, the last renewal at most a third of the TTL before.
    cut = lambda d: (max(0.0, d - (ttl - margin - ttl / 3)),
                     "many-servers.md: ids stop at the deadline (last renewal + TTL - margin) and resume at the next renewal")
    if kind == "stop_backend":
        return 0.0, "operations.md, Waits: no process can stop ids for the others by what it does"
    if kind == "kill_backend":
        return 1.0, ("operations.md, the first id after a crash: 0.51 to 0.99 s set by hand, 0.82 to 0.98 s leased "
                     "(and the waits' table: under a second)")
    if kind == "kill_postmaster":
        if leased:
            return float(ttl), "many-servers.md: an earlier run (the postmaster died) is waited out, the TTL after its last renewal"
        return 1.0, "operations.md, the waits' table: after a crash, under a second (once started)"
    if kind == "restart":
        return 0.0, "operations.md: after a clean restart the first id comes at once" + (
            "; many-servers.md: a clean stop frees the id at once" if leased else "")
    if kind == "terminate_worker":
        if leased:
            return 1.0, "many-servers.md: pg_terminate_backend() of the worker releases the id; it starts again within a second"
        return 0.0, "a hand-set server's worker only reserves its id: ids go on"
    if kind in ("stop_etcd_member", "stop_etcd_leader"):
        return 0.0, "many-servers.md: generation goes on when a member, the leader included, fails"
    if kind.startswith("proxy_"):
        if not leased:
            return 0.0, "a hand-set server's ids do not depend on etcd"
        if f.get("member") != "all":
            return 0.0, "many-servers.md: a member that fails or hangs is given up on and the next asked"
        return cut(f["secs"])
    if kind in ("partition", "late_partition", "stall_across_switch"):
        if not leased:
            return 0.0, "a hand-set server's ids do not depend on etcd"
        return cut(f["secs"])
    if kind == "clock_offset":
        return abs(f["ms"]) / 1000, "operations.md, the waits' table: a clock stepped back waits as long as the step (58000 past snowflake.max_clock_wait)"
    if kind == "promote":
        return None, "many-servers.md: at promotion a standby claims like a starting server"
    return None, ""


REASONS = [
    (r"every machine id of the id space", "every id held"),
    (r"local deadline", "deadline passed"),
    (r"earlier run of this server", "earlier run waited out"),
    (r"behind the last", "clock behind"),
    (r"no machine id is held", "no id held"),
    (r"read-only transaction|recovery", "standby"),
    (r"terminating connection|server closed|connection|starting up|shutting down|recovery mode|the database system", "server down"),
    (r"canceling statement", "statement timeout"),
]


def reason(text):
    for pattern, label in REASONS:
        if re.search(pattern, text):
            return label
    return text[:60]


def client_events(out, servers):
    """{server: sorted [(ns, reason)]} of every refusal and failed connection."""
    events = {n: [] for n in servers}
    d = os.path.join(out, "clients")
    for fname in os.listdir(d):
        m = re.fullmatch(r"(.+)-(\d+)\.events", fname)
        if not m or m.group(1) not in events:
            continue
        for line in open(os.path.join(d, fname), encoding="utf-8", errors="replace"):
            parts = line.rstrip("\n").split(" ", 3)
            if parts[0] == "E" and len(parts) >= 3:
                events[m.group(1)].append((int(parts[1]), reason(parts[2] + " " + (parts[3] if len(parts) > 3 else ""))))
            elif parts[0] == "X" and len(parts) >= 2:
                events[m.group(1)].append((int(parts[1]), "server down"))
    for n in events:
        events[n].sort()
    return events


def hit_servers(e, cfg, promoted_at):
    if e["target"] != "etcd":
        return [e["target"]] + e.get("also", [])
    return [n for n, s in cfg["servers"].items() if s["source"] == "etcd" and (n != "s" or (promoted_at and e["start"] > promoted_at))]


def availability(out, cfg, ids):
    servers = list(cfg["servers"])
    ack = {n: np.sort(ids.at[ids.server == si]) / 1e9 for si, n in enumerate(servers)}
    refusals = client_events(out, servers)
    schedule = {f["n"]: f for f in cfg["schedule"]}
    promoted_at = next((e["end"] for e in cfg["events"] if e["kind"] == "promote" and not e["skipped"]), None)
    rows = []
    for e in cfg["events"]:
        if e["skipped"]:
            continue
        f = schedule[e["n"]]
        if "cut" in e:
            f = dict(f, secs=e["cut"])  # how long the server was cut off, as it turned out
        for name in hit_servers(e, cfg, promoted_at):
            a = ack[name]
            start, end = e["start"], e["end"]
            i = np.searchsorted(a, end, "left")
            back = a[i] if i < len(a) else None
            stop = back if back is not None else cfg["t_end"]
            j = np.searchsorted(a, start, "right")
            times = np.concatenate(([start], a[j:np.searchsorted(a, stop, "right")], [stop]))
            gap = float(np.max(np.diff(times))) if len(times) > 1 else 0.0
            if e["kind"] == "promote":
                gap = (back - end) if back is not None else stop - end
            told, full = {}, []
            for t, why in refusals[name][bisect.bisect_left(refusals[name], (int(start * 1e9), "")):]:
                if t > stop * 1e9:
                    break
                told[why] = told.get(why, 0) + 1
                if why == "every id held":
                    full.append(t / 1e9)
            # The time the server was refused because every id of the space was held by others:
            # the space's cost, not the fault's.
            full_secs = (full[-1] - full[0] + 0.1) if full else 0.0
            expected, where = documented(e["kind"], name, cfg, f)
            if name != e["target"] and e["target"] != "etcd":
                expected, where = None, "a server stopped cleanly by the fault for its duration"
            along = sorted(o["n"] for o in cfg["events"] if not o["skipped"] and o["n"] != e["n"]
                           and name in hit_servers(o, cfg, promoted_at) and o["start"] < stop and o["end"] > start)
            rows.append({"n": e["n"], "kind": e["kind"], "server": name, "start": start - cfg["t0"], "secs": end - start,
                         "along": along,
                         "gap": gap, "full": min(full_secs, gap), "back": None if back is None else back - end, "expected": expected, "where": where,
                         "told": told, "outcome": e["outcome"]})
    return rows


# --- the plot

def plot(out, cfg, ids, rows, path_png):
    servers = list(cfg["servers"])
    t0, t_end = cfg["t0"], cfg["t_end"]
    bins = np.arange(0, int(t_end - t0) + 2)
    series = {n: np.histogram(ids.at[ids.server == si] / 1e9 - t0, bins=bins)[0] for si, n in enumerate(servers)}
    colours = {"stop_backend": "#9467bd", "kill_backend": "#d62728", "kill_postmaster": "#8c0000", "restart": "#ff7f0e",
               "terminate_worker": "#bcbd22", "stop_etcd_member": "#7f7f7f", "stop_etcd_leader": "#404040",
               "partition": "#1f77b4", "late_partition": "#17becf", "stall_across_switch": "#8c564b", "clock_offset": "#2ca02c", "promote": "#e377c2"}
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return plot_svg(out, cfg, series, rows, colours)
    fig, axes = plt.subplots(len(servers), 1, figsize=(16, 2.2 * len(servers)), sharex=True)
    for ax, name in zip(axes, servers):
        ax.plot(bins[:-1], series[name], lw=0.8, color="black")
        ax.set_ylabel("%s\nids/s" % name)
        for r in rows:
            if r["server"] != name:
                continue
            c = colours.get(r["kind"], "#aec7e8")
            ax.axvspan(r["start"], r["start"] + max(r["secs"], 0.3), color=c, alpha=0.25, lw=0)
            ax.text(r["start"], ax.get_ylim()[1] * 0.92, "#%d %s" % (r["n"], r["kind"].replace("proxy_", "p:")),
                    fontsize=6, rotation=90, va="top", color=c)
    axes[-1].set_xlabel("seconds since the clients started (seed %d%s)" % (
        cfg["seed"], ", control %s" % cfg["control"] if cfg["control"] else ""))
    fig.suptitle("pg_snowflake soak: ids acknowledged per second per server, the nemesis's faults shaded")
    fig.tight_layout()
    fig.savefig(path_png, dpi=90)
    plt.close(fig)
    return path_png


def plot_svg(out, cfg, series, rows, colours):
    """The same plot without matplotlib: an SVG written by hand."""
    servers = list(series)
    w, lane, left = 1400, 140, 60
    n = max(len(v) for v in series.values())
    sx = (w - left - 10) / max(n, 1)
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="10">'
             % (w, lane * len(servers) + 30)]
    for k, name in enumerate(servers):
        y0 = k * lane + 10
        top = max(int(series[name].max()), 1)
        parts.append('<text x="4" y="%d">%s (max %d/s)</text>' % (y0 + 12, name, top))
        for r in rows:
            if r["server"] == name:
                parts.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.25"/>' % (
                    left + r["start"] * sx, y0, max(r["secs"], 0.3) * sx, lane - 20, colours.get(r["kind"], "#aec7e8")))
        pts = " ".join("%.1f,%.1f" % (left + i * sx, y0 + (lane - 20) * (1 - v / top)) for i, v in enumerate(series[name]))
        parts.append('<polyline fill="none" stroke="black" stroke-width="0.8" points="%s"/>' % pts)
    parts.append("</svg>")
    path = os.path.join(out, "plot.svg")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return path


# --- the report

def replay_line(cfg):
    """The command that runs this soak again: the same seed, so the same schedule of faults."""
    line = "bash pgrx-tests/soak.sh --seed %d --minutes %g" % (cfg["seed"], cfg["minutes"])
    for option, key, default in (("--ttl", "ttl", 5), ("--machine-bits", "machine_bits", 2), ("--gap", "gap", 4.0),
                                 ("--bulk-rows", "bulk_rows", 300)):
        if cfg.get(key, default) != default:
            line += " %s %s" % (option, cfg[key])
    if cfg["control"]:
        line += " --control " + cfg["control"]
    return line


def main(out):
    cfg = json.load(open(os.path.join(out, "config.json")))
    history = json.load(open(os.path.join(out, "etcd_history.json")))
    servers = list(cfg["servers"])
    layout = Layout(cfg)
    lives = {n: lives_of(out, n) for n in servers}
    ids = Ids(out, servers, lives)
    results, claims = check(out, cfg, ids, layout, history)
    rows = availability(out, cfg, ids)
    png = plot(out, cfg, ids, rows, os.path.join(out, "plot.png"))
    report = []
    w = report.append
    control = " (negative control: %s)" % cfg["control"] if cfg["control"] else ""
    w("soak: seed %d, %g minutes, lease TTL %d s, %d-bit machine ids%s" % (
        cfg["seed"], cfg["minutes"], cfg["ttl"], cfg["machine_bits"], control))
    per = {n: int(np.sum(ids.server == si)) for si, n in enumerate(servers)}
    w("ids acknowledged: %d (%s); connections: %d; lives: %s; the clients' CPU: %s s in %.0f s" % (
        len(ids.id), ", ".join("%s %d" % kv for kv in per.items()), len(ids.conns),
        ", ".join("%s %d" % (n, len(lives[n])) for n in servers),
        "?" if cfg.get("clients_cpu_s") is None else "%.0f" % cfg["clients_cpu_s"], cfg["t_end"] - cfg["t0"]))
    nclaims = sum(len(v) for v in claims.values())
    movers = sum(1 for v in claims.values() for a, b in zip(v, v[1:]) if a["server"] != b["server"])
    w("etcd's history: %d events to revision %d; %d claims, %d of them of an id another server held before"
      % (len(history["events"]), history["last_revision"], nclaims, movers))
    injected = [e for e in cfg["events"] if not e["skipped"]]
    kinds = sorted({e["kind"] for e in injected})
    w("faults: %d scheduled, %d injected, %d kinds injected: %s" % (len(cfg["schedule"]), len(injected), len(kinds),
                                                                   ", ".join(kinds)))
    missing = sorted({f["kind"] for f in cfg["schedule"]} - set(kinds))
    if missing:
        w("kinds scheduled but not injected (their server busy, or nothing to fault): " + ", ".join(missing))
    failed = False
    w("")
    for name, lines in results:
        w("%s: %s" % (name, "ok" if not lines else "FAILED (%d)" % len(lines)))
        for line in lines[:3 * EXAMPLES]:
            w("  " + line)
        failed |= bool(lines)
    w("")
    w("availability: per fault and server hit, the longest stretch without an acknowledged id from the fault's start")
    w("until the first id after its end; what the manual says such a fault costs; what the clients were told")
    w("(no id: seconds; full: of which every id of the space was held by other servers, not counted against the fault)")
    w("%4s %-17s %-3s %7s %6s %7s %6s %7s  %s" % ("#", "fault", "on", "at s", "took", "no id", "full", "manual",
                                                  "told meanwhile; other faults on it meanwhile"))
    over = 0
    for r in rows:
        mark = ""
        if r["expected"] is not None and r["gap"] - r["full"] > r["expected"] + 1.0:
            mark = " OVER"
            over += 1
        w("%4d %-17s %-3s %7.1f %6.1f %7.2f %6.1f %7s  %s%s%s" % (
            r["n"], r["kind"].replace("proxy_", "p:"), r["server"], r["start"], r["secs"], r["gap"], r["full"],
            "-" if r["expected"] is None else "%.1f" % r["expected"],
            ", ".join("%s x%d" % kv for kv in sorted(r["told"].items())) or "-",
            "; with #" + ", #".join(map(str, r["along"])) if r["along"] else "", mark))
    w("")
    w("what the manual says, by fault:")
    for line in sorted({"  %s: %s" % (r["kind"], r["where"]) for r in rows}):
        w(line)
    w("faults that cost more than the manual says (+1 s): %d of %d" % (over, len(rows)))
    w("plot: %s" % png)
    w("")
    # What does not depend on the run's timing, for the scenarios' compared output.
    scheduled = {f["kind"] for f in cfg["schedule"]}
    w("summary: the soak: seed %d, %g minutes%s" % (cfg["seed"], cfg["minutes"], control))
    w("summary: every kind of fault in the schedule: %s (%d kinds)" % (
        "yes" if scheduled >= set(cfg.get("kinds", scheduled)) else "no", len(scheduled)))
    w("summary: ids acknowledged by each of l1, l2, l3 and h: %s" % (
        "yes" if all(per.get(n, 0) > 0 for n in ("l1", "l2", "l3", "h")) else "no"))
    for name, lines in results:
        w("summary: %s: %s" % (name, "ok" if not lines else "FAILED"))
    w("summary: the plot written: %s" % ("yes" if os.path.getsize(png) > 0 else "no"))
    w("")
    w("verdict: %s" % ("FAILED: a promise is broken (above)" if failed else "every promise kept"))
    w("")
    w("the faults as injected (seconds since the clients started):")
    for e in cfg["events"]:
        w("  #%-3d %7.1f %-19s %-4s %s%s" % (e["n"], e["start"] - cfg["t0"], e["kind"], e["target"],
                                            "skipped: " if e["skipped"] and not e["outcome"].startswith("skipped") else "",
                                            e["outcome"]))
    text = "\n".join(report) + "\n"
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    if failed:
        print("seed %d; the nemesis's schedule:" % cfg["seed"])
        for f in cfg["schedule"]:
            extra = {k: v for k, v in f.items() if k not in ("n", "at", "kind", "target")}
            print("  #%d at %.2f s: %s %s %s" % (f["n"], f["at"], f["kind"], f["target"], json.dumps(extra)))
        print("replay: " + replay_line(cfg))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
