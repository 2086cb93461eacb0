#!/usr/bin/env python3
"""A stand-in S3 for multipart uploads whose parts are reset mid-body (Sluice's stream retry
tests). Prints its port on the first line of stdout, then serves until killed.

  POST /B/K?uploads              200, an UploadId
  PUT  /B/K?partNumber=N&...     the first --resets attempts of each part: read half the body,
                                 then reset the connection (RST); later attempts: read the
                                 whole aws-chunked body, decode it, answer 200 with an ETag
  POST /B/K?uploadId=U           200, an ETag "x-<parts listed>"
  GET  /stats                    {"parts": {N: sha256 of the decoded bytes}, "attempts": {N: count}}

Signatures are not checked (SeaweedFS does that in the other tests); the decoded bytes are.
"""
import hashlib
import json
import re
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from peer_serve import serve

LOCK = threading.Lock()
STATS = {"parts": {}, "attempts": {}}
RESETS = int(sys.argv[sys.argv.index("--resets") + 1]) if "--resets" in sys.argv else 1


def decode_aws_chunked(body):
    digest = hashlib.sha256()
    position = 0
    while True:
        end = body.index(b"\r\n", position)
        size = int(body[position:end].split(b";")[0], 16)
        position = end + 2
        if size == 0:
            return digest.hexdigest()
        digest.update(body[position:position + size])
        position += size + 2


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_GET(self):
        with LOCK:
            self.answer(200, json.dumps(STATS).encode())

    def do_POST(self):
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        body = self.body()
        if "uploads" in query:
            self.answer(200, b"<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>")
        else:
            parts = len(re.findall(rb"<Part>", body))
            self.answer(200, b"<CompleteMultipartUploadResult><ETag>\"x-%d\"</ETag></CompleteMultipartUploadResult>" % parts)

    def do_PUT(self):
        query = parse_qs(urlsplit(self.path).query)
        number = query.get("partNumber", ["1"])[0]
        with LOCK:
            attempt = STATS["attempts"].get(number, 0) + 1
            STATS["attempts"][number] = attempt
        length = int(self.headers.get("Content-Length", "0"))
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
        if attempt <= RESETS:
            self.rfile.read(length // 2)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return
        decoded = decode_aws_chunked(body)
        with LOCK:
            STATS["parts"][number] = decoded
        self.answer(200, headers=[("ETag", '"%s"' % decoded[:32])])


def main():
    serve(Server(("127.0.0.1", 0), Handler))


if __name__ == "__main__":
    sys.exit(main())
