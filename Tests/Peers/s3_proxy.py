#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 for S3 tests: counts the bytes clients send upstream and can
reset one connection in the middle of a request body.

Used in-process by Tests/e2e/test_s3_cli.py:

    proxy = CountingProxy(upstream_port)        # listens on proxy.port
    proxy.reset_after(n)                         # the connection that carries byte n (of all
                                                 # client bytes from now on) is reset there, once
    proxy.client_bytes                           # bytes received from clients so far
    proxy.close()

It forwards bytes unchanged: SigV4 signs the Host header the client sent (the proxy's
address), and the server checks it against the same header, so signatures stay valid.
"""
import socket
import struct
import threading


class CountingProxy:
    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self._client_bytes = 0
        self._reset_at = None
        self.resets = 0
        self.connections = 0
        self.closed = False
        self.sockets = set()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def client_bytes(self):
        with self.lock:
            return self._client_bytes

    def reset_after(self, count):
        """Resets (RST) the connection carrying the count-th client byte from now on, once."""
        with self.lock:
            self._reset_at = self._client_bytes + count

    def close(self):
        self.closed = True
        try:
            self.listener.close()
        except OSError:
            pass
        with self.lock:
            sockets = list(self.sockets)
        for sock in sockets:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections += 1
                self.sockets.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    @staticmethod
    def _rst(sock):
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        except OSError:
            pass

    def _pump(self, source, target, upstream):
        try:
            while True:
                data = source.recv(1 << 20)
                if not data:
                    break
                if upstream:
                    with self.lock:
                        start = self._client_bytes
                        self._client_bytes += len(data)
                        cut = None
                        if self._reset_at is not None and start + len(data) >= self._reset_at:
                            cut = self._reset_at - start
                            self._reset_at = None
                            self.resets += 1
                    if cut is not None:
                        if cut > 0:
                            target.sendall(data[:cut])
                        self._rst(source)
                        self._rst(target)
                        return
                target.sendall(data)
        except OSError:
            pass
        finally:
            try:
                target.shutdown(socket.SHUT_WR)
            except OSError:
                pass
