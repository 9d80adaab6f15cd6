"""A fault-injecting proxy in front of one real etcd client URL (http:// only), for scenarios that
point a server's snowflake.etcd_endpoints at it instead of at etcd.

It never mocks etcd: a request it does not fault is forwarded to the real etcd byte for byte (on a
fresh upstream connection of its own), and etcd's answer is sent back byte for byte. The faults are
what a client of etcd meets in the field: a slow member, a request applied after its client gave
up, an answer lost, an etcd error (in the forms of etcd 3.4, 3.5 and 3.6's gateways), an answer
that never ends or never stops, a reset, a member that never answers, an answer that is not
etcd's, a member that is down.

One request a connection, as pg_snowflake sends them (each with Connection: close): the proxy reads
one whole request (Content-Length or chunked), answers it, and closes the connection.

Usage:
  python3 etcd_proxy.py --listen 127.0.0.1:PORT --upstream 127.0.0.1:ETCDPORT \\
      --control 127.0.0.1:CPORT --log FILE
Port 0 picks a free port; the chosen ports are printed on stdout as one line `listen=P control=C`
(flushed), so that a shell can read them. It runs until SIGTERM or SIGINT.

The control port speaks plain HTTP with JSON:
  POST /rule      a rule (below); answers {"id": N, ...}
  GET  /rules     the rules, each with how many requests it matched and was applied to
  POST /clear     removes every rule (requests already held are not released)
  POST /release   forwards now every request a `late` rule holds (body {"rule": N}: only that
                  rule's); answers {"released": N}
  POST /down      refuses new connections: {"how": "close"} (the default) accepts and closes each
                  at once; {"how": "refuse"} closes the listening socket, so that a connect is
                  refused (ECONNREFUSED) as by a member that is not running
  POST /up        takes connections again
  GET  /status    {"down": ..., "pending_late": N, "connections": N}
  GET  /log       the request log, as JSON lines (the same lines as the --log file)

A rule: {"path": "/v3/kv/txn", "contains": TEXT, "contains_b64": KEY, "nth": 1, "times": 1,
"fault": {...}}. A request matches when its path is `path` (absent or "*": any path), `contains`
appears in its body or in its body with every base64 key and value decoded (absent: any), and the
base64 of `contains_b64` appears in its body (absent: any). Every rule counts the requests it
matches from the moment it is set; it applies from the nth of them (default 1) to `times` of them
(default 1; -1 for ever), then it is spent. Rules are looked at in the order they were set: the
first one due takes the request (a rule due but passed over for an earlier one keeps its turn).

The faults ({"kind": ...}):
  delay        {"ms": N}: holds the request N ms, then forwards it and answers as etcd does (a slow
               member: the request is forwarded even when its client gave up meanwhile, as a slow
               member would still apply it).
  late         {"ms": N, "answer_after_ms": M}: never answers; closes the client's connection after
               M ms (0, the default: at once; -1: not before the client closes it), and forwards
               the request N ms after it came (absent: only at POST /release) on a fresh upstream
               connection, etcd's answer discarded and logged: a request applied after its client
               gave up.
  lose_answer  forwards the request, etcd applies it, and the client's connection is closed
               without a byte of the answer.
  error34      {"status": S, "code": C, "message": M, "framing": "chunked"}: answers, without
               forwarding, an error as etcd 3.4's gateway (grpc-gateway v1) sends it, the same
               bytes as a real 3.4.23 but for the Date: HTTP S, its Access-Control-* headers,
               Content-Type application/json, Trailer: Grpc-Trailer-Content-Type, Date, chunked,
               the body {"error":M,"message":M,"code":C} in one chunk, then the trailer
               Grpc-Trailer-Content-Type: application/grpc. "framing": "length" sends the body
               with a Content-Length instead. S defaults to the gateway's status for C (14: 503).
               C defaults to 14, M to "etcdserver: leader changed".
  error35      the same as etcd 3.5's gateway sends it (a real 3.5.1's bytes but for the Date):
               Content-Length, no trailer, the body {"error":M,"code":C,"message":M}.
  error36      {"status": S, "code": C, "message": M, "details": false}: etcd 3.6's (grpc-gateway
               v2) form: the body {"code":C,"message":M} (with "details": true,
               {"code":C,"message":M,"details":[]}), no "error" key, a Content-Length,
               WWW-Authenticate: M for code 16.
  drip         {"interval_ms": 500}: a real-looking status line and headers (200, Content-Type
               application/json, Content-Length 1000000), then one body byte every interval, for
               ever (until the client closes).
  flood        {"framing": "close"}: a status line and headers without Content-Length ("framing":
               "chunked": chunked), then an endless body of JSON-looking bytes as fast as the socket
               takes it, until the client closes. Nothing caps it: the client must.
  reset        closes the client's connection with a TCP RST (SO_LINGER 0), no answer.
  blackhole    reads the request, never answers, never closes (until the client does).
  status_only  answers HTTP/1.1 200 OK with the JSON body {} (no etcd header): an answer that is
               not one.

The log: one JSON object a line, flushed at each line, to --log and kept for GET /log. Each request
gives one line when it is done ("event": "request"): its time, connection number, method, path,
a summary of its body with keys and values decoded from base64 (a txn's compares and puts; a
password is never logged), the rule applied, and its outcome. A fault that holds a connection
(delay, late, drip, flood, blackhole) logs a line when it begins too ("event": "holding"), and a
late request one when it is forwarded ("event": "late_forwarded", with etcd's status and answer).

Python's standard library only; one thread a connection. At SIGTERM or SIGINT it exits at once:
connections still held are closed, and late requests not yet forwarded are never forwarded.
"""
import argparse
import base64
import binascii
import email.utils
import http
import http.server
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

