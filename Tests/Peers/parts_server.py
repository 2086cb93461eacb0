#!/usr/bin/env python3
"""A loopback HTTP/1.1 server for parallel ranged uploads (Sluice's TransferEngine tests).

Prints its port on the first line of stdout, then serves until killed. Every PUT/POST body is
read in full and answered 200 with `ETag: "<sha256 of the body>"` and JSON (path, count,
sha256, peer port). With --close-after-response it closes every connection right after its
answer, without `Connection: close`: a keep-alive server that drops idle connections.

  /part/N...           read the body, answer 200
  /reset/N...          the first request for this path: read half the body, then reset the
                       connection (RST); later requests: as /part
  /fail/N...           read the body, answer 500 every time
  /flaky/N...          the first request for this path: read the body, answer 503; later
                       requests: as /part
  /hold/N...           read the body, hold the answer ?ms= milliseconds (default 1000), or
                       with ?until=K until K requests are held at once (a barrier, given up
                       after 60 s); the requests held at once are counted ("held",
                       "peak_held"), and the lag of an `X-Prepared-At` header (seconds since
                       the epoch) at arrival is kept ("peak_lag", seconds)
  Bodies may come with Content-Length or chunked (URLSession on Linux streams every body so).
  /stats               GET: {"connections": accepted sockets, "requests": answered bodies,
                       "attempts": {path: count}}
"""
import hashlib
import json
import socket
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from peer_serve import serve

LOCK = threading.Condition()
STATS = {"connections": 0, "requests": 0, "attempts": {}, "held": 0, "peak_held": 0, "peak_lag": 0.0}
CLOSE_AFTER_RESPONSE = "--close-after-response" in sys.argv


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def get_request(self):
        connection = super().get_request()
        with LOCK:
            STATS["connections"] += 1
        return connection


class Parts(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with LOCK:
            payload = (json.dumps(STATS) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_PUT(self):
        path = self.path.split("?")[0]
        with LOCK:
            attempt = STATS["attempts"].get(path, 0) + 1
            STATS["attempts"][path] = attempt
        length = int(self.headers.get("Content-Length", "0"))
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            length = None
        if path.startswith("/hold/"):
            self.hold(length)
            return
        if path.startswith("/reset/") and attempt == 1:
            if length is None:
                self.rfile.read(65536)
            else:
                self.read(length // 2, hashlib.sha256())
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        digest = hashlib.sha256()
        count = self.read(length, digest)
        if count is None:
            self.close_connection = True
            return
        with LOCK:
            STATS["requests"] += 1
        status = 500 if path.startswith("/fail/") else 200
        if path.startswith("/flaky/") and attempt == 1:
            status = 503
        payload = (json.dumps({"path": path, "count": count, "sha256": digest.hexdigest(),
                               "peer": self.client_address[1]}) + "\n").encode()
        self.send_response(status)
        self.send_header("ETag", '"%s"' % digest.hexdigest())
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        if CLOSE_AFTER_RESPONSE:
            self.close_connection = True

    do_POST = do_PUT

    def hold(self, length):
        prepared = self.headers.get("X-Prepared-At")
        with LOCK:
            if prepared:
                STATS["peak_lag"] = max(STATS["peak_lag"], time.time() - float(prepared))
            STATS["held"] += 1
            STATS["peak_held"] = max(STATS["peak_held"], STATS["held"])
            LOCK.notify_all()
        digest = hashlib.sha256()
        self.read(length, digest)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        if "until" in query:
            until = int(query["until"][0])
            with LOCK:
                LOCK.wait_for(lambda: STATS["peak_held"] >= until, timeout=60)
        else:
            time.sleep(int(query.get("ms", ["1000"])[0]) / 1000)
        with LOCK:
            STATS["held"] -= 1
            STATS["requests"] += 1
        self.send_response(200)
        self.send_header("ETag", '"%s"' % digest.hexdigest())
        self.send_header("Content-Length", "0")
        self.end_headers()

    def read(self, remaining, digest):
        """The body's byte count, None when it ended early; `remaining` None: chunked."""
        if remaining is None:
            return self.read_chunked(digest)
        count = self.read_length(remaining, digest)
        return count if count == remaining else None

    def read_chunked(self, digest):
        count = 0
        while True:
            line = self.rfile.readline(1024)
            if not line:
                return None
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return count
            if self.read_length(size, digest) != size:
                return None
            count += size
            self.rfile.readline(1024)

    def read_length(self, remaining, digest):
        count = 0
        while remaining:
            data = self.rfile.read(min(remaining, 1 << 20))
            if not data:
                break
            digest.update(data)
            count += len(data)
            remaining -= len(data)
        return count


def main():
    serve(Server(("127.0.0.1", 0), Parts))


if __name__ == "__main__":
    sys.exit(main())
