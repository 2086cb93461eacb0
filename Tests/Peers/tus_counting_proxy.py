#!/usr/bin/env python3
"""A TCP proxy for Sluice's tus tests that counts, at the network, the body bytes of every
request it forwards, and can hold an upload mid-body.

    python3 tus_counting_proxy.py --target 127.0.0.1:PORT [--hold-after BYTES]

Listens on 127.0.0.1 (an ephemeral port, printed as "PORT <n>" on stdout once listening) and
forwards every connection to the target. For each request (HTTP/1.1, Content-Length bodies)
it prints, when the request's body is complete or its connection ends mid-body:

    REQUEST {"method": ..., "path": ..., "offset": <Upload-Offset or null>,
             "length": <Content-Length>, "forwarded": <body bytes forwarded>, "complete": bool}

A chunked body is forwarded untouched and reported with "length": null and "forwarded": null.

--hold-after BYTES: once BYTES body bytes in total have been forwarded, the connection that
crossed the mark stops being read (the client stalls with its request cut mid-body), once;
"HELD <bytes>" is printed. The line "drop" on stdin then resets that connection on both sides
(RST), so the server sees the request cut. Every other connection is forwarded untouched.
"""

import argparse
import json
import selectors
import socket
import struct
import sys
import threading

lock = threading.Lock()
totals = {"forwarded": 0, "held": False}
drop = threading.Event()


def say(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def reset(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class Requests:
    """Follows the requests in the client's byte stream."""

    def __init__(self):
        self.head = b""
        self.current = None
        self.remaining = 0

    def feed(self, data):
        """Returns the number of body bytes in `data`."""
        body = 0
        while data:
            if self.current is None:
                self.head += data
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    return body
                head, data = self.head[:end].decode("latin-1"), self.head[end + 4:]
                self.head = b""
                lines = head.split("\r\n")
                method, path = (lines[0].split(" ") + ["", ""])[:2]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                offset = headers.get("upload-offset")
                chunked = "chunked" in headers.get("transfer-encoding", "").lower()
                length = None if chunked else int(headers.get("content-length", "0"))
                self.current = {"method": method, "path": path, "offset": int(offset) if offset else None,
                                "length": length, "forwarded": None if chunked else 0, "complete": False}
                self.remaining = length or 0
                if chunked:
                    # Not followed: report it and pass the rest of the connection through.
                    self.finish(True)
                    self.current = {"passthrough": True}
                    return body
                if self.remaining == 0:
                    self.finish(True)
            elif self.current.get("passthrough"):
                return body
            else:
                take = min(len(data), self.remaining)
                self.current["forwarded"] += take
                self.remaining -= take
                body += take
                data = data[take:]
                if self.remaining == 0:
                    self.finish(True)
        return body

    def finish(self, complete):
        if self.current is not None and not self.current.get("passthrough"):
            self.current["complete"] = complete
            say("REQUEST " + json.dumps(self.current))
        self.current = None


def relay(client, server, hold_after):
    requests = Requests()
    held = False
    selector = selectors.DefaultSelector()
    selector.register(client, selectors.EVENT_READ, server)
    selector.register(server, selectors.EVENT_READ, client)
    try:
        while True:
            if held and drop.is_set():
                return
            for key, _ in selector.select(timeout=0.1 if held else None):
                source, target = key.fileobj, key.data
                data = source.recv(65536)
                if not data:
                    return
                target.sendall(data)
                if source is client:
                    body = requests.feed(data)
                    with lock:
                        totals["forwarded"] += body
                        if hold_after is not None and not totals["held"] and totals["forwarded"] >= hold_after:
                            totals["held"] = held = True
                    if held:
                        selector.unregister(client)
                        say("HELD %d" % totals["forwarded"])
    except OSError:
        return
    finally:
        requests.finish(False)
        selector.close()
        reset(client)
        reset(server)


def commands():
    for line in sys.stdin:
        if line.strip() == "drop":
            drop.set()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--hold-after", type=int)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(target=commands, daemon=True).start()
    say("PORT %d" % listener.getsockname()[1])
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection((host, int(port)))
        except OSError:
            reset(client)
            continue
        threading.Thread(target=relay, args=(client, server, args.hold_after), daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
