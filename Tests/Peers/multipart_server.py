#!/usr/bin/env python3
"""A loopback multipart/form-data sink for Sluice's tests.

Parses each POST body with python-multipart's streaming parser (PyPI package
`python-multipart`, import name `python_multipart`), hashes each part with SHA-256
as it streams (no part is held in memory), and answers JSON:

    {"bytes": BODY_BYTES,
     "parts": [{"name": ..., "filename": ..., "content_type": ...,
                "headers": [[NAME, VALUE], ...], "size": N, "sha256": HEX}, ...]}

`name` and `filename` are the Content-Disposition parameters as python-multipart
reads them (quotes removed, nothing percent-decoded), decoded as UTF-8; `null` when
absent. A body the parser rejects gets 400 and {"error": ...}.

Usage: multipart_server.py [--port N] [--host 127.0.0.1]
The first line on stdout is the port it listens on.
"""

import argparse
import hashlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import python_multipart
from python_multipart.multipart import parse_options_header

from peer_serve import serve

CHUNK = 1 << 20


def text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="backslashreplace")


class Part:
    def __init__(self) -> None:
        self.headers: list[list[str]] = []
        self.field = bytearray()
        self.value = bytearray()
        self.digest = hashlib.sha256()
        self.size = 0

    def finish(self) -> dict:
        name = filename = None
        content_type = None
        for field, value in self.headers:
            lowered = field.lower()
            if lowered == "content-disposition":
                # parse_options_header decodes as latin-1; re-encode to get the raw bytes.
                _, options = parse_options_header(value.encode("utf-8"))
                if b"name" in options:
                    name = text(options[b"name"])
                if b"filename" in options:
                    filename = text(options[b"filename"])
            elif lowered == "content-type":
                content_type = value
        return {
            "name": name,
            "filename": filename,
            "content_type": content_type,
            "headers": self.headers,
            "size": self.size,
            "sha256": self.digest.hexdigest(),
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - keep test output quiet
        pass

    def answer(self, status: int, document: dict) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body_chunks(self):
        """Yields the request body in pieces: Content-Length or chunked."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                size_line = self.rfile.readline(1024)
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = size
                while left:
                    data = self.rfile.read(min(left, CHUNK))
                    if not data:
                        raise ValueError("connection closed inside a chunk")
                    left -= len(data)
                    yield data
                self.rfile.readline(1024)
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                data = self.rfile.read(min(left, CHUNK))
                if not data:
                    raise ValueError(f"connection closed with {left} body bytes missing")
                left -= len(data)
                yield data

    def do_POST(self):  # noqa: N802 - http.server's naming
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
        content_type, options = parse_options_header(self.headers.get("Content-Type", ""))
        boundary = options.get(b"boundary")
        if content_type != b"multipart/form-data" or not boundary:
            self.answer(400, {"error": f"not multipart/form-data with a boundary: {self.headers.get('Content-Type')!r}"})
            return

        parts: list[dict] = []
        current: list[Part] = []

        def on_part_begin():
            current.append(Part())

        def on_header_field(data, start, end):
            current[-1].field += data[start:end]

        def on_header_value(data, start, end):
            current[-1].value += data[start:end]

        def on_header_end():
            part = current[-1]
            part.headers.append([text(bytes(part.field)), text(bytes(part.value))])
            part.field.clear()
            part.value.clear()

        def on_part_data(data, start, end):
            part = current[-1]
            part.digest.update(data[start:end])
            part.size += end - start

        def on_part_end():
            parts.append(current.pop().finish())

        parser = python_multipart.MultipartParser(
            boundary,
            callbacks={
                "on_part_begin": on_part_begin,
                "on_header_field": on_header_field,
                "on_header_value": on_header_value,
                "on_header_end": on_header_end,
                "on_part_data": on_part_data,
                "on_part_end": on_part_end,
            },
        )
        total = 0
        try:
            for chunk in self.body_chunks():
                total += len(chunk)
                parser.write(chunk)
            parser.finalize()
        except Exception as error:  # the parser's and the framing's errors alike
            self.close_connection = True
            self.answer(400, {"error": f"{type(error).__name__}: {error}", "bytes": total, "parts": parts})
            return
        self.answer(200, {"bytes": total, "parts": parts})

    do_PUT = do_POST


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    arguments.add_argument("--port", type=int, default=0)
    arguments.add_argument("--host", default="127.0.0.1")
    options = arguments.parse_args()
    server = ThreadingHTTPServer((options.host, options.port), Handler)
    server.daemon_threads = True
    serve(server)


if __name__ == "__main__":
    main()
