"""The soak's clients: on every server, several connections insert rows whose id is
`DEFAULT snowflake_nextval()`, and each records every id the server acknowledged (the INSERT ...
RETURNING of an autocommit statement came back: committed), with the time it came back.

One thread a connection; per connection (out/clients/SERVER-K.*):
  SERVER-K.ids     binary, little-endian int64 pairs (acknowledged at, ns since 1970; id); a pair
                   with a negative id marks a new connection (its backend's pid, negated), so that
                   each id is known to come from the backend connected last before it;
  SERVER-K.events  text lines: `C <ns> <backend pid>` a connection made, `E <ns> <sqlstate>
                   <message>` a statement refused, `X <ns> <error>` a connection that failed.
Connections 0 .. small-1 insert a few rows a statement, often; the last one ("bulk") many rows a
statement, so that its backend spends most of its time in snowflake_nextval() (the nemesis stops
backends at random: there it stops one in the middle of issuing). On a standby every insert is
refused (25006) until it is promoted.

Usage: python clients.py CONFIG.json    (runs until SIGTERM or SIGINT, then closes its files)
"""
import json
import os
import signal
import struct
import sys
import threading
import time

import psycopg

PAIR = struct.Struct("<qq")


def connection(cfg, server, k, bulk, stop):
    out = os.path.join(cfg["out"], "clients", "%s-%d" % (server["name"], k))
    rows, period = (cfg["bulk_rows"], cfg["bulk_period"]) if bulk else (cfg["small_rows"], cfg["small_period"])
    sql = "INSERT INTO t(c) SELECT %d FROM generate_series(1, %d) RETURNING id" % (k, rows)
    with open(out + ".ids", "wb") as ids, open(out + ".events", "w", buffering=1) as events:
        conn = None
        due = time.monotonic()
        while not stop.is_set():
            if conn is None:
                try:
                    conn = psycopg.connect(host=cfg["socket_dir"], port=server["port"], user="postgres",
                                           dbname="postgres", autocommit=True, connect_timeout=3,
                                           application_name="soak %s %d" % (server["name"], k),
                                           options="-c statement_timeout=30s")
                    pid = conn.info.backend_pid
                    t = time.time_ns()
                    ids.write(PAIR.pack(t, -pid))
                    events.write("C %d %d\n" % (t, pid))
                except psycopg.Error as e:
                    events.write("X %d %s\n" % (time.time_ns(), one_line(e)))
                    conn = None
                    stop.wait(0.2)
                    continue
            try:
                got = conn.execute(sql).fetchall()
                t = time.time_ns()
                ids.write(b"".join(PAIR.pack(t, r[0]) for r in got))
            except psycopg.Error as e:
                events.write("E %d %s %s\n" % (time.time_ns(), e.sqlstate or "-", one_line(e)))
                if conn.broken or conn.closed:
                    try:
                        conn.close()
                    except psycopg.Error:
                        pass
                    conn = None
                # A refused call is retried soon, not at once: a server without an id is asked
                # ten times a second by each connection, enough to see when ids come back.
                stop.wait(0.1)
                due = time.monotonic()
                continue
            due += period
            left = due - time.monotonic()
            if left > 0:
                stop.wait(left)
            else:
                due = time.monotonic()
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass


def one_line(e):
    return " ".join(str(e).split())[:600]


def main():
    cfg = json.load(open(sys.argv[1]))
    os.makedirs(os.path.join(cfg["out"], "clients"), exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threads = []
    for server in cfg["servers"]:
        for k in range(cfg["small"] + 1):
            th = threading.Thread(target=connection, args=(cfg, server, k, k == cfg["small"], stop), daemon=True)
            th.start()
            threads.append(th)
    while not stop.is_set():
        stop.wait(0.5)
    for th in threads:
        th.join(40)


if __name__ == "__main__":
    main()