# What one request's head may weigh, and its body: far above what etcd's clients send.
MAX_HEAD = 64 * 1024
MAX_BODY = 16 * 1024 * 1024
# How long a forwarded request may wait for etcd's answer before the proxy gives it up.
UPSTREAM_TIMEOUT = 60.0
# The keys of etcd's JSON whose string values are base64.
B64_FIELDS = {"key", "range_end", "value", "prev_key"}


class Incomplete(Exception):
    """The bytes so far are not a whole HTTP message yet."""


class Malformed(Exception):
    """The bytes are not HTTP/1.1."""


def parse_head(buf):
    """(start line, {lower-case name: value}, head length) of the head that starts buf."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise Malformed("a head longer than %d bytes" % MAX_HEAD)
        raise Incomplete()
    lines = buf[:end].decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise Malformed("a header line without a colon: %r" % line[:80])
        name = name.strip().lower()
        # Repeated headers are joined as HTTP allows (Transfer-Encoding, say).
        headers[name] = headers[name] + ", " + value.strip() if name in headers else value.strip()
    return lines[0], headers, end + 4


def chunked_end(buf, start):
    """The end of a chunked body that begins at buf[start], trailers included; its bytes decoded."""
    pos, body = start, bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            raise Incomplete()
        try:
            size = int(buf[pos:eol].split(b";")[0].strip(), 16)
        except ValueError as e:
            raise Malformed("a bad chunk size %r" % bytes(buf[pos:eol][:20])) from e
        pos = eol + 2
        if size == 0:
            # Trailer lines, up to an empty line.
            while True:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    raise Incomplete()
                if eol == pos:
                    return eol + 2, bytes(body)
                pos = eol + 2
        if len(buf) < pos + size + 2:
            raise Incomplete()
        body += buf[pos:pos + size]
        if buf[pos + size:pos + size + 2] != b"\r\n":
            raise Malformed("a chunk not followed by CRLF")
        pos += size + 2


def message_end(buf, request, method="POST", at_eof=False):
    """(end, start line, headers, decoded body) of the whole message at the start of buf.

    A request's body is its Content-Length or chunked; a response's may also run to the end of the
    connection (at_eof says the connection has ended). Raises Incomplete while bytes are missing."""
    start, headers, head_len = parse_head(buf)
    te = headers.get("transfer-encoding", "").lower()
    if "chunked" in te:
        end, body = chunked_end(buf, head_len)
        return end, start, headers, body
    if not request:
        parts = start.split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        if 100 <= status < 200 and status != 101:
            # An interim answer (100 Continue, to a client that sent Expect: 100-continue): the
            # answer is the one after it.
            end, start, headers, body = message_end(buf[head_len:], request, method, at_eof)
            return head_len + end, start, headers, body
        if method == "HEAD" or status in (101, 204, 304):
            return head_len, start, headers, b""
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError as e:
            raise Malformed("a bad Content-Length %r" % headers["content-length"]) from e
        if length < 0 or length > MAX_BODY:
            raise Malformed("a Content-Length of %d" % length)
        if len(buf) < head_len + length:
            raise Incomplete()
        return head_len + length, start, headers, bytes(buf[head_len:head_len + length])
    if request:
        return head_len, start, headers, b""
    if not at_eof:
        raise Incomplete()
    return len(buf), start, headers, bytes(buf[head_len:])


def read_message(sock, request, method="POST", first=b""):
    """Reads one whole HTTP message from sock: (raw bytes, start line, headers, decoded body); when
    the peer closes before a whole one came, (the bytes that came, None, None, None)."""
    buf = bytearray(first)
    while True:
        try:
            end, start, headers, body = message_end(buf, request, method)
            return bytes(buf[:end]), start, headers, body
        except Incomplete:
            pass
        data = sock.recv(65536)
        if not data:
            try:
                end, start, headers, body = message_end(buf, request, method, at_eof=True)
                return bytes(buf[:end]), start, headers, body
            except (Incomplete, Malformed):
                return bytes(buf), None, None, None
        buf += data


def decode_b64_text(s):
    """The text a base64 string of etcd's holds (or a note that it holds bytes)."""
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return s
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "<%d bytes>" % len(raw)


