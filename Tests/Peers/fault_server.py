#!/usr/bin/env python3
"""A loopback HTTP/1.1 server that misbehaves on purpose, one path per row of DESIGN.md's
fault table. Standard library only.

    python3 Tests/Peers/fault_server.py --port 0
    -> first stdout line: the port number; then it serves until killed (SIGTERM/SIGINT).

Every path accepts any method and a body sent with Content-Length or chunked; responses
say `Connection: close` and the connection is closed after each one. `Expect: 100-continue`
is answered with `100 Continue` before the body is read (except where noted).

  /sink...            read the body, 200 JSON {"bytes","sha256","method","path","chunked",
                      "content_length","headers":{lower-case name: value},"seq"}
  /reset-mid-body     read ~1 MiB (?after=BYTES) of the body, then reset the connection (RST
                      via SO_LINGER 0); nothing is answered
  /redirect-307       read the whole body, answer 307 with Location /sink (?to=PATH)
  /redirect-308       the same with 308
  /auth               401 WWW-Authenticate: Basic realm="x" unless Authorization is Basic for
                      user:secret (or ?user=U&pass=P), then acts as /sink. The body is read
                      before the 401 (?early=1: answered right after the head, body unread)
  /early-413          answer 413 right after the head, without reading the body or sending
                      100 Continue; then wait (up to 10 s) for the client to close
  /close-no-response  read the whole body, then close without answering
  /early-200          read ~1 MiB (?after=BYTES) of the body, answer 200 JSON (the bytes read so
                      far), then stop reading and wait (up to 10 s) for the client to close: a
                      2xx before the whole body, which must never count as a success
  /expect-417         with `Expect: 100-continue`: no 100 Continue; read ~256 KiB (?after=BYTES)
                      of the body (sent after the client's expect timeout), answer 417 without
                      `Connection: close`, then close at once (?then=close, the default) or read
                      (and discard) what comes until the client closes the connection or
                      ?linger= seconds (3) of silence pass (?then=drain). ?timeout= seconds of
                      silence end either request (instead of --timeout). Without Expect (the client's
                      second try): acts as /sink
  /slow               read the body 64 KiB (?chunk=) every 10 ms (?interval_ms=) through a
                      small receive buffer, then answer like /sink
  /trickle            read the body, answer 200 with a Content-Length of ?bytes= (1 MiB), then
                      send that body ?rate= bytes (5) a second until done or the client goes:
                      an answer that keeps a connection busy without ever stalling
  /keep-alive-answer  read the body, answer 200 at once (no Content-Length, Connection: close) with
                      an XML declaration, then ?spaces= (5) spaces, one every ?every= seconds (2),
                      then a CompleteMultipartUploadResult: as S3 keeps a CompleteMultipartUpload's
                      connection alive while it joins the parts
  /error-200/...      read the body, answer 200 without an ETag and with an S3 <Error> document
                      (AccessDenied; ?code= another) as the body: a PutObject to bucket
                      `error-200`, path-style, that nothing proves was stored
  /echo-headers/...   read the body, answer 400 with an S3 <Error> document whose Message is every
                      request header (name: value; ...), as a gateway that echoes them does
  /silent/...         read the request, record it, never answer; wait (up to 60 s) for the client
                      to close: a listing page that does not come
  /source/NAME        a remote byte source (?size= bytes, 20 MiB; random bytes of ?seed=): HEAD
                      names its length, ETag "v1" and Last-Modified; a GET with Range answers 206
                      with Content-Range, 412 when If-Match names another ETag. After ?after= GETs
                      of NAME (0), ?mode= misbehaves: 412 (the source changed: ETag "v2", other
                      bytes, If-Match honoured), etag (other bytes and ETag "v2", If-Match
                      ignored), 200 (the whole object to a Range; first200: to the first GET only), short (half the range, said by
                      Content-Length), reset (once: half the range, then a reset); noetag (no
                      ETag nor Last-Modified), redirect (302 to ?to=, a URL). ?head=STATUS
                      answers HEAD with that status (405, 403, 501: a source that refuses HEAD);
                      ?total=* names no length in Content-Range (`bytes 0-0/*`). Every request to
                      /source/ is logged with its headers
  GET /requests       JSON list of every request seen so far (path, method, bytes, sha256,
                      outcome), for tests that count attempts
  anything else       404 after reading the body

Each connection times out after 30 s of silence (--timeout).
"""

