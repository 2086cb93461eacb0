#!/usr/bin/env python3
"""An HTTP/1.1 sink on the IPv6 loopback [::1] (port 0): every PUT/POST body (Content-Length or
chunked) is read and answered 200 with its byte count; GET /count answers the requests seen.
Prints the port on its first stdout line; exits 3 when the machine has no IPv6 loopback."""
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from peer_serve import serve

SEEN = {"requests": 0}
LOCK = threading.Lock()


class Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, text):
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        with LOCK:
            SEEN["requests"] += 1
        count = 0
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                count += len(self.rfile.read(size))
                self.rfile.read(2)
        else:
            count = len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.answer("%d\n" % count)

    do_POST = do_PUT

    def do_GET(self):
        with LOCK:
            self.answer("%d\n" % SEEN["requests"])


def main():
    try:
        server = Server(("::1", 0), Sink)
    except OSError:
        return 3
    serve(server)


if __name__ == "__main__":
    sys.exit(main())