def decoded(value, mask=True):
    """etcd's request JSON with every base64 key and value decoded; a password masked if mask."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "password" and mask:
                out[k] = "***"
            elif k in B64_FIELDS and isinstance(v, str):
                out[k] = decode_b64_text(v)
            else:
                out[k] = decoded(v, mask)
        return out
    if isinstance(value, list):
        return [decoded(v, mask) for v in value]
    return value


def short(text, n=80):
    text = str(text)
    return text if len(text) <= n else text[:n] + "..."


def summary(path, body):
    """A short account of a request body: for kv requests the keys decoded, for a txn its compares
    and its puts, for leases the ID or TTL; the JSON decoded otherwise."""
    if not body:
        return None
    try:
        j = json.loads(body)
    except ValueError:
        return {"raw": short(body.decode("utf-8", "replace"))}
    if not isinstance(j, dict):
        return {"json": short(json.dumps(j))}
    d = decoded(j)
    if path == "/v3/kv/txn":
        def ops(list_):
            out = []
            for op in list_ or []:
                for name, r in op.items():
                    r = r or {}
                    text = "%s %s" % (name.replace("request_", ""), r.get("key", ""))
                    if name == "request_put":
                        text += "=" + short(r.get("value", ""), 40)
                        if r.get("lease") not in (None, "0", 0):
                            text += " lease=%s" % r["lease"]
                    elif r.get("range_end"):
                        text += " .. " + r["range_end"]
                    out.append(text)
            return out
        compares = []
        for c in d.get("compare", []):
            target = c.get("target", "VERSION")
            field = {"CREATE": "create_revision", "MOD": "mod_revision", "VERSION": "version",
                     "VALUE": "value", "LEASE": "lease"}.get(target, target.lower())
            compares.append("%s(%s) %s %s" % (target, c.get("key", ""), c.get("result", "EQUAL"),
                                              short(c.get(field, 0), 40)))
        return {"compare": compares, "success": ops(d.get("success")), "failure": ops(d.get("failure"))}
    out = {}
    for k in ("key", "range_end", "value", "ID", "TTL", "name", "password", "keys_only", "count_only"):
        if k in d:
            out[k] = short(d[k], 60)
    return out or {"json": short(json.dumps(d, ensure_ascii=False))}


def go_json_string(s):
    """A JSON string as Go's encoding/json writes it (<, > and & escaped as \\u003c and so on)."""
    text = json.dumps(s, ensure_ascii=False)
    for c, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                   ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, esc)
    return text