import argparse
import base64
import hashlib
import json
import select
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

MAX_HEAD = 64 * 1024
MAX_LINE = 8 * 1024
CRLF = b"\r\n"


class BadRequest(Exception):
    pass


class ClientGone(Exception):
    pass


class Log:
    """The requests seen, shared by every connection thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries = []

    def add(self, entry):
        with self.lock:
            entry["seq"] = len(self.entries) + 1
            self.entries.append(entry)
            return entry["seq"]

    def snapshot(self):
        with self.lock:
            return list(self.entries)


LOG = Log()
SOURCE_LOCK = threading.Lock()
SOURCE_GETS = {}
SOURCE_DATA = {}


def source_data(seed, size):
    """The bytes of /source/ for a seed: random, made once."""
    with SOURCE_LOCK:
        if (seed, size) not in SOURCE_DATA:
            import random
            SOURCE_DATA[(seed, size)] = random.Random(seed).randbytes(size)
        return SOURCE_DATA[(seed, size)]


class Body:
    """Reads a request body (Content-Length or chunked) from a buffered reader."""

    def __init__(self, rfile, headers):
        self.rfile = rfile
        self.chunked = False
        self.length = None
        self.remaining = 0
        self.done = False
        self.bytes = 0
        self.digest = hashlib.sha256()
        encoding = headers.get("transfer-encoding")
        length = headers.get("content-length")
        if encoding is not None and length is not None:
            raise BadRequest("both Content-Length and Transfer-Encoding")
        if encoding is not None:
            if encoding.strip().lower() != "chunked":
                raise BadRequest("unsupported Transfer-Encoding " + encoding)
            self.chunked = True
        elif length is not None:
            if not length.isdigit():
                raise BadRequest("malformed Content-Length")
            self.length = int(length)
            self.remaining = self.length
            self.done = self.length == 0
        else:
            self.done = True

    def _line(self):
        line = self.rfile.readline(MAX_LINE + 1)
        if not line:
            raise ClientGone("connection closed in a chunk line")
        if len(line) > MAX_LINE or not line.endswith(CRLF):
            raise BadRequest("malformed chunk line")
        return line[:-2]

    def read(self, limit=256 * 1024):
        """The next piece of the body (at most `limit` bytes), b"" at its end."""
        if self.done:
            return b""
        if self.chunked:
            if self.remaining == 0:
                size_text = self._line().split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise BadRequest("malformed chunk size")
                if size == 0:
                    while self._line():  # trailers
                        pass
                    self.done = True
                    return b""
                self.remaining = size
            data = self.rfile.read1(min(limit, self.remaining)) if hasattr(self.rfile, "read1") \
                else self.rfile.read(min(limit, self.remaining))
            if not data:
                raise ClientGone("connection closed in chunk data")
            self.remaining -= len(data)
            if self.remaining == 0 and self.rfile.read(2) != CRLF:
                raise BadRequest("chunk data not followed by CRLF")
        else:
            data = self.rfile.read1(min(limit, self.remaining)) if hasattr(self.rfile, "read1") \
                else self.rfile.read(min(limit, self.remaining))
            if not data:
                raise ClientGone("connection closed after %d of %d body bytes" % (self.bytes, self.length))
            self.remaining -= len(data)
            self.done = self.remaining == 0
        self.bytes += len(data)
        self.digest.update(data)
        return data

    def drain(self, pause=None):
        while self.read():
            if pause:
                pause()


class Handler(socketserver.StreamRequestHandler):
    timeout = 30  # set from --timeout

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- plumbing -------------------------------------------------------------------------

    def read_head(self):
        line = self.rfile.readline(MAX_LINE + 1)
        while line == CRLF:
            line = self.rfile.readline(MAX_LINE + 1)
        if not line:
            return None
        if not line.endswith(CRLF):
            raise BadRequest("malformed request line")
        parts = line[:-2].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest("malformed request line")
        method, target, version = parts
        headers, raw, total = {}, [], len(line)
        while True:
            line = self.rfile.readline(MAX_LINE + 1)
            total += len(line)
            if not line:
                raise ClientGone("connection closed in the request head")
            if total > MAX_HEAD or not line.endswith(CRLF):
                raise BadRequest("malformed or oversized head")
            if line == CRLF:
                break
            name, sep, value = line[:-2].decode("latin-1").partition(":")
            if not sep or not name or name != name.strip():
                raise BadRequest("malformed header line")
            value = value.strip(" \t")
            raw.append([name, value])
            key = name.lower()
            headers[key] = headers[key] + ", " + value if key in headers else value
        return method, target, version, headers, raw

    def send(self, status, reason, body=b"", headers=()):
        lines = ["HTTP/1.1 %d %s" % (status, reason)]
        lines += ["%s: %s" % pair for pair in headers]
        lines += ["Content-Length: %d" % len(body), "Connection: close", "", ""]
        self.wfile.write("\r\n".join(lines).encode("latin-1") + body)
        self.wfile.flush()

    def send_json(self, status, reason, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send(status, reason, body, (("Content-Type", "application/json"),) + tuple(headers))

    def send_continue(self):
        if self.headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()

    def record(self, body, outcome, status=None):
        return LOG.add({
            "method": self.method, "path": self.path, "query": self.query,
            "bytes": body.bytes if body else 0,
            "sha256": body.digest.hexdigest() if body and body.done else None,
            "complete": bool(body and body.done), "chunked": bool(body and body.chunked),
            "content_length": body.length if body else None,
            "status": status, "outcome": outcome,
        })

    def report(self, body, seq):
        return {
            "bytes": body.bytes, "sha256": body.digest.hexdigest(), "method": self.method,
            "path": self.path, "chunked": body.chunked, "content_length": body.length,
            "headers": self.headers, "header_list": self.raw_headers, "seq": seq,
        }

    def param(self, name, default):
        values = self.params.get(name)
        return values[0] if values else default

    # -- one request per connection -------------------------------------------------------

    def handle(self):
        try:
            head = self.read_head()
            if head is None:
                return
            self.method, target, _, self.headers, self.raw_headers = head
            parts = urlsplit(target)
            self.path, self.query = parts.path, parts.query
            self.params = parse_qs(parts.query)
            try:
                body = Body(self.rfile, self.headers)
            except BadRequest as error:
                self.record(None, "rejected: %s" % error, 400)
                self.send_json(400, "Bad Request", {"error": str(error)})
                return
            self.route(body)
        except BadRequest as error:
            try:
                self.send_json(400, "Bad Request", {"error": str(error)})
            except OSError:
                pass
        except (ClientGone, ConnectionError, socket.timeout, TimeoutError) as error:
            sys.stderr.write("fault_server: %s\n" % (error or type(error).__name__))

    def route(self, body):
        path = self.path
        if path == "/requests" and self.method == "GET":
            self.send_json(200, "OK", LOG.snapshot())
        elif path.startswith("/sink"):
            self.sink(body)
        elif path.startswith("/source/"):
            self.remote_source(body)
        elif path == "/reset-mid-body":
            self.reset_mid_body(body)
        elif path in ("/redirect-307", "/redirect-308"):
            status = int(path[-3:])
            self.send_continue()
            body.drain()
            self.record(body, "redirected", status)
            reason = "Temporary Redirect" if status == 307 else "Permanent Redirect"
            self.send(status, reason, b"", (("Location", self.param("to", "/sink")),))
        elif path == "/auth":
            self.auth(body)
        elif path == "/early-413":
            self.early_413(body)
        elif path == "/close-no-response":
            self.send_continue()
            body.drain()
            self.record(body, "closed without response")
            self.connection.shutdown(socket.SHUT_RDWR)
        elif path == "/early-200":
            self.early_200(body)
        elif path == "/expect-417":
            self.expect_417(body)
        elif path == "/slow":
            self.slow(body)
        elif path == "/trickle":
            self.trickle(body)
        elif path == "/keep-alive-answer":
            self.keep_alive_answer(body)
        elif path.startswith("/silent/"):
            body.drain()
            self.record(body, "never answered")
            poller = select.poll()
            poller.register(self.connection, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
            poller.poll(60 * 1000)
        elif path.startswith("/echo-headers/"):
            self.send_continue()
            body.drain()
            self.record(body, "headers echoed", 400)
            echoed = "; ".join("%s: %s" % (name, value) for name, value in self.raw_headers)
            echoed = echoed.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            self.send(400, "Bad Request", ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InvalidRequest</Code>'
                                           '<Message>bad headers: %s</Message></Error>' % echoed).encode("latin-1"),
                      (("Content-Type", "application/xml"),))
        elif path.startswith("/error-200/"):
            self.send_continue()
            body.drain()
            self.record(body, "200 with an error document", 200)
            code = self.param("code", "AccessDenied")
            self.send(200, "OK", ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
                                  '<Message>refused after all</Message><RequestId>R37</RequestId></Error>' % code).encode(),
                      (("Content-Type", "application/xml"),))
        else:
            self.send_continue()
            body.drain()
            self.record(body, "not found", 404)
            self.send_json(404, "Not Found", {"error": "no such path", "path": path})

    def remote_source(self, body):
        body.drain()
        mode = self.param("mode", "ok")
        size = int(self.param("size", str(20 << 20)))
        seed = int(self.param("seed", "0"))
        with SOURCE_LOCK:
            if self.method == "GET":
                SOURCE_GETS[self.path] = SOURCE_GETS.get(self.path, 0) + 1
            count = SOURCE_GETS.get(self.path, 0)
        LOG.add({"method": self.method, "path": self.path, "query": self.query, "headers": self.headers,
                 "outcome": "source", "bytes": 0, "sha256": None, "complete": True, "status": None})
        if mode == "redirect":
            self.send(302, "Found", b"", (("Location", self.param("to", "/sink")),))
            return
        misbehaves = self.method == "GET" and count > int(self.param("after", "0"))
        changed = misbehaves and mode in ("412", "etag")
        data = source_data(seed + (1 if changed else 0), size)
        tag = '"v2"' if changed else '"v1"'
        validators = () if mode == "noetag" else (("ETag", tag), ("Last-Modified", "Mon, 07 Dec 2026 00:00:00 GMT"))
        if self.method == "HEAD" and self.param("head", ""):
            self.send(int(self.param("head", "")), "Refused", b"")
            return
        if self.method == "HEAD":
            self.wfile.write(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nAccept-Ranges: bytes\r\n%sConnection: close\r\n\r\n"
                              % (size, "".join("%s: %s\r\n" % pair for pair in validators))).encode("latin-1"))
            self.wfile.flush()
            return
        wanted = self.headers.get("if-match")
        if wanted is not None and wanted != tag and mode != "etag":
            self.send(412, "Precondition Failed", b"")
            return
        first, last = 0, size - 1
        asked = self.headers.get("range", "")
        if asked.startswith("bytes="):
            a, _, b = asked[6:].partition("-")
            first, last = int(a), min(int(b) if b else size - 1, size - 1)
        if misbehaves and mode == "200" or not asked or mode == "first200" and count == 1:
            self.send(200, "OK", data, validators)
            return
        if first >= size:  # as nginx answers a range of an empty file
            self.send(416, "Range Not Satisfiable", b"", (("Content-Range", "bytes */%d" % size),))
            return
        piece = data[first:last + 1]
        headers = validators + (("Content-Range", "bytes %d-%d/%s" % (first, last, self.param("total", str(size)))),)
        if misbehaves and mode == "short":
            self.send(206, "Partial Content", piece[:len(piece) // 2], headers)
            return
        if misbehaves and mode == "reset" and count == int(self.param("after", "0")) + 1:
            lines = ["HTTP/1.1 206 Partial Content"] + ["%s: %s" % pair for pair in headers]
            lines += ["Content-Length: %d" % len(piece), "Connection: close", "", ""]
            self.wfile.write("\r\n".join(lines).encode("latin-1") + piece[:len(piece) // 2])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        self.send(206, "Partial Content", piece, headers)

    def sink(self, body):
        self.send_continue()
        body.drain()
        seq = self.record(body, "ok", 200)
        self.send_json(200, "OK", self.report(body, seq))

    def reset_mid_body(self, body):
        after = int(self.param("after", str(1 << 20)))
        self.send_continue()
        while body.bytes < after and body.read(min(256 * 1024, max(1, after - body.bytes))):
            pass
        self.record(body, "reset", None)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def auth(self, body):
        user = self.param("user", "user")
        password = self.param("pass", "secret")
        expected = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        if self.headers.get("authorization") == expected:
            self.sink(body)
            return
        challenge = (("WWW-Authenticate", 'Basic realm="x"'),)
        if self.param("early", "0") == "1":
            self.record(body, "challenged before the body", 401)
            self.send_json(401, "Unauthorized", {"error": "credentials required"}, challenge)
            self.linger_until_client_closes()
            return
        self.send_continue()
        body.drain()
        self.record(body, "challenged", 401)
        self.send_json(401, "Unauthorized", {"error": "credentials required", "bytes": body.bytes}, challenge)

    def early_413(self, body):
        self.record(body, "413 before the body", 413)
        self.send_json(413, "Payload Too Large", {"error": "too large"})
        self.linger_until_client_closes()

    def early_200(self, body):
        after = int(self.param("after", str(1 << 20)))
        self.send_continue()
        while body.bytes < after and body.read(min(256 * 1024, max(1, after - body.bytes))):
            pass
        seq = self.record(body, "200 before the whole body", 200)
        self.send_json(200, "OK", {"bytes": body.bytes, "complete": body.done, "seq": seq})
        self.linger_until_client_closes()

    def expect_417(self, body):
        if "timeout" in self.params:
            self.connection.settimeout(float(self.param("timeout", "30")))
        if self.headers.get("expect", "").lower() != "100-continue":
            self.sink(body)
            return
        after = int(self.param("after", str(256 * 1024)))
        while body.bytes < after and body.read(min(256 * 1024, max(1, after - body.bytes))):
            pass
        self.record(body, "417 during the body", 417)
        # Not `self.send`: this answer leaves the connection open, as a keep-alive server's would.
        self.wfile.write(b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n")
        self.wfile.flush()
        if self.param("then", "close") == "drain":
            # Read what comes until the client hangs up (or ?linger= seconds of silence), as a
            # keep-alive server that discards the body would: libcurl rewinds for its resend.
            self.connection.settimeout(float(self.param("linger", "3")))
            try:
                while self.connection.recv(256 * 1024):
                    pass
            except OSError:
                pass
        self.connection.close()

    def linger_until_client_closes(self, seconds=10):
        """Stops sending and, without reading, waits for the client to hang up (or `seconds`)."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            return
        poller = select.poll()
        poller.register(self.connection, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
        poller.poll(seconds * 1000)

    def slow(self, body):
        chunk = int(self.param("chunk", str(64 * 1024)))
        interval = float(self.param("interval_ms", "10")) / 1000.0
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, max(4096, chunk))
        self.send_continue()
        while body.read(chunk):
            time.sleep(interval)
        seq = self.record(body, "ok (slow)", 200)
        self.send_json(200, "OK", self.report(body, seq))


    def keep_alive_answer(self, body):
        self.send_continue()
        body.drain()
        self.record(body, "kept alive", 200)
        spaces = int(self.param("spaces", "5"))
        every = float(self.param("every", "2"))
        try:
            self.connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nConnection: close\r\n\r\n"
                                    b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
            for _ in range(spaces):
                time.sleep(every)
                self.connection.sendall(b" ")
            self.connection.sendall(b"<CompleteMultipartUploadResult><ETag>\"kept-2\"</ETag></CompleteMultipartUploadResult>")
        except OSError:
            return

    def trickle(self, body):
        self.send_continue()
        body.drain()
        self.record(body, "trickled", 200)
        length = int(self.param("bytes", str(1 << 20)))
        rate = max(1, int(self.param("rate", "5")))
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % length
        try:
            self.connection.sendall(head.encode())
            sent = 0
            while sent < length:
                step = min(rate, length - sent)
                self.connection.sendall(b" " * step)
                sent += step
                time.sleep(1.0)
        except OSError:
            return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds of silence before a connection is dropped")
    options = parser.parse_args()
    Handler.timeout = options.timeout
    if ":" in options.host:
        Server.address_family = socket.AF_INET6
    server = Server((options.host, options.port), Handler)
    print(server.server_address[1], flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
