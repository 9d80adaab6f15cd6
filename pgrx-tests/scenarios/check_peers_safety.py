"""Hostile peers for the check_peers_safety scenario: it speaks just enough of PostgreSQL's wire
protocol (version 3) for libpq to connect (no SSL, no authentication), and answers each query as
the database named in the connection string says (STREAM_BYTES: 64 MB by default):
  connect_params ParameterStatus messages, each of a new name, STREAM_BYTES of them, before the
                 connection is ready (never ReadyForQuery): no pause for connect_timeout to see;
  stream         a row description, then rows, STREAM_BYTES of them, without ever ending the
                 result, as a server streaming rows forever would (any other database name too);
  stall_end      one row and CommandComplete, then never ReadyForQuery: the answer never ends;
  second_stream  one row and CommandComplete, then a second result streaming STREAM_BYTES of rows;
  second_result  one row and CommandComplete, then a second result of one row, then the end;
  second_empty   one row and CommandComplete, then a second result without rows, then the end;
  two_rows       two rows where one was asked for (each of the shape asked for), then the end;
  huge_row       one row and CommandComplete, then a second result whose row declares 1 GB, then
                 STREAM_BYTES of it;
  params         one row and CommandComplete, then ParameterStatus messages, each of a new name,
                 STREAM_BYTES of them, never the end;
  notices        one row and CommandComplete, then NoticeResponse messages, STREAM_BYTES of them,
                 never the end.
A client that buffers what it is sent grows by that much. It listens on 127.0.0.1 (port written
to the file named by argv[1]), serves each connection in a thread, and stops by itself after 60 s
(or after argv[3] seconds).

Usage: python3 check_peers_safety.py PORT_FILE [STREAM_BYTES [SECONDS]]"""
import os
import socket
import struct
import sys
import threading
import time

PORT_FILE = sys.argv[1]
STREAM_BYTES = int(sys.argv[2]) if len(sys.argv) > 2 else 64 * 1024 * 1024
END = time.time() + (float(sys.argv[3]) if len(sys.argv) > 3 else 60)


def msg(kind, payload=b""):
    return kind + struct.pack("!i", len(payload) + 4) + payload


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def text_row(*values):
    return msg(b"D", struct.pack("!h", len(values)) + b"".join(struct.pack("!i", len(v)) + v for v in values))


def text_columns(*names):
    return msg(b"T", struct.pack("!h", len(names)) + b"".join(
        n + b"\0" + struct.pack("!ihihih", 0, 0, 25, -1, -1, 0) for n in names))


def stream(conn, unit):
    """Sends unit (bytes, or a function of the count sent giving them) until STREAM_BYTES went."""
    sent = n = 0
    while sent < STREAM_BYTES:
        data = unit(n) if callable(unit) else unit
        conn.sendall(data)
        sent += len(data)
        n += 1


def hold(conn):
    """Never ends the answer: holds the connection until the client closes it."""
    while conn.recv(65536):
        pass


def answer(conn, mode, query):
    # Three text columns, as the first remote query of snowflake_check_peers() asks: its first
    # answer (search_path, statement_timeout, the extension's schema) is well formed.
    first = text_columns(b"a", b"b", b"c") + text_row(b"pg_catalog, pg_temp", b"2s", b"public") + msg(b"C", b"SELECT 1\0")
    if mode == "stall_end":
        conn.sendall(first)
        return hold(conn)
    if mode == "second_stream":
        conn.sendall(first + text_columns(b"more"))
        stream(conn, text_row(b"x" * 65000))
        return hold(conn)
    if mode == "second_result":
        conn.sendall(first + text_columns(b"more") + text_row(b"surprise") + msg(b"C", b"SELECT 1\0") + msg(b"Z", b"I"))
        return
    if mode == "second_empty":
        conn.sendall(first + text_columns(b"more") + msg(b"C", b"SELECT 0\0") + msg(b"Z", b"I"))
        return
    if mode == "two_rows":
        # Each query's answer as it asks (the second: machine id, layout, server, clock), twice.
        if b"snowflake_stats" in query:
            cols, row = text_columns(b"m", b"l", b"s", b"c"), text_row(b"9", b"41|10|12", b"fake@1", b"0")
        else:
            cols, row = text_columns(b"a", b"b", b"c"), text_row(b"", b"", b"public")
        conn.sendall(cols + row * 2 + msg(b"C", b"SELECT 2\0") + msg(b"Z", b"I"))
        return
    if mode == "huge_row":
        # A DataRow that declares 1 GB: libpq sizes its buffer for it before any of it comes.
        conn.sendall(first + text_columns(b"more") + b"D" + struct.pack("!i", 1 << 30) + struct.pack("!hi", 1, (1 << 30) - 10))
        stream(conn, b"y" * 65536)
        return hold(conn)
    if mode == "params":
        conn.sendall(first)
        stream(conn, lambda n: b"".join(msg(b"S", b"p%d_%d\0v\0" % (n, i)) for i in range(1000)))
        return hold(conn)
    if mode == "notices":
        conn.sendall(first)
        notice = msg(b"N", b"SNOTICE\0VNOTICE\0C00000\0M" + b"n" * 200 + b"\0\0")
        stream(conn, notice)
        return hold(conn)
    # stream: rows, without ever ending the result.
    conn.sendall(text_columns(b"a", b"b", b"c"))
    value = b"x" * 21800
    stream(conn, text_row(value, value, value))
    return hold(conn)


def serve(conn):
    conn.settimeout(max(1, END - time.time()))
    try:
        # SSLRequest and GSSENCRequest are refused ('N'); then the startup message.
        while True:
            length = struct.unpack("!i", recv_exact(conn, 4))[0]
            body = recv_exact(conn, length - 4)
            code = struct.unpack("!i", body[:4])[0]
            if code in (80877103, 80877104):
                conn.sendall(b"N")
                continue
            break
        fields = body[4:].split(b"\0")
        startup = dict(zip(fields[0::2], fields[1::2]))
        mode = startup.get(b"database", b"").decode()
        params = [(b"server_version", b"15.0"), (b"server_encoding", b"UTF8"), (b"client_encoding", b"UTF8"),
                  (b"DateStyle", b"ISO, MDY"), (b"integer_datetimes", b"on"), (b"standard_conforming_strings", b"on")]
        out = msg(b"R", struct.pack("!i", 0))
        if mode == "connect_params":
            conn.sendall(out)
            stream(conn, lambda n: b"".join(msg(b"S", b"p%d_%d\0v\0" % (n, i)) for i in range(1000)))
            return hold(conn)
        for k, v in params:
            out += msg(b"S", k + b"\0" + v + b"\0")
        out += msg(b"K", struct.pack("!ii", 4242, 4242)) + msg(b"Z", b"I")
        conn.sendall(out)
        while True:
            kind = recv_exact(conn, 1)
            length = struct.unpack("!i", recv_exact(conn, 4))[0]
            body = recv_exact(conn, length - 4)
            if kind == b"X":
                return
            if kind != b"Q":
                continue
            if body.lower().startswith(b"set "):  # dblink may set client_encoding
                conn.sendall(msg(b"C", b"SET\0") + msg(b"Z", b"I"))
                continue
            answer(conn, mode, body)
            if mode not in ("second_result", "second_empty", "two_rows"):
                return
    except (ConnectionError, OSError, socket.timeout):
        return
    finally:
        conn.close()


s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
s.settimeout(0.2)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
while time.time() < END:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
