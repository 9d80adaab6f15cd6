"""The soak (issue 58): real processes, a seeded nemesis, every acknowledged id kept for the checker.

What runs (all on 127.0.0.1 or Unix sockets, in the scratch dir run.sh made):
- etcd: three members (run.sh started them: two of Debian's 3.4 and one 3.5), each reached by each
  PostgreSQL server through a fault-injecting proxy of that server's own (harness/etcd_proxy.py:
  3 per server), so that one server can be cut off from etcd while the others are not;
- PostgreSQL (the tests' build, with fault injection): l1, l2, l3 leasing their machine id from
  etcd; h, its machine id set by hand (the highest of the space) with etcd's settings beside it (its
  reservation); s, a streaming standby of l1 made by pg_basebackup, promoted by the nemesis once.
  The id space is small (snowflake.machine_bits, 2 by default: 4 ids, one reserved by h), so that
  once s is promoted there are more leasing servers than free ids: an id a server loses is taken
  by another at once, and ids move between holders, as the checker needs them to;
- clients.py: several connections on every server, inserting with DEFAULT snowflake_nextval(),
  each recording every id acknowledged (and when, and by which backend);
- the nemesis: a schedule drawn from the seed before the run (printed, and kept in config.json),
  each fault run in a thread of its own at its time: SIGSTOP/SIGCONT of one backend, SIGKILL of a
  backend (a crash-restart), SIGKILL of a postmaster and a start, a clean restart, termination of
  the machine-id worker (as the manual says, else SIGTERM), an etcd member stopped and started (the
  leader too), the proxies' faults (delay, an answer lost, a request never answered, a request
  applied late, etcd 3.4/3.5/3.6 error answers, a reset), one server partitioned from etcd (with a
  mark write of its own applied late inside the partition, or not; or with a backend stopped right
  after loading its grant, until the server holds an id again), a clock offset
  (snowflake.fault_clock_offset) on one server, and the promotion. A fault whose server is busy
  with another fault of the same kind of process is skipped (and said).
At the end: the clients stopped, every fault healed, etcd's whole history of the id space read
(etcd_history.json), the servers stopped, their logs copied; check.py then judges OUT.

Usage (run.sh calls it, with SCRATCH, PG_BIN, PG_CONFIG and the etcd plan in the environment):
  python soak.py --seed N --minutes M --out DIR [--ttl S] [--machine-bits B] [--control NAME]
"""
import argparse
import base64
import http.client
import json
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(os.path.dirname(HERE), "harness")
sys.path.insert(0, HARNESS)
import cluster  # noqa: E402  (the harness's: the one code that makes and starts a server)

import psycopg  # noqa: E402

LEASED = ["l1", "l2", "l3"]
HAND = "h"
STANDBY = "s"
SERVERS = LEASED + [HAND, STANDBY]
PREFIX = "/pg_snowflake/soak"
# The test builds' switches the negative controls turn on, on every leasing server.
CONTROLS = {
    "start_grant": "snowflake.fault_start_grant",
    "mark_unguarded": "snowflake.fault_mark_unguarded",
    "stale_grant": "snowflake.fault_stale_grant",
}
# The proxy's faults the nemesis injects, by the name of the fault kind.
PROXY_FAULTS = {
    "proxy_delay": "delay",
    "proxy_drop": "lose_answer",
    "proxy_blackhole": "blackhole",
    "proxy_late": "late",
    "proxy_error34": "error34",
    "proxy_error35": "error35",
    "proxy_error36": "error36",
    "proxy_reset": "reset",
}
# Every kind of fault, with its weight in the draw (each comes at least once in every schedule).
WEIGHTS = {
    "stop_backend": 4,
    "kill_backend": 2,
    "kill_postmaster": 2,
    "restart": 2,
    "terminate_worker": 2,
    "stop_etcd_member": 1.5,
    "stop_etcd_leader": 1.5,
    **{k: 1 for k in PROXY_FAULTS},
    "partition": 2,
    "late_partition": 2,
    "stall_across_switch": 1.5,
    "clock_offset": 2,
}
KINDS = list(WEIGHTS) + ["promote"]
# etcd's errors the proxy answers with: (gRPC code, message), transient ones, as a member answers
# during an election or under load.
ETCD_ERRORS = [(14, "etcdserver: leader changed"), (14, "etcdserver: request timed out"),
               (8, "etcdserver: too many requests"), (14, "etcdserver: no leader")]
# Faults start after WARMUP s; the last part of the run (tail()) has none, so that every server
# recovers before the end and the availability of the last faults is measured.
WARMUP = 8.0
# The connections of each server: SMALL of a few rows a statement, and one bulk.
SMALL = 3


def tail(duration, ttl):
    return max(6.0 * ttl, 0.1 * duration)


def say(msg):
    print(time.strftime("%H:%M:%S ", time.gmtime()) + msg, flush=True)


# --- the schedule

