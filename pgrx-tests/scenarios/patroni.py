#!/usr/bin/python3
"""Insert load that keeps every id it was given, across failovers (the patroni scenario).

Usage: id_load.py OUT SECONDS CONNECTIONS LABEL PORT...

CONNECTIONS threads each insert one row at a time (autocommit) into the table `ids` of whichever
server on 127.0.0.1:PORT is a primary, until the file OUT.stop exists, SECONDS at most (a bound
for a scenario that never stops it; the scenario's waits bound its run) or until its parent is gone:

    INSERT INTO ids (label, conn, n) VALUES (LABEL, c, n) RETURNING id, tli

(`id` and `tli` are the table's defaults: snowflake_nextval() and the primary's timeline). Every
acknowledged insert is written to OUT as `label conn n id tli port`: the ids a client was given,
including those whose commit a failover lost, so that the history checked afterwards is every id
the clients saw, not only the rows that survived. (label, conn, n) is unique, so the rows of the
table and the lines of OUT name the same inserts.

What a failover brings is survived and counted, never fatal: a connection that breaks, a server
that is not (or no longer) the primary, pg_snowflake's clock error (58000, the new primary's
clock behind the last lease it replayed), retried after 50 ms, and, with the machine id leased
from etcd, its refusal for want of one (55000: the new primary still claiming; or a backend left
by a killed postmaster, whose worker gave the id back), after which the client connects again
(to whichever server is the primary). Any other error ends the run with status 1. The counts go to OUT.counts as `name value` lines. Runs with Debian's python3 and its
psycopg2 (a dependency of Debian's patroni).
"""
import os
import sys
import threading
import time

import psycopg2

out, seconds, connections, label = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ports = [int(p) for p in sys.argv[5:]]
deadline = time.monotonic() + seconds
stop_file = out + ".stop"
lock = threading.Lock()
counts = {"inserted": 0, "clock_refusals": 0, "reconnects": 0, "no_id_refusals": 0}
fatal = []


def count(name, n=1):
    with lock:
        counts[name] += n


def primary():
    """A connection to a server that is a primary now, or None."""
    for port in ports:
        try:
            conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                                    connect_timeout=1, options="-c client_min_messages=error")
        except psycopg2.OperationalError:
            continue
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_is_in_recovery()")
                if not cur.fetchone()[0]:
                    return conn, port
        except psycopg2.Error:
            pass
        conn.close()
    return None, None


parent = os.getppid()


def running():
    # Also ends once the scenario that started it is gone (it exited at a failed wait).
    return (time.monotonic() < deadline and not fatal and not os.path.exists(stop_file)
            and os.getppid() == parent)


def worker(c, rows):
    n = 0
    conn, port = None, None
    while running():
        if conn is None:
            conn, port = primary()
            if conn is None:
                time.sleep(0.2)
                continue
        n += 1
        try:
            with conn.cursor() as cur:
                cur.execute("INSERT INTO ids (label, conn, n) VALUES (%s, %s, %s) RETURNING id, tli", (label, c, n))
                rid, tli = cur.fetchone()
            rows.append(f"{label} {c} {n} {rid} {tli} {port}\n")
        except psycopg2.Error as e:
            code = getattr(e, "pgcode", None)
            if code == "58000" and "behind the last snowflake id" in str(e):
                count("clock_refusals")
                time.sleep(0.05)
            elif code is None or code in ("25006", "57P01", "57P02", "57P03", "08006", "08003", "08000") or (
                code == "55000" and "no machine id is held" in str(e)
            ):
                # The connection broke, or the server is a standby now / shutting down, or holds no
                # machine id (claiming, or left without its postmaster).
                count("no_id_refusals" if code == "55000" else "reconnects")
                try:
                    conn.close()
                except psycopg2.Error:
                    pass
                conn = None
                time.sleep(0.1)
            else:
                fatal.append(f"conn {c} on port {port}: {code} {e}")
    if conn is not None:
        conn.close()
    count("inserted", len(rows))


per_thread = [[] for _ in range(connections)]
threads = [threading.Thread(target=worker, args=(c, per_thread[c - 1])) for c in range(1, connections + 1)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(out, "a") as f:
    for rows in per_thread:
        f.writelines(rows)
with open(out + ".counts", "a") as f:
    for name, value in counts.items():
        f.write(f"{label} {name} {value}\n")
if fatal:
    sys.exit("id_load: " + "; ".join(fatal[:3]))