# The HTTP status each gateway gives a gRPC code when the fault names none: etcd 3.4's (grpc-gateway
# v1, FailedPrecondition 412, as seen from a real 3.4.23), 3.5's (FailedPrecondition 400, as seen
# from a real 3.5.1) and 3.6's (grpc-gateway v2, Canceled 499 too).
GATEWAY_STATUS = {"error34": {0: 200, 1: 408, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429,
                              9: 412, 10: 409, 11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401}}
GATEWAY_STATUS["error35"] = {**GATEWAY_STATUS["error34"], 9: 400}
GATEWAY_STATUS["error36"] = {**GATEWAY_STATUS["error35"], 1: 499}
# The headers etcd 3.4's and 3.5's gateway put on every answer, errors included.
CORS = (b"Access-Control-Allow-Headers: accept, content-type, authorization\r\n"
        b"Access-Control-Allow-Methods: POST, GET, OPTIONS, PUT, DELETE\r\n"
        b"Access-Control-Allow-Origin: *\r\n")


def status_line(status):
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return ("HTTP/1.1 %d %s\r\n" % (status, phrase)).encode()


def http_date():
    return ("Date: %s\r\n" % email.utils.formatdate(usegmt=True)).encode()


def gateway_error(fault, wants_close):
    """The bytes of an error answer of etcd's gateway, in the form the fault names. The forms of 3.4
    and 3.5 are those real 3.4.23 and 3.5.1 members send (the same bytes but for the Date);
    3.6's is grpc-gateway v2's as etcd's issue #21100 shows it, no 3.6 binary being at hand."""
    kind = fault["kind"]
    code = int(fault.get("code", 14))
    message = str(fault.get("message", "etcdserver: leader changed"))
    status = int(fault.get("status", GATEWAY_STATUS[kind].get(code, 500)))
    m = go_json_string(message)
    close = b"Connection: close\r\n" if wants_close else b""
    json_type = b"Content-Type: application/json\r\n"
    if kind == "error36":
        body = '{"code":%d,"message":%s%s}' % (code, m, ',"details":[]' if fault.get("details") else "")
        www = ("WWW-Authenticate: %s\r\n" % message).encode() if code == 16 else b""
        json_type += www
        framing = "length"
    elif kind == "error34":
        body = '{"error":%s,"message":%s,"code":%d}' % (m, m, code)
        framing = fault.get("framing", "chunked")
    else:
        body = '{"error":%s,"code":%d,"message":%s}' % (m, code, m)
        framing = fault.get("framing", "length")
    body = body.encode()
    if framing == "length":
        return (status_line(status) + CORS + json_type + http_date()
                + b"Content-Length: %d\r\n" % len(body) + close + b"\r\n" + body)
    # etcd 3.4 sends its errors chunked, with a trailer it announces.
    return (status_line(status) + CORS + json_type + b"Trailer: Grpc-Trailer-Content-Type\r\n" + http_date()
            + close + b"Transfer-Encoding: chunked\r\n\r\n"
            + b"%x\r\n" % len(body) + body + b"\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n")


FAULTS = {"delay", "late", "lose_answer", "error34", "error35", "error36", "drip", "flood", "reset",
          "blackhole", "status_only"}