def make_schedule(seed, duration, ttl, gap):
    """The nemesis's faults, drawn from the seed alone: [{n, at, kind, target, ...}] by time."""
    rng = random.Random(seed)
    margin = max(0.5, ttl / 5)
    start, end = WARMUP, duration - tail(duration, ttl)
    window = max(end - start, 10.0)
    kinds = [k for k in KINDS if k != "promote"]
    n = max(len(kinds), int(window / gap))
    picks = kinds + rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds], k=n - len(kinds))
    rng.shuffle(picks)
    times = sorted(rng.uniform(start, start + window) for _ in picks)
    promote_at = start + window * rng.uniform(0.05, 0.2)
    faults = [{"at": promote_at, "kind": "promote", "target": STANDBY}]
    for at, kind in zip(times, picks):
        # s is a primary 5 s after its promotion: from then on a target like the others.
        promoted = at > promote_at + 5
        primaries = LEASED + [HAND] + ([STANDBY] if promoted else [])
        leasing = LEASED + ([STANDBY] if promoted else [])
        f = {"at": at, "kind": kind}
        if kind == "stop_backend":
            f.update(target=rng.choice(primaries), conn=rng.randrange(SMALL + 1),
                     secs=round(margin * rng.uniform(0.3, 4.0), 2))
        elif kind == "kill_backend":
            f.update(target=rng.choice(primaries), conn=rng.randrange(SMALL + 1))
        elif kind == "kill_postmaster":
            f.update(target=rng.choice(primaries), pause=round(rng.uniform(0, 2), 2))
        elif kind in ("restart", "terminate_worker"):
            f.update(target=rng.choice(primaries))
        elif kind == "stop_etcd_member":
            f.update(target="etcd", member=rng.randint(1, 3), signal=rng.choice(["TERM", "KILL"]),
                     secs=round(rng.uniform(1, 3 * ttl), 2))
        elif kind == "stop_etcd_leader":
            f.update(target="etcd", signal=rng.choice(["TERM", "KILL"]), secs=round(rng.uniform(1, 3 * ttl), 2))
        elif kind in PROXY_FAULTS:
            proxy = {"kind": PROXY_FAULTS[kind]}
            if kind == "proxy_delay":
                proxy["ms"] = rng.choice([100, 300, 600, 1000, 2500])
            elif kind == "proxy_late":
                proxy["ms"] = rng.randint(200, 2000 * ttl)
                proxy["answer_after_ms"] = rng.choice([0, -1])
            elif kind.startswith("proxy_error"):
                code, message = rng.choice(ETCD_ERRORS)
                proxy.update(code=code, message=message)
            f.update(target=rng.choice(primaries), member=rng.choice([1, 2, 3, "all"]),
                     path=rng.choice(["*", "*", "*", "/v3/lease/keepalive", "/v3/kv/txn"]),
                     fault=proxy, secs=round(rng.uniform(0.5, 2 * ttl), 2))
        elif kind == "partition":
            f.update(target=rng.choice(primaries), how=rng.choice(["refuse", "close", "blackhole"]),
                     secs=round(ttl * rng.uniform(0.3, 3.0), 2))
        elif kind == "late_partition":
            f.update(target=rng.choice(leasing), secs=round(ttl * rng.uniform(1.2, 3.0), 2),
                     late_after=round(rng.uniform(0.5, 1.5), 2))
        elif kind == "stall_across_switch":
            target = rng.choice(LEASED)
            others = [n for n in LEASED + [STANDBY] if n != target]
            rng.shuffle(others)
            f.update(target=target, secs=round(ttl * rng.uniform(1.5, 3.0), 2), most=round(rng.uniform(10, 30), 1),
                     others=others)
        elif kind == "clock_offset":
            ms = rng.randint(200, 3000) * rng.choice([-1, 1])
            f.update(target=rng.choice(primaries), ms=ms, secs=round(rng.uniform(2, 20), 2))
        faults.append(f)
    faults.sort(key=lambda f: f["at"])
    for i, f in enumerate(faults, 1):
        f["n"] = i
        f["at"] = round(f["at"], 2)
    return faults


def describe(f):
    """One line for a fault of the schedule."""
    extra = {k: v for k, v in f.items() if k not in ("n", "at", "kind", "target")}
    return "#%d at %.2f s: %s %s %s" % (f["n"], f["at"], f["kind"], f["target"],
                                        json.dumps(extra, separators=(",", ":")) if extra else "")


# --- small tools

def run(cmd, timeout=120, **kw):
    """(status, output) of a command; never raises for its status."""
    try:
        r = subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, **kw)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return 124, "timed out after %s s" % timeout


def harness(*args, timeout=120):
    """(status, output) of a function of the harness (lib.sh sourced, the etcd plan read)."""
    script = '. "$1/lib.sh"; [ -z "${SOAK_ETCD_PLAN:-}" ] || . "$SOAK_ETCD_PLAN"; shift; "$@"'
    return run(["bash", "-euo", "pipefail", "-c", script, "_", HARNESS, *args], timeout=timeout)


