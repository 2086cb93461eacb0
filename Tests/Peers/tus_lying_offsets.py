#!/usr/bin/env python3
"""A tus 1.0 server whose offsets lie, as two backends without shared storage do: every PATCH
body is read and answered 409 (offset mismatch), and HEAD answers an offset from a script.

    python3 tus_lying_offsets.py --offsets 0,1048576 [--cycle]

Prints "PORT <n>" once listening on 127.0.0.1. HEAD answers the listed offsets in turn; with
--cycle it starts the list again after its end (0, 1 MiB, 0, 1 MiB, ...), else it repeats the
last one. GET /stats answers {"patches": N, "heads": N, "patch_bytes": N}.
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from peer_serve import serve

LOCK = threading.Lock()
STATS = {"patches": 0, "heads": 0, "patch_bytes": 0}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--offsets", required=True)
    parser.add_argument("--cycle", action="store_true")
    arguments = parser.parse_args()
    offsets = [int(value) for value in arguments.offsets.split(",")]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, headers=(), body=b""):
            self.send_response(status)
            self.send_header("Tus-Resumable", "1.0.0")
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def drain(self):
            return len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def do_OPTIONS(self):
            self.answer(204, [("Tus-Version", "1.0.0"), ("Tus-Extension", "creation")])

        def do_POST(self):
            self.drain()
            self.answer(201, [("Location", "/files/lying")])

        def do_HEAD(self):
            with LOCK:
                index = STATS["heads"]
                STATS["heads"] += 1
            offset = offsets[index % len(offsets)] if arguments.cycle else offsets[min(index, len(offsets) - 1)]
            self.answer(200, [("Upload-Offset", str(offset)), ("Cache-Control", "no-store")])

        def do_PATCH(self):
            count = self.drain()
            with LOCK:
                STATS["patches"] += 1
                STATS["patch_bytes"] += count
            self.answer(409)

        def do_GET(self):
            with LOCK:
                body = json.dumps(STATS).encode()
            self.answer(200, [("Content-Type", "application/json")], body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    serve(server, "PORT %d")


if __name__ == "__main__":
    main()