def check_rule(rule):
    """The rule with its defaults, or ValueError saying what is wrong with it."""
    if not isinstance(rule, dict):
        raise ValueError("a rule is a JSON object")
    unknown = set(rule) - {"path", "contains", "contains_b64", "nth", "times", "fault"}
    if unknown:
        raise ValueError("unknown rule fields: %s" % ", ".join(sorted(unknown)))
    fault = rule.get("fault")
    if not isinstance(fault, dict) or fault.get("kind") not in FAULTS:
        raise ValueError("a rule needs a fault whose kind is one of: %s" % ", ".join(sorted(FAULTS)))
    nth, times = int(rule.get("nth", 1)), int(rule.get("times", 1))
    if nth < 1 or (times < 1 and times != -1):
        raise ValueError("nth is 1 or more; times is 1 or more, or -1 for ever")
    if fault.get("framing") not in (None, "chunked", "length", "close"):
        raise ValueError('fault.framing is "chunked", "length" or (flood) "close"')
    for name in ("ms", "interval_ms", "answer_after_ms", "status", "code"):
        if name in fault and fault[name] is not None and not isinstance(fault[name], int):
            raise ValueError("fault.%s is an integer" % name)
    return dict(rule, nth=nth, times=times, seen=0, applied=0)


class Proxy:
    def __init__(self, listen, upstream, log_path):
        self.upstream = upstream
        self.listen_addr = listen
        self.lock = threading.Lock()
        self.rules = []
        self.next_rule = 1
        self.conn_count = 0
        self.open_connections = 0
        self.down = None  # None, "close" or "refuse"
        self.pending = []  # [(rule id, threading.Event)] of held late requests
        self.log_lines = []
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self.stopping = threading.Event()
        self.listener = None
        self.bind()

    def bind(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(self.listen_addr)
        s.listen(128)
        # accept() wakes up now and then, to see whether the proxy is stopping.
        s.settimeout(0.2)
        # A port of 0 is chosen once: /up after a refusing /down binds the same one again.
        self.listen_addr = s.getsockname()
        self.listener = s

    # --- the log
    def log(self, **entry):
        now = time.time()
        line = dict(time=time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (now % 1 * 1000), **entry)
        text = json.dumps(line, ensure_ascii=False)
        with self.lock:
            self.log_lines.append(text)
            if self.log_file:
                self.log_file.write(text + "\n")
                self.log_file.flush()

    # --- rules
    def add_rule(self, rule):
        rule = check_rule(rule)
        with self.lock:
            rule["id"] = self.next_rule
            self.next_rule += 1
            self.rules.append(rule)
            return dict(rule)

    def match(self, path, body):
        """The rule that takes this request (a copy), after every rule has counted it."""
        text = body.decode("utf-8", "replace")
        decoded_text = None
        with self.lock:
            chosen = None
            for rule in self.rules:
                if rule["times"] != -1 and rule["applied"] >= rule["times"]:
                    continue
                if rule.get("path") not in (None, "*", path):
                    continue
                if rule.get("contains") is not None:
                    if decoded_text is None:
                        try:
                            decoded_text = json.dumps(decoded(json.loads(body), mask=False), ensure_ascii=False)
                        except ValueError:
                            decoded_text = ""
                    if rule["contains"] not in text and rule["contains"] not in decoded_text:
                        continue
                if rule.get("contains_b64") is not None:
                    if base64.b64encode(rule["contains_b64"].encode()).decode() not in text:
                        continue
                rule["seen"] += 1
                if chosen is None and rule["seen"] >= rule["nth"]:
                    rule["applied"] += 1
                    chosen = dict(rule)
            return chosen

    # --- the listener
    def serve(self):
        while not self.stopping.is_set():
            listener = self.listener
            if listener is None:
                time.sleep(0.05)
                continue
            try:
                client, _ = listener.accept()
            except OSError:
                continue  # no connection yet, or the socket closed by a refusing /down
            client.settimeout(None)
            with self.lock:
                self.conn_count += 1
                n = self.conn_count
                down = self.down
            if down:
                self.refuse(client, n)
                continue
            threading.Thread(target=self.connection, args=(client, n), daemon=True).start()

    def refuse(self, client, n):
        # Closed at once; what the client had sent already is read first, so that the close is a
        # FIN rather than the RST Linux sends when unread bytes are left behind.
        client.setblocking(False)
        try:
            while client.recv(65536):
                pass
        except OSError:
            pass
        client.close()
        self.log(event="request", conn=n, outcome="refused: the proxy is down")

    def set_down(self, how):
        with self.lock:
            self.down = how
            listener = self.listener
            if how == "refuse":
                self.listener = None
        if how == "refuse" and listener is not None:
            # Shut down first: a close alone leaves a thread blocked in accept() listening on.
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()

    def set_up(self):
        with self.lock:
            self.down = None
            rebind = self.listener is None
        if rebind:
            self.bind()

    # --- one connection
    def connection(self, client, n):
        with self.lock:
            self.open_connections += 1
        entry = {"event": "request", "conn": n}
        try:
            self.handle(client, n, entry)
        except Exception as e:  # noqa: BLE001 - a connection's failure is logged, never fatal
            entry.setdefault("outcome", "proxy error: %s: %s" % (type(e).__name__, e))
        finally:
            try:
                client.close()
            except OSError:
                pass
            with self.lock:
                self.open_connections -= 1
            self.log(**entry)

    def handle(self, client, n, entry):
        client.settimeout(None)
        raw, start, headers, body = read_message(client, request=True)
        if start is None:
            entry["outcome"] = "client closed before a whole request (%d bytes)" % len(raw)
            return
        parts = start.split(" ")
        method, path = parts[0], parts[1] if len(parts) > 1 else ""
        entry.update(method=method, path=path, summary=summary(path, body))
        wants_close = "close" in headers.get("connection", "").lower()
        rule = self.match(path, body)
        fault = rule["fault"] if rule else None
        if rule:
            entry.update(rule=rule["id"], fault=fault["kind"])
        kind = fault["kind"] if fault else None

        if kind is None:
            self.forward(raw, method, client, entry)
        elif kind == "delay":
            self.holding(entry, kind)
            if wait_client_closed(client, fault.get("ms", 1000) / 1000.0):
                entry["client_closed_early"] = True
            self.forward(raw, method, client, entry)
        elif kind == "late":
            self.late(raw, method, path, rule, client, n, entry)
        elif kind == "lose_answer":
            self.forward(raw, method, None, entry)
            entry["outcome"] = "forwarded, answer lost: " + entry["outcome"]
        elif kind in ("error34", "error35", "error36"):
            answer = gateway_error(fault, wants_close)
            sent = send_or_closed(client, answer)
            entry["outcome"] = "faulted: %s HTTP %s%s" % (kind, answer.split(b" ", 2)[1].decode(),
                                                          "" if sent else ", client closed early")
        elif kind == "status_only":
            answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + http_date()
                      + b"Content-Length: 2\r\n\r\n{}")
            send_or_closed(client, answer)
            entry["outcome"] = "faulted: status_only (200, {})"
        elif kind == "drip":
            self.holding(entry, kind)
            entry["outcome"] = "faulted: drip, %d body bytes before the client closed" % drip(
                client, fault.get("interval_ms", 500) / 1000.0)
        elif kind == "flood":
            self.holding(entry, kind)
            entry["outcome"] = "faulted: flood, %d bytes before the client closed" % flood(
                client, fault.get("framing", "close"))
        elif kind == "reset":
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            entry["outcome"] = "faulted: reset"
        elif kind == "blackhole":
            self.holding(entry, kind)
            wait_client_closed(client, None)
            entry["outcome"] = "faulted: blackhole until the client closed"

    def holding(self, entry, kind):
        """Logs that a fault begins to hold this connection."""
        self.log(event="holding", **{k: entry.get(k) for k in ("conn", "method", "path", "summary", "rule")}, fault=kind)

    def forward(self, raw, method, client, entry):
        """Forwards raw to etcd on a fresh connection; relays etcd's answer to client byte for byte
        as it comes (client None: reads it whole and sends nothing). Sets entry's outcome."""
        try:
            up = socket.create_connection(self.upstream, timeout=10)
        except OSError as e:
            entry["outcome"] = "upstream unreachable: %s" % e
            return None
        up.settimeout(UPSTREAM_TIMEOUT)
        buf, client_gone, status = bytearray(), client is None, None
        try:
            up.sendall(raw)
            while True:
                data = up.recv(65536)
                if data and not client_gone:
                    client_gone = not send_or_closed(client, data)
                buf += data
                try:
                    end, start, _, body = message_end(buf, request=False, method=method, at_eof=not data)
                    status = start.split(" ", 2)[1] if " " in start else start
                    break
                except Incomplete:
                    if not data:
                        break
        except OSError as e:
            entry["outcome"] = "upstream failed after %d bytes: %s" % (len(buf), e)
            return None
        except Malformed as e:
            entry["outcome"] = "upstream answered what is not HTTP (%s)" % e
            return None
        finally:
            up.close()
        if status is None:
            entry["outcome"] = "upstream closed after %d bytes, the answer cut short" % len(buf)
            return None
        entry["upstream_status"] = int(status) if status.isdigit() else status
        entry["outcome"] = "forwarded, etcd answered %s" % status
        if client is not None and client_gone:
            entry["client_closed_early"] = True
            entry["outcome"] += " (the client had closed)"
        if client is not None and not client_gone:
            # Half-closed, so that a client reading to the end of the connection sees the end now.
            try:
                client.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        return body

    def late(self, raw, method, path, rule, client, n, entry):
        fault = rule["fault"]
        release = threading.Event()
        item = (rule["id"], release)
        with self.lock:
            self.pending.append(item)
        arrived = time.monotonic()

        def forward_later():
            ms = fault.get("ms")
            release.wait(None if ms is None else max(0.0, ms / 1000.0 - (time.monotonic() - arrived)))
            with self.lock:
                if item in self.pending:
                    self.pending.remove(item)
            late_entry = {"event": "late_forwarded", "conn": n, "method": method, "path": path,
                          "summary": entry.get("summary"), "rule": rule["id"], "released": release.is_set(),
                          "after_ms": int((time.monotonic() - arrived) * 1000)}
            body = self.forward(raw, method, None, late_entry)
            if body is not None:
                late_entry["answer"] = short(body.decode("utf-8", "replace"), 300)
            self.log(**late_entry)

        threading.Thread(target=forward_later, daemon=True).start()
        after = fault.get("answer_after_ms", 0)
        if after:
            self.holding(entry, "late")
            closed = wait_client_closed(client, None if after < 0 else after / 1000.0)
            entry["outcome"] = "faulted: late, no answer; %s" % (
                "the client closed" if closed else "closed by the proxy after %d ms" % after)
        else:
            entry["outcome"] = "faulted: late, no answer; closed by the proxy at once"
        entry["outcome"] += "; forwarded %s" % ("after %d ms" % fault["ms"] if fault.get("ms") is not None
                                                 else "at POST /release")

    def release(self, rule_id=None):
        with self.lock:
            chosen = [p for p in self.pending if rule_id is None or p[0] == rule_id]
        for _, event in chosen:
            event.set()
        return len(chosen)


