#!/usr/bin/env python3
"""A loopback HTTP/1.1 sink for the curl transport's tests.

Prints its port on the first line of stdout, then serves until killed. Every request is
answered with JSON: method, path, body byte count, SHA-256, whether the body came chunked,
and the request headers (names lowercased). Paths:

  /sink...            read the body, answer 200
  /redirect307?to=P   read the body, answer 307 to P
  /redirect303?to=P   read the body, answer 303 to P
  /auth               401 Basic until the request carries user:secret, then as /sink
  /early413           refuse at `Expect: 100-continue` (or before reading) with 413, close
  /slow               read the body, wait 30 s before answering (for stall and cancel tests)
  /hold               read the body, never answer: wait until the client closes (for cancel
                      tests: only the client can end the request)
  /large?bytes=N&seed=S  read the body, answer 200 with N pseudo-random bytes (Python's
                      random.Random(S)), their SHA-256 in X-Body-SHA256, sent in 1 MiB writes
  /gather?n=N         read the body, answer once N /gather bodies have arrived (up to 20 s):
                      proves N requests were in flight at once

Each report also carries `peer`, the client's port: one port per connection.
"""
import base64
import hashlib
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from peer_serve import serve

EXPECTED_AUTH = "Basic " + base64.b64encode(b"user:secret").decode()
GATHERED = threading.Condition()
GATHER_COUNT = [0]


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_expect_100(self):
        if urlsplit(self.path).path == "/early413":
            self.refuse_413()
            return False
        if urlsplit(self.path).path == "/auth" and self.headers.get("Authorization") != EXPECTED_AUTH \
                and "reject-before-body" in self.path:
            self.challenge(drain=False)
            return False
        return super().handle_expect_100()

    def refuse_413(self):
        payload = b"too large\n"
        self.send_response(413)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.close_connection = True

    def challenge(self, drain=True):
        if drain:
            self.read_body()
        payload = b"who are you?\n"
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="sluice"')
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def read_body(self):
        digest = hashlib.sha256()
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        count = 0
        if chunked:
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                count += self.read_exactly(size, digest)
                self.rfile.readline()
        else:
            count = self.read_exactly(int(self.headers.get("Content-Length", "0")), digest)
        return count, digest.hexdigest(), chunked

    def read_exactly(self, remaining, digest):
        total = remaining
        while remaining:
            data = self.rfile.read(min(remaining, 1 << 20))
            if not data:
                raise ConnectionError("body ended early")
            digest.update(data)
            remaining -= len(data)
        return total

    def answer(self, status, extra_headers=(), gather=0):
        count, sha, chunked = self.read_body()
        if gather:
            with GATHERED:
                GATHER_COUNT[0] += 1
                GATHERED.notify_all()
                GATHERED.wait_for(lambda: GATHER_COUNT[0] >= gather, timeout=20)
        report = {
            "method": self.command,
            "path": self.path,
            "count": count,
            "sha256": sha,
            "chunked": chunked,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "peer": self.client_address[1],
        }
        payload = (json.dumps(report) + "\n").encode()
        self.send_response(status)
        for name, value in extra_headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def large(self, count, seed):
        self.read_body()
        def blocks():
            generator = random.Random(seed)
            remaining = count
            while remaining:
                # Whole 1 MiB blocks, the last one cut: a shorter body is a prefix of a longer one.
                block = generator.randbytes(1 << 20)[:remaining]
                remaining -= len(block)
                yield block

        # Generated twice (hash first, then send) so the server's memory stays small.
        digest = hashlib.sha256()
        for block in blocks():
            digest.update(block)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(count))
        self.send_header("X-Body-SHA256", digest.hexdigest())
        self.end_headers()
        for block in blocks():
            self.wfile.write(block)

    def route(self):
        try:
            self.dispatch()
        except (ConnectionError, ValueError):
            # The client broke off the body (the fault tests do it on purpose).
            self.close_connection = True

    def dispatch(self):
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path == "/early413":
            self.refuse_413()
        elif parts.path.startswith("/redirect307"):
            self.answer(307, [("Location", query.get("to", ["/sink"])[0])])
        elif parts.path.startswith("/redirect303"):
            self.answer(303, [("Location", query.get("to", ["/sink"])[0])])
        elif parts.path == "/auth":
            if self.headers.get("Authorization") == EXPECTED_AUTH:
                self.answer(200)
            else:
                self.challenge()
        elif parts.path == "/large":
            self.large(int(query.get("bytes", ["0"])[0]), int(query.get("seed", ["0"])[0]))
        elif parts.path == "/gather":
            self.answer(200, gather=int(query.get("n", ["1"])[0]))
        elif parts.path == "/slow":
            self.read_body()
            time.sleep(30)
        elif parts.path == "/hold":
            self.read_body()
            while self.rfile.read(1):
                pass
            self.close_connection = True
        else:
            self.answer(200)

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = route


def main():
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    server.daemon_threads = True
    serve(server)


if __name__ == "__main__":
    sys.exit(main())
