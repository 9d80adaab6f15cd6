"""A hostile peer for the check_peers_safety scenario: it speaks just enough of PostgreSQL's wire
protocol (version 3) for libpq to connect (no SSL, no authentication), and answers the first query
with a row description and then rows, STREAM_BYTES of them, without ever ending the result, as a
server streaming rows forever would; a client that buffers the whole result grows by that much.
It listens on 127.0.0.1 (port written to the file named by argv[1]), serves each connection in a
thread, and stops by itself after 60 s.

Usage: python3 streaming_peer.py PORT_FILE [STREAM_BYTES]"""
import os
import socket
import struct
import sys
import threading
import time

PORT_FILE = sys.argv[1]
STREAM_BYTES = int(sys.argv[2]) if len(sys.argv) > 2 else 64 * 1024 * 1024
END = time.time() + 60


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
        params = [(b"server_version", b"15.0"), (b"server_encoding", b"UTF8"), (b"client_encoding", b"UTF8"),
                  (b"DateStyle", b"ISO, MDY"), (b"integer_datetimes", b"on"), (b"standard_conforming_strings", b"on")]
        out = msg(b"R", struct.pack("!i", 0))
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
            # Three text columns, as the first remote query of snowflake_check_peers() asks.
            cols = b"".join(name + b"\0" + struct.pack("!ihihih", 0, 0, 25, -1, -1, 0) for name in (b"a", b"b", b"c"))
            conn.sendall(msg(b"T", struct.pack("!h", 3) + cols))
            value = b"x" * 21800
            row = msg(b"D", struct.pack("!h", 3) + (struct.pack("!i", len(value)) + value) * 3)
            sent = 0
            while sent < STREAM_BYTES:
                conn.sendall(row)
                sent += len(row)
            # Never CommandComplete nor ReadyForQuery: the result does not end. Hold until closed.
            while conn.recv(65536):
                pass
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