def wait_client_closed(sock, seconds):
    """Waits seconds (None: for ever) or until the client closes its side; True if it did. Bytes
    the client sends meanwhile are read and dropped."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        r, _, _ = select.select([sock], [], [], left)
        if r:
            try:
                if not sock.recv(65536):
                    return True
            except OSError:
                return True


def send_or_closed(sock, data):
    """Sends data; False if the client has closed its connection."""
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


def drip(client, interval):
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + http_date()
            + b"Content-Length: 1000000\r\n\r\n")
    if not send_or_closed(client, head):
        return 0
    text = b'{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437",' \
           b'"revision":"1","raft_term":"2"},"kvs":[' + b" " * 64
    sent = 0
    while True:
        if wait_client_closed(client, interval):
            return sent
        if not send_or_closed(client, text[sent % len(text):sent % len(text) + 1]):
            return sent
        sent += 1


def flood(client, framing):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + http_date()
    head += b"Transfer-Encoding: chunked\r\n\r\n" if framing == "chunked" else b"Connection: close\r\n\r\n"
    item = b'{"key":"L3BnX3Nub3dmbGFrZS9mbG9vZA==","create_revision":"2","mod_revision":"2",' \
           b'"version":"1","value":"eyJtYXJrIjoxfQ=="},'
    block = item * (65536 // len(item))
    if framing == "chunked":
        block = b"%x\r\n" % len(block) + block + b"\r\n"
    first = b'{"header":{"revision":"2"},"kvs":['
    if framing == "chunked":
        first = b"%x\r\n" % len(first) + first + b"\r\n"
    sent = 0
    if not send_or_closed(client, head + first):
        return 0
    while send_or_closed(client, block):
        sent += len(block)
    return sent


class Control(http.server.BaseHTTPRequestHandler):
    proxy = None  # set by main
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, value, content_type="application/json"):
        body = value if isinstance(value, bytes) else (json.dumps(value) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length) if length else b""
        return json.loads(text) if text.strip() else {}

    def do_GET(self):
        p = self.proxy
        if self.path == "/rules":
            with p.lock:
                self.answer(200, [dict(r) for r in p.rules])
        elif self.path == "/log":
            with p.lock:
                text = "".join(line + "\n" for line in p.log_lines)
            self.answer(200, text.encode(), "application/x-ndjson")
        elif self.path == "/status":
            with p.lock:
                self.answer(200, {"down": p.down or False, "pending_late": len(p.pending),
                                  "connections": p.open_connections, "listen": p.listen_addr[1]})
        else:
            self.answer(404, {"error": "GET /rules, /log or /status"})

    def do_POST(self):
        p = self.proxy
        try:
            body = self.body()
            if self.path == "/rule":
                self.answer(200, p.add_rule(body))
            elif self.path == "/clear":
                with p.lock:
                    n = len(p.rules)
                    p.rules.clear()
                self.answer(200, {"cleared": n})
            elif self.path == "/release":
                self.answer(200, {"released": p.release(body.get("rule"))})
            elif self.path == "/down":
                how = body.get("how", "close")
                if how not in ("close", "refuse"):
                    raise ValueError('how is "close" or "refuse"')
                p.set_down(how)
                p.log(event="down", how=how)
                self.answer(200, {"down": how})
            elif self.path == "/up":
                p.set_up()
                p.log(event="up")
                self.answer(200, {"down": False})
            else:
                self.answer(404, {"error": "POST /rule, /clear, /release, /down or /up"})
        except (ValueError, TypeError) as e:
            self.answer(400, {"error": str(e)})
        except OSError as e:
            # /up after a refusing /down, its port taken meanwhile.
            self.answer(500, {"error": str(e)})


def address(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("HOST:PORT, not %r" % text)
    return host, int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", type=address, required=True, help="HOST:PORT the clients connect to")
    ap.add_argument("--upstream", required=True, help="HOST:PORT (or http://HOST:PORT) of one etcd client URL")
    ap.add_argument("--control", type=address, required=True, help="HOST:PORT of the control API")
    ap.add_argument("--log", help="the request log (JSON lines), appended to")
    args = ap.parse_args()
    upstream = args.upstream
    if upstream.startswith("https://"):
        ap.error("the upstream is http:// only")
    upstream = address(upstream.removeprefix("http://").rstrip("/"))

    proxy = Proxy(args.listen, upstream, args.log)
    Control.proxy = proxy
    control = http.server.ThreadingHTTPServer(args.control, Control)
    control.daemon_threads = True
    print("listen=%d control=%d" % (proxy.listen_addr[1], control.server_address[1]), flush=True)

    def stop(*_):
        proxy.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=proxy.serve, daemon=True).start()
    threading.Thread(target=control.serve_forever, daemon=True).start()
    proxy.log(event="start", listen=proxy.listen_addr[1], control=control.server_address[1],
              upstream="%s:%d" % upstream, pid=os.getpid())
    while not proxy.stopping.wait(1):
        pass
    proxy.log(event="stop")
    # The daemon threads (held connections among them) end with the process.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