def alive(pid):
    """Whether pid is a live process (a zombie is not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def http_json(url, body=None, timeout=5):
    host, _, path = url.removeprefix("http://").partition("/")
    conn = http.client.HTTPConnection(host, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request("POST" if data is not None else "GET", "/" + path, body=data,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        text = r.read()
        return r.status, (json.loads(text) if text.strip() else {})
    finally:
        conn.close()


def b64(s):
    return base64.b64encode(s.encode()).decode()


# --- the soak

class Proxy:
    """One etcd_proxy.py of one server in front of one member."""

    def __init__(self, out, server, member, upstream_port):
        self.name = "%s-e%d" % (server, member)
        log = os.path.join(out, "proxies", self.name + ".log")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HARNESS, "etcd_proxy.py"), "--listen", "127.0.0.1:0",
             "--upstream", "127.0.0.1:%d" % upstream_port, "--control", "127.0.0.1:0", "--log", log],
            stdout=subprocess.PIPE, stderr=open(log + ".err", "w"), text=True, start_new_session=True)
        line = self.proc.stdout.readline().strip()
        ports = dict(kv.split("=") for kv in line.split())
        self.listen, self.control = int(ports["listen"]), int(ports["control"])

    def post(self, path, body=None):
        return http_json("http://127.0.0.1:%d%s" % (self.control, path), body if body is not None else {})

    def rules(self):
        return http_json("http://127.0.0.1:%d/rules" % self.control)[1]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Soak:
    def __init__(self, args):
        self.args = args
        self.scratch = os.environ["SCRATCH"]
        self.pg_bin = os.environ["PG_BIN"]
        self.out = os.path.abspath(args.out)
        self.ttl = args.ttl
        self.etcd_ports = [int(p) for p in os.environ["SOAK_ETCD_PORTS"].split()]
        self.hand_id = (1 << args.machine_bits) - 1
        self.proxies = {}
        self.ports = {}
        self.stopped = {s: {} for s in SERVERS}  # backends stopped by the nemesis: pid -> release event
        self.stopped_lock = threading.Lock()
        self.events = []
        self.events_lock = threading.Lock()
        self.busy = set()  # (lock name, target) held by a fault
        self.busy_lock = threading.Lock()
        self.promoted = threading.Event()
        self.clients = None
        self.t0 = None
        os.makedirs(os.path.join(self.out, "proxies"), exist_ok=True)
        os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)

    # --- servers
    def conf(self, name):
        lines = ["shared_preload_libraries = 'pg_snowflake'", "log_line_prefix = '%m [%p] '",
                 "log_timezone = 'UTC'", "snowflake.machine_bits = %d" % self.args.machine_bits,
                 "snowflake.etcd_prefix = '%s'" % PREFIX, "snowflake.etcd_lease_ttl = %d" % self.ttl,
                 "snowflake.etcd_endpoints = '%s'" % self.endpoints(name), "max_connections = 40",
                 # (A server without an id refuses its clients' inserts ten times a second each:
                 # the log keeps the refusals, not their statements.)
                 "log_min_error_statement = panic"]
        if name == HAND:
            lines.append("snowflake.machine_id = %d" % self.hand_id)
        else:
            lines.append("snowflake.machine_id_source = 'etcd'")
            if self.args.control:
                lines.append("%s = on" % CONTROLS[self.args.control])
        return lines

    def endpoints(self, name):
        return ",".join("http://127.0.0.1:%d" % self.proxies[(name, m)].listen for m in (1, 2, 3))

    def psql(self, name, sql, timeout=10):
        """Rows of one statement on server `name` (autocommit); raises psycopg.Error."""
        with psycopg.connect(host=self.scratch, port=self.ports[name], user="postgres", dbname="postgres",
                             autocommit=True, connect_timeout=3, options="-c statement_timeout=%ds" % timeout) as c:
            cur = c.execute(sql)
            return cur.fetchall() if cur.description else []

    def wait_sql(self, name, sql, secs):
        """Until the one value of `sql` on `name` is true (at most secs); whether it came."""
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                if self.psql(name, sql)[0][0]:
                    return True
            except (psycopg.Error, IndexError):
                pass
            time.sleep(0.2)
        return False

    def pg_dir(self, name):
        return os.path.join(self.scratch, name)

    def postmaster_pid(self, name):
        try:
            with open(os.path.join(self.pg_dir(name), "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def children(self, pid):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []

    def backend_pid(self, name, k):
        """The backend of client connection k of server `name`, if it is one of its postmaster's
        children now (a pid never signalled unless it is)."""
        try:
            with open(os.path.join(self.out, "clients", "%s-%d.events" % (name, k))) as f:
                pids = [int(line.split()[2]) for line in f if line.startswith("C ")]
        except OSError:
            return None
        pm = self.postmaster_pid(name)
        if not pids or pm is None or pids[-1] not in self.children(pm):
            return None
        return pids[-1]

    def worker_pid(self, name):
        pm = self.postmaster_pid(name)
        for child in self.children(pm) if pm else []:
            try:
                with open("/proc/%d/cmdline" % child, "rb") as f:
                    if b"pg_snowflake machine id" in f.read():
                        return child
            except OSError:
                pass
        return None

    def set_up(self):
        for name in SERVERS:
            for m in (1, 2, 3):
                self.proxies[(name, m)] = Proxy(self.out, name, m, self.etcd_ports[m - 1])
        for name in LEASED + [HAND]:
            c = cluster.Cluster(self.scratch, name, self.conf(name))
            self.ports[name] = c.port
            c.start()
            harness("create_extension", name)
            self.psql(name, "CREATE TABLE t (id bigint NOT NULL DEFAULT snowflake_nextval(), c int)")
        # s: a standby of l1 (its table included), with its own port and proxies.
        r = cluster.as_owner([os.path.join(self.pg_bin, "pg_basebackup"), "-h", self.scratch, "-p",
                              str(self.ports["l1"]), "-U", "postgres", "-D", self.pg_dir(STANDBY), "-R", "-X", "stream"])
        if r.returncode:
            raise SystemExit("pg_basebackup of l1 failed:\n" + r.stdout + r.stderr)
        port = int(harness("next_port")[1].strip())
        lines = ["port = %d" % port, "snowflake.etcd_endpoints = '%s'" % self.endpoints(STANDBY)]
        cluster.as_owner(["sh", "-c", "cat >> '%s/postgresql.conf'" % self.pg_dir(STANDBY)],
                         input="\n".join(lines) + "\n", check=True)
        self.ports[STANDBY] = port
        status, text = harness("start_cluster", STANDBY)
        if status:
            raise SystemExit("the standby did not start:\n" + text)
        for name in LEASED:
            if not self.wait_sql(name, "SELECT held FROM snowflake_machine_id_status()", 60):
                raise SystemExit("%s holds no machine id after 60 s" % name)
        if not self.wait_sql(HAND, "SELECT count(*) > 0 FROM snowflake_nextval()", 30):
            raise SystemExit("h issues no id")
        held = {n: self.psql(n, "SELECT machine_id FROM snowflake_machine_id_status()")[0][0] for n in LEASED}
        say("set up: etcd members %s; l1, l2, l3 hold machine ids %s; h is set by hand to %d; s is a standby of l1"
            % (" ".join(map(str, self.etcd_ports)), ", ".join(str(held[n]) for n in LEASED), self.hand_id))

    def start_clients(self):
        cfg = {"out": self.out, "socket_dir": self.scratch, "small": SMALL,
               "small_rows": 4, "small_period": 0.03, "bulk_rows": self.args.bulk_rows, "bulk_period": 0.5,
               "servers": [{"name": n, "port": self.ports[n]} for n in SERVERS]}
        path = os.path.join(self.out, "clients.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        self.clients = subprocess.Popen([sys.executable, os.path.join(HERE, "clients.py"), path],
                                        stdout=open(os.path.join(self.out, "clients.out"), "w"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    # --- the nemesis
    def record(self, f, start, outcome, skipped=False, **more):
        e = {"n": f["n"], "kind": f["kind"], "target": f["target"], "start": start, "end": time.time(),
             "outcome": outcome, "skipped": skipped}
        e.update(more)
        with self.events_lock:
            self.events.append(e)
        say("%s #%d %s %s: %s" % ("skip" if skipped else "done", f["n"], f["kind"], e["target"], outcome))

    def take(self, keys):
        """Takes every one of keys (what a fault acts on), or none if one is taken."""
        with self.busy_lock:
            if self.busy & keys:
                return False
            self.busy |= keys
            return True

    def give(self, keys):
        with self.busy_lock:
            self.busy -= keys

    @staticmethod
    def keys_of(f):
        """What a fault acts on: no two faults on one key at once (one process started or stopped
        at a time, one rule set per proxy, one clock offset per server, one etcd member down)."""
        kind, target = f["kind"], f["target"]
        if kind in ("kill_backend", "kill_postmaster", "restart", "promote"):
            return {("proc", target)}
        if kind == "clock_offset":
            return {("clock", target)}
        if kind in ("stop_etcd_member", "stop_etcd_leader"):
            return {("etcd",)}
        if kind in PROXY_FAULTS and f["member"] != "all":
            return {("net", target, f["member"])}
        if kind in PROXY_FAULTS or kind in ("partition", "late_partition", "stall_across_switch"):
            return {("net", target, m) for m in (1, 2, 3)}
        return set()

    def release_stopped(self, name):
        """SIGCONT every backend of `name` the nemesis stopped (before a restart or a kill, which
        a stopped process would hold up); their faults end early, said in their records."""
        with self.stopped_lock:
            events = list(self.stopped[name].values())
        for ev in events:
            ev.set()
        end = time.monotonic() + 5
        while self.stopped[name] and time.monotonic() < end:
            time.sleep(0.02)

    def inject(self, f):
        start = time.time()
        keys = self.keys_of(f)
        if f["target"] == STANDBY and f["kind"] != "promote" and not self.promoted.is_set():
            self.record(f, start, "s is not promoted yet", skipped=True)
            return
        if not self.take(keys):
            self.record(f, start, "busy with another fault", skipped=True)
            return
        try:
            action = self.do_proxy if f["kind"] in PROXY_FAULTS else getattr(self, "do_" + f["kind"])
            outcome, more = action(f)
            self.record(f, start, outcome, skipped=outcome.startswith("skipped"), **more)
        except Exception as e:  # noqa: BLE001 - one fault's failure is said, never the soak's end
            self.record(f, start, "the nemesis failed: %s: %s" % (type(e).__name__, e), skipped=True)
        finally:
            self.give(keys)

    def do_stop_backend(self, f):
        name = f["target"]
        pid = self.backend_pid(name, f["conn"])
        if pid is None:
            return "skipped: connection %d has no backend now" % f["conn"], {}
        ev = threading.Event()
        with self.stopped_lock:
            self.stopped[name][pid] = ev
        try:
            os.kill(pid, signal.SIGSTOP)
            t = time.time()
            released = ev.wait(f["secs"])
            os.kill(pid, signal.SIGCONT)
        finally:
            with self.stopped_lock:
                self.stopped[name].pop(pid, None)
        return "backend %d stopped %.2f s%s" % (pid, time.time() - t, " (ended early by another fault)" if released else ""), \
            {"pid": pid}

    def ready_again(self, name, secs=90):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                self.psql(name, "SELECT 1")
                return True
            except psycopg.Error:
                time.sleep(0.1)
        return False

    def do_kill_backend(self, f):
        name = f["target"]
        self.release_stopped(name)
        pid = self.backend_pid(name, f["conn"])
        if pid is None:
            return "skipped: connection %d has no backend now" % f["conn"], {}
        os.kill(pid, signal.SIGKILL)
        t = time.time()
        time.sleep(0.2)
        ok = self.ready_again(name)
        return "backend %d killed; %s %.2f s later" % (pid, "accepting connections" if ok else "NOT back", time.time() - t), \
            {"pid": pid, "up": time.time()}

    def do_kill_postmaster(self, f):
        name = f["target"]
        self.release_stopped(name)
        pm = self.postmaster_pid(name)
        if pm is None or not alive(pm):
            return "skipped: no postmaster", {}
        os.kill(pm, signal.SIGKILL)
        t = time.time()
        time.sleep(f["pause"])
        tries = 0
        end = time.monotonic() + 120
        while time.monotonic() < end:
            tries += 1
            status, _ = harness("try_start_cluster", name, "20")
            if status == 0:
                return "postmaster %d killed; started again %.2f s later (%d tries)" % (pm, time.time() - t, tries), \
                    {"pid": pm, "up": time.time()}
            time.sleep(0.5)
        return "postmaster %d killed; NOT started again within 120 s" % pm, {"pid": pm}

    def do_restart(self, f):
        name = f["target"]
        self.release_stopped(name)
        t = time.time()
        status, text = run([*self.owner(), os.path.join(self.pg_bin, "pg_ctl"), "-D", self.pg_dir(name), "-l",
                            self.pg_dir(name) + ".log", "-m", "fast", "-w", "-t", "90", "restart"], timeout=200,
                           env=self.server_env())
        return ("restarted in %.2f s" % (time.time() - t) if status == 0 else "restart FAILED: " + text[-300:]), \
            {"up": time.time()}

    def owner(self):
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def server_env(self):
        libdir = subprocess.run([os.environ["PG_CONFIG"], "--libdir"], text=True, capture_output=True).stdout.strip()
        return dict(os.environ, LD_LIBRARY_PATH=libdir)

    def do_terminate_worker(self, f):
        name = f["target"]
        # As the manual says (the Errors page's hint); when that finds no row, SIGTERM, which
        # pg_terminate_backend() sends.
        try:
            rows = self.psql(name, "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE backend_type = 'pg_snowflake machine id'")
        except psycopg.Error as e:
            return "skipped: %s" % " ".join(str(e).split())[:120], {}
        if rows and all(r[1] for r in rows):
            return "worker %s terminated by pg_terminate_backend()" % rows[0][0], {"how": "sql", "pid": rows[0][0]}
        pid = self.worker_pid(name)
        if pid is None:
            return "skipped: no machine id worker", {}
        os.kill(pid, signal.SIGTERM)
        return "worker %d terminated by SIGTERM (pg_stat_activity has no row of it)" % pid, {"how": "sigterm", "pid": pid}

    # etcd
    def etcd_pid(self, i):
        try:
            with open(os.path.join(self.scratch, "etcd-e%d.pid" % i)) as f:
                return int(f.read())
        except (OSError, ValueError):
            return None

    def leader(self):
        for i, port in enumerate(self.etcd_ports, 1):
            try:
                _, s = http_json("http://127.0.0.1:%d/v3/maintenance/status" % port, {}, timeout=1)
                if s.get("leader") and s["leader"] == s.get("header", {}).get("member_id"):
                    return i
            except (OSError, ValueError):
                pass
        return None

    def healthy(self, i):
        try:
            _, h = http_json("http://127.0.0.1:%d/health" % self.etcd_ports[i - 1], timeout=1)
            return h.get("health") == "true"
        except (OSError, ValueError):
            return False

    def stop_member(self, f, i, what):
        pid = self.etcd_pid(i)
        if pid is None or not alive(pid):
            return "skipped: member %d is not running" % i, {}
        os.kill(pid, signal.SIGKILL if f["signal"] == "KILL" else signal.SIGTERM)
        end = time.monotonic() + 10
        while alive(pid) and time.monotonic() < end:
            time.sleep(0.05)
        t = time.time()
        time.sleep(f["secs"])
        status, text = harness("start_etcd_member", str(i))
        if status:
            return "member %d stopped; its start FAILED: %s" % (i, text[-200:]), {"member": i}
        up = time.monotonic() + 30
        while not self.healthy(i) and time.monotonic() < up:
            time.sleep(0.1)
        return "%s (member %d, SIG%s) down %.2f s, healthy again after %.2f s" % (
            what, i, f["signal"], f["secs"], time.time() - t), {"member": i}

    def do_stop_etcd_member(self, f):
        return self.stop_member(f, f["member"], "a member")

    def do_stop_etcd_leader(self, f):
        i = self.leader()
        if i is None:
            return "skipped: no leader now", {}
        return self.stop_member(f, i, "the leader")

    # proxies
    def its_proxies(self, f):
        return [self.proxies[(f["target"], m)] for m in ((1, 2, 3) if f.get("member", "all") == "all" else (f["member"],))]

    def do_proxy(self, f):
        rule = {"times": -1, "fault": f["fault"]}
        if f["path"] != "*":
            rule["path"] = f["path"]
        proxies = self.its_proxies(f)
        for p in proxies:
            p.post("/rule", rule)
        time.sleep(f["secs"])
        applied = 0
        for p in proxies:
            applied += sum(r["applied"] for r in p.rules())
            p.post("/clear")
        return "%s on %s of %s for %.2f s: %d requests faulted" % (
            f["fault"]["kind"], "every member" if len(proxies) == 3 else "member %s" % f["member"], f["target"],
            f["secs"], applied), {"faulted": applied}

    def partition(self, name, how, secs):
        proxies = [self.proxies[(name, m)] for m in (1, 2, 3)]
        for p in proxies:
            if how == "blackhole":
                p.post("/rule", {"times": -1, "fault": {"kind": "blackhole"}})
            else:
                p.post("/down", {"how": how})
        time.sleep(secs)
        for p in proxies:
            p.post("/up")
            p.post("/clear")

    def do_partition(self, f):
        self.partition(f["target"], f["how"], f["secs"])
        return "%s cut off from etcd (%s) for %.2f s" % (f["target"], f["how"], f["secs"]), {}

    def do_late_partition(self, f):
        """A mark write of the server's held by the proxies and applied late, once the next one
        went through and the server is cut off (its claim still alive): a write applied late
        inside a partition. etcd refuses it (the mark's revision guard); without the guard
        (snowflake.fault_mark_unguarded) it lowers the mark below ids the server issued."""
        name = f["target"]
        proxies = [self.proxies[(name, m)] for m in (1, 2, 3)]
        retry = max(0.2, self.ttl / 10)
        # Forwarded once the partition has begun, well within the TTL of the last renewal.
        late_ms = int((retry + f["late_after"] + 0.7) * 1000)
        for p in proxies:
            p.post("/rule", {"path": "/v3/kv/txn", "contains": "/mark/", "times": 1,
                             "fault": {"kind": "late", "ms": late_ms}})
        end = time.monotonic() + 3 * self.ttl
        held = 0
        while time.monotonic() < end and not held:
            held = sum(r["applied"] for p in proxies for r in p.rules())
            time.sleep(0.05)
        if not held:
            for p in proxies:
                p.post("/clear")
            return "skipped: no mark write of %s came within %d s" % (name, 3 * self.ttl), {}
        # The next renewal's write goes through (the rules are spent); then the partition.
        time.sleep(retry + f["late_after"])
        self.partition(name, "refuse", f["secs"])
        return "a mark write of %s held, forwarded %d ms after it came; %s cut off for %.2f s" % (
            name, late_ms, name, f["secs"]), {"late_ms": late_ms}

    def status(self, name):
        """(held, machine id, claims) of snowflake_machine_id_status(), or None."""
        try:
            return tuple(self.psql(name, "SELECT held, machine_id, claims FROM snowflake_machine_id_status()")[0])
        except (psycopg.Error, IndexError):
            return None

    def do_stall_across_switch(self, f):
        """A backend stalled across a change of its server's machine id (issue 56): a connection of
        the nemesis's own (its ids recorded as the clients' are, as connection 100 + the fault's
        number) inserts; its first snowflake_nextval() pauses right after loading the grant (the
        test builds' hold point, snowflake.fault_hold_at = 'grant_loaded'), where the backend is
        stopped (SIGSTOP) while its server is cut off from etcd past its lease; it is continued
        once the server holds an id again and has claimed since (at most `most` s), as a stall of
        the scheduler or a page fault would. Another server waiting for an id takes the lost one
        meanwhile: the stalled backend must not issue under it."""
        # The drawn server, or if it holds no id now (a stall needs a grant to load), the first of
        # the others, in the drawn order, that holds one.
        name = next((n for n in [f["target"]] + f["others"] if (n != STANDBY or self.promoted.is_set())
                     and (self.status(n) or (False,))[0]), None)
        if name is None:
            return "skipped: no leasing server holds an id now", {}
        k = 100 + f["n"]
        base = os.path.join(self.out, "clients", "%s-%d" % (name, k))
        try:
            conn = psycopg.connect(host=self.scratch, port=self.ports[name], user="postgres", dbname="postgres",
                                   autocommit=True, connect_timeout=3, application_name="soak stall %s" % name)
        except psycopg.Error as e:
            return "skipped: %s" % " ".join(str(e).split())[:120], {}
        pid = conn.info.backend_pid
        t = time.time_ns()
        ids_file, events = open(base + ".ids", "wb"), open(base + ".events", "w", buffering=1)
        ids_file.write(struct.pack("<qq", t, -pid))
        events.write("C %d %d\n" % (t, pid))
        conn.execute("SET snowflake.fault_hold_at = 'grant_loaded'")
        conn.execute("SET snowflake.fault_hold_ms = 3000")

        def insert():
            try:
                got = conn.execute("INSERT INTO t(c) SELECT %d FROM generate_series(1, 50) RETURNING id" % k).fetchall()
                at = time.time_ns()
                ids_file.write(b"".join(struct.pack("<qq", at, r[0]) for r in got))
            except psycopg.Error as e:
                events.write("E %d %s %s\n" % (time.time_ns(), e.sqlstate or "-", " ".join(str(e).split())[:600]))

        th = threading.Thread(target=insert, daemon=True)
        th.start()
        before = self.status(name)
        log = self.pg_dir(name) + ".log"
        line = "process %d pauses after loading the grant" % pid
        paused = False
        end = time.monotonic() + 5
        while time.monotonic() < end and not paused:
            try:
                with open(log, errors="replace") as lf:
                    paused = line in lf.read()[-200000:]
            except OSError:
                pass
            time.sleep(0.02)
        outcome = "its backend %d did not reach the hold point" % pid
        more = {"pid": pid, "target": name}  # (the server it was injected into, in its record)
        if paused:
            ev = threading.Event()
            with self.stopped_lock:
                self.stopped[name][pid] = ev
            down, taken_by, cut = None, None, 0.0
            try:
                os.kill(pid, signal.SIGSTOP)
                t0 = time.time()
                m = before[1] if before and before[0] else None
                # Cut off past its lease (for secs, and on until the server waiting for an id has
                # taken the lost one: etcd expires a lease late, later still after a change of
                # leader, which gives every lease its TTL again; at most 3 TTLs more).
                proxies = [self.proxies[(name, i)] for i in (1, 2, 3)]
                for p in proxies:
                    p.post("/down", {"how": "refuse"})
                end = time.monotonic() + f["secs"] + 3 * self.ttl
                while m is not None and time.monotonic() < end and taken_by is None:
                    holder = self.holder_of(m)
                    taken_by = holder if holder not in (None, name) else None
                    time.sleep(0.2)
                # Then a server down for maintenance (stopped cleanly: its id freed at once), so
                # that the cut-off server finds a free id when it claims again: it changes id.
                if taken_by is not None:
                    down = self.stop_one_holder(f, exclude={name, taken_by})
                time.sleep(max(0.0, t0 + f["secs"] - time.time()))
                for p in proxies:
                    p.post("/up")
                cut = time.time() - t0
                after = None
                end = time.monotonic() + f["most"]
                while time.monotonic() < end and not ev.is_set():
                    after = self.status(name)
                    if after and before and after[0] and after[2] > before[2]:
                        ev.wait(0.5)
                        break
                    ev.wait(0.2)
                os.kill(pid, signal.SIGCONT)
            finally:
                with self.stopped_lock:
                    self.stopped[name].pop(pid, None)
                if down:
                    harness("try_start_cluster", down, "60")
                    self.give({("proc", down)})
            outcome = ("%s's backend %d stopped after loading the grant, %.2f s, across a partition of %.2f s; machine id %s "
                       "before, %s after; %s; %s") % (
                name, pid, time.time() - t0, cut, before[1] if before else "?",
                after[1] if after and after[0] else "none held",
                "taken meanwhile by %s" % taken_by if taken_by else "not taken by another server",
                "%s stopped meanwhile" % down if down else "no server stopped")
            more.update(also=[down] if down else [], cut=round(cut, 2))
        # (No statement timeout: a cancel that came while it was stopped could end the INSERT
        # after its stalled call issued, and leave that id unacknowledged, unseen by the checker.)
        th.join(120)
        if th.is_alive():
            return outcome + "; its INSERT still runs after 120 s", more
        conn.close()
        ids_file.close()
        events.close()
        return outcome, more

    def holder_of(self, m):
        """The server whose claim of machine id m etcd holds now (asked of the members directly)."""
        key = "%s/claim/%d" % (PREFIX, m)
        for port in self.etcd_ports:
            try:
                _, r = http_json("http://127.0.0.1:%d/v3/kv/range" % port, {"key": b64(key)}, timeout=1)
                if "header" not in r:
                    continue
                kvs = r.get("kvs", [])
                if not kvs:
                    return None
                d = json.loads(base64.b64decode(kvs[0]["value"]))["data_directory"]
                return os.path.basename(d.rstrip("/"))
            except (OSError, ValueError, KeyError):
                continue
        return None

    def stop_one_holder(self, f, exclude):
        """Stops cleanly one leasing primary that holds an id (not in exclude), in the order the
        fault drew; its name, its ("proc", name) key kept until it is started again; or None."""
        for name in f["others"]:
            if name in exclude or (name == STANDBY and not self.promoted.is_set()):
                continue
            st = self.status(name)
            if not st or not st[0] or not self.take({("proc", name)}):
                continue
            self.release_stopped(name)
            status, _ = run([*self.owner(), os.path.join(self.pg_bin, "pg_ctl"), "-D", self.pg_dir(name), "-m", "fast",
                             "-w", "-t", "60", "stop"], timeout=90)
            if status == 0:
                return name
            self.give({("proc", name)})
        return None

    def do_clock_offset(self, f):
        name = f["target"]

        def set_offset(ms):
            end = time.monotonic() + 90
            while time.monotonic() < end:
                try:
                    self.psql(name, "ALTER SYSTEM SET snowflake.fault_clock_offset = %d" % ms)
                    self.psql(name, "SELECT pg_reload_conf()")
                    return True
                except psycopg.Error:
                    time.sleep(0.3)
            return False

        if not set_offset(f["ms"]):
            return "skipped: %s did not take the offset" % name, {}
        time.sleep(f["secs"])
        back = set_offset(0)
        return "clock of %s %+d ms for %.2f s%s" % (name, f["ms"], f["secs"], "" if back else ", NOT set back"), {}

    def do_promote(self, f):
        t = time.time()
        status, text = run([*self.owner(), os.path.join(self.pg_bin, "pg_ctl"), "-D", self.pg_dir(STANDBY), "-w",
                            "promote"], timeout=120)
        self.promoted.set()
        return ("promoted in %.2f s" % (time.time() - t) if status == 0 else "promotion FAILED: " + text[-200:]), {}

    def nemesis(self, schedule, stop):
        threads = []
        for f in schedule:
            delay = self.t0 + f["at"] - time.time()
            if delay > 0 and stop.wait(delay):
                break
            th = threading.Thread(target=self.inject, args=(f,), daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join(300)

    # --- the end
    def heal(self):
        for name in SERVERS:
            self.release_stopped(name)
        for p in self.proxies.values():
            try:
                p.post("/up")
                p.post("/clear")
            except OSError:
                pass
        for i in (1, 2, 3):
            pid = self.etcd_pid(i)
            if pid is None or not alive(pid):
                harness("start_etcd_member", str(i))

    def etcd_history(self):
        """Every event of the id space from etcd's first revision: one watch, read until the
        revision a range gives now."""
        end = PREFIX[:-1] + chr(ord(PREFIX[-1]) + 1)
        for port in self.etcd_ports:
            try:
                _, r = http_json("http://127.0.0.1:%d/v3/kv/range" % port,
                                 {"key": b64(PREFIX), "range_end": b64(end), "count_only": True}, timeout=5)
                last = int(r["header"]["revision"])
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("POST", "/v3/watch", body=json.dumps(
                    {"create_request": {"key": b64(PREFIX), "range_end": b64(end), "start_revision": 1}}))
                resp = conn.getresponse()
                events, seen = [], 0
                # (The header's revision is the store's; the events', their own: read until the
                # last event is the last revision.)
                while seen < last:
                    line = resp.readline()
                    if not line:
                        break
                    if not line.strip():
                        continue
                    result = json.loads(line).get("result", {})
                    for e in result.get("events", []):
                        kv = e["kv"]
                        events.append({"type": e.get("type", "PUT"), "key": base64.b64decode(kv["key"]).decode(),
                                       "value": base64.b64decode(kv.get("value", "")).decode("utf-8", "replace"),
                                       "create_revision": int(kv.get("create_revision", 0)),
                                       "mod_revision": int(kv.get("mod_revision", 0)),
                                       "lease": int(kv.get("lease", 0))})
                        seen = max(seen, events[-1]["mod_revision"])
                conn.close()
                if seen < last:
                    raise ValueError("the watch ended at revision %d, before %d" % (seen, last))
                return {"last_revision": last, "events": events}
            except (OSError, ValueError, KeyError) as e:
                say("the history from the member on port %d failed: %s" % (port, e))
        raise SystemExit("no etcd member gave the id space's history")

    def cpu_seconds(self, pid):
        """The CPU time a process has used (user and system), in seconds."""
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    def finish(self):
        self.heal()
        self.clients_cpu = self.cpu_seconds(self.clients.pid)
        self.clients.send_signal(signal.SIGTERM)
        try:
            self.clients.wait(60)
        except subprocess.TimeoutExpired:
            self.clients.kill()
        for name in SERVERS:
            status, _ = run([*self.owner(), os.path.join(self.pg_bin, "pg_ctl"), "-D", self.pg_dir(name), "-m", "fast",
                             "-w", "-t", "60", "stop"], timeout=90)
            if status:
                run([*self.owner(), os.path.join(self.pg_bin, "pg_ctl"), "-D", self.pg_dir(name), "-m", "immediate",
                     "-w", "stop"], timeout=60)
        history = self.etcd_history()
        with open(os.path.join(self.out, "etcd_history.json"), "w") as f:
            json.dump(history, f)
        for p in self.proxies.values():
            p.stop()
        for name in SERVERS:
            run(["cp", self.pg_dir(name) + ".log", os.path.join(self.out, "logs", name + ".log")])

    def main(self):
        args = self.args
        duration = args.minutes * 60
        schedule = make_schedule(args.seed, duration, self.ttl, args.gap)
        say("seed %d, %g minutes, lease TTL %d s, machine_bits %d%s: the nemesis's schedule, %d faults:"
            % (args.seed, args.minutes, self.ttl, args.machine_bits,
               ", negative control %s (%s = on)" % (args.control, CONTROLS[args.control]) if args.control else "",
               len(schedule)))
        for f in schedule:
            print("  " + describe(f), flush=True)
        self.set_up()
        self.start_clients()
        self.t0 = time.time()
        stop = threading.Event()
        nemesis = threading.Thread(target=self.nemesis, args=(schedule, stop), daemon=True)
        nemesis.start()
        time.sleep(max(0.0, self.t0 + duration - time.time()))
        stop.set()
        nemesis.join(300)
        t_end = time.time()
        self.finish()
        config = {"seed": args.seed, "minutes": args.minutes, "gap": args.gap, "bulk_rows": args.bulk_rows,
                  "ttl": self.ttl, "machine_bits": args.machine_bits,
                  "sequence_bits": 12, "epoch_ms": 1735689600000, "time_unit_ms": 1, "prefix": PREFIX,
                  "control": args.control, "t0": self.t0, "t_end": t_end, "hand_id": self.hand_id,
                  "servers": {n: {"source": "manual" if n == HAND else "etcd", "data_directory": self.pg_dir(n),
                                  "standby_of": "l1" if n == STANDBY else None} for n in SERVERS},
                  "clients_cpu_s": self.clients_cpu, "kinds": KINDS, "schedule": schedule, "events": sorted(self.events, key=lambda e: e["n"])}
        with open(os.path.join(self.out, "config.json"), "w") as f:
            json.dump(config, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ttl", type=int, default=5)
    ap.add_argument("--machine-bits", type=int, default=2)
    ap.add_argument("--gap", type=float, default=4.0, help="mean seconds between two faults")
    ap.add_argument("--bulk-rows", type=int, default=300)
    ap.add_argument("--control", choices=sorted(CONTROLS))
    ap.add_argument("--schedule-only", action="store_true", help="print the schedule and stop")
    args = ap.parse_args()
    if args.schedule_only:
        for f in make_schedule(args.seed, args.minutes * 60, args.ttl, args.gap):
            print(describe(f))
        return
    Soak(args).main()


if __name__ == "__main__":
    main()
