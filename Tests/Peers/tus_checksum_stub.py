"""A small tus 1.0.0 server that checks Upload-Checksum (sha1), for Sluice's tests.

    python3 tus_checksum_stub.py --store DIR [--patch-statuses 460,423,500] [--max-size N]

Listens on 127.0.0.1 (an ephemeral port, printed as "PORT <n>" on stdout once listening).
Offers creation, termination and checksum (sha1). Uploads live under /files/<id>; the
bytes go to DIR/<id>. Every PATCH must carry Upload-Checksum; a wrong one gets 460.
--patch-statuses makes the first PATCH requests answer those statuses in order (after
reading and discarding their bodies), before PATCHes are handled normally. Every request
is logged as one JSON line to DIR/requests.log: method, path, Upload-Offset,
Upload-Checksum, Content-Length, status.
"""

import argparse
import base64
import hashlib
import json
import os
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from peer_serve import serve

lock = threading.Lock()
uploads = {}  # id -> {"length": int, "offset": int}
config = {"statuses": [], "store": ".", "max_size": 1 << 40}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log(self, status):
        entry = {
            "method": self.command,
            "path": self.path,
            "offset": self.headers.get("Upload-Offset"),
            "checksum": self.headers.get("Upload-Checksum"),
            "length": self.headers.get("Content-Length"),
            "status": status,
        }
        with lock, open(os.path.join(config["store"], "requests.log"), "a") as log:
            log.write(json.dumps(entry) + "\n")

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, status, headers=None):
        self.log(status)
        self.send_response(status)
        self.send_header("Tus-Resumable", "1.0.0")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def upload_id(self):
        parts = self.path.rstrip("/").split("/")
        return parts[-1] if len(parts) == 3 and parts[1] == "files" else None

    def do_OPTIONS(self):
        self.body()
        self.answer(204, {
            "Tus-Version": "1.0.0",
            "Tus-Extension": "creation,termination,checksum",
            "Tus-Checksum-Algorithm": "md5,sha1",
            "Tus-Max-Size": str(config["max_size"]),
        })

    def do_POST(self):
        self.body()
        if self.headers.get("Tus-Resumable") != "1.0.0":
            return self.answer(412, {"Tus-Version": "1.0.0"})
        ident = uuid.uuid4().hex
        with lock:
            uploads[ident] = {"length": int(self.headers["Upload-Length"]), "offset": 0}
        open(os.path.join(config["store"], ident), "wb").close()
        # A relative Location, to check that clients resolve it.
        self.answer(201, {"Location": f"/files/{ident}"})

    def do_HEAD(self):
        ident = self.upload_id()
        with lock:
            upload = uploads.get(ident)
        if upload is None:
            return self.answer(404)
        self.answer(200, {"Upload-Offset": str(upload["offset"]), "Upload-Length": str(upload["length"]),
                          "Cache-Control": "no-store"})

    def do_DELETE(self):
        self.body()
        ident = self.upload_id()
        with lock:
            upload = uploads.pop(ident, None)
        if upload is None:
            return self.answer(404)
        os.remove(os.path.join(config["store"], ident))
        self.answer(204)

    def do_PATCH(self):
        data = self.body()
        with lock:
            forced = config["statuses"].pop(0) if config["statuses"] else None
        if forced is not None:
            return self.answer(forced)
        ident = self.upload_id()
        with lock:
            upload = uploads.get(ident)
        if upload is None:
            return self.answer(404)
        if self.headers.get("Content-Type") != "application/offset+octet-stream":
            return self.answer(415)
        if int(self.headers.get("Upload-Offset", -1)) != upload["offset"]:
            return self.answer(409)
        checksum = self.headers.get("Upload-Checksum", "")
        algorithm, _, value = checksum.partition(" ")
        if algorithm != "sha1":
            return self.answer(400)
        if base64.b64encode(hashlib.sha1(data).digest()).decode() != value:
            return self.answer(460)
        with open(os.path.join(config["store"], ident), "ab") as out:
            out.write(data)
        with lock:
            upload["offset"] += len(data)
            offset = upload["offset"]
        self.answer(204, {"Upload-Offset": str(offset)})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--patch-statuses", default="")
    parser.add_argument("--max-size", type=int, default=1 << 40)
    args = parser.parse_args()
    config["store"] = args.store
    config["max_size"] = args.max_size
    config["statuses"] = [int(s) for s in args.patch_statuses.split(",") if s]
    os.makedirs(args.store, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    serve(server, "PORT %d")


if __name__ == "__main__":
    main()
