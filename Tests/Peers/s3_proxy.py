#!/usr/bin/env python3
"""Proxies on 127.0.0.1 for S3 tests. CountingProxy (TCP) counts the bytes clients send
upstream and can reset one connection in the middle of a request body; FaultProxy (HTTP,
below) injects S3 errors, resets and rewritten answers per part or action.

Used in-process by Tests/e2e/test_s3_cli.py:

    proxy = CountingProxy(upstream_port)        # listens on proxy.port
    proxy.reset_after(n)                         # the connection that carries byte n (of all
                                                 # client bytes from now on) is reset there, once
    proxy.client_bytes                           # bytes received from clients so far
    proxy.close()

It forwards bytes unchanged: SigV4 signs the Host header the client sent (the proxy's
address), and the server checks it against the same header, so signatures stay valid.
"""
import http.client
import socket
import struct
import threading
import urllib.parse


class _LoopbackProxy:
    """A listener on 127.0.0.1 (a free port) whose connections `_connected` serves; `close`
    closes it and every socket it tracks."""

    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.closed = False
        self.sockets = set()
        threading.Thread(target=self._accept, daemon=True).start()

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
            with self.lock:
                self.sockets.add(client)
            self._connected(client)


class CountingProxy(_LoopbackProxy):
    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self._client_bytes = 0
        self._reset_at = None
        self.resets = 0
        self.connections = 0
        super().__init__(upstream_port, upstream_host)

    @property
    def client_bytes(self):
        with self.lock:
            return self._client_bytes

    def reset_after(self, count):
        """Resets (RST) the connection carrying the count-th client byte from now on, once."""
        with self.lock:
            self._reset_at = self._client_bytes + count

    def _connected(self, client):
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        with self.lock:
            self.connections += 1
            self.sockets.add(server)
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


class FaultProxy(_LoopbackProxy):
    """An HTTP/1.1 proxy on 127.0.0.1 in front of an S3 server that reads each request whole
    and forwards it upstream (one keep-alive upstream connection per client connection), so
    that it can answer in the server's place, reset a connection in the middle of a body, or
    rewrite the server's answer. Request heads and bodies go upstream unchanged (the Host
    header included, so SigV4 signatures stay valid); `Expect: 100-continue` is answered here.

        proxy = FaultProxy(upstream_port)
        proxy.fail_part(3, 503, "SlowDown", times=1)    # part 3's first attempt gets a 503 SlowDown
        proxy.clear_failures()                          # no more of those
        proxy.reset_part(3, after=1 << 20, times=1)     # part 3's first attempt is reset after 1 MiB of body
        proxy.refuse_expect(2, then="drain", times=1)   # part 2's first attempt with Expect: 100-continue
                                                        # gets 417 after 256 KiB of body (as /expect-417)
        proxy.rewrite["complete"] = edit                # edit(status, headers, body) -> (status, headers, body)
        proxy.policy = require_sse_kms                  # policy(action, headers) -> None or (status, code, message)
        proxy.attempts                                  # {part number: requests that carried it}
        proxy.part_bytes                                # {part number: body bytes received}
        proxy.requests                                  # [(action, method, path)] in the order received

    Actions: "create", "part", "complete", "put", "abort", "list", "other".
    """

    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.attempts = {}
        self.part_bytes = {}
        self.actions = []
        self.requests = []
        self.injected = 0
        self.received = 0  # every byte read from the client: request lines, headers, bodies
        self.rewrite = {}
        self.policy = None
        self.refused = []
        self.refused_expectations = []
        self._failures = {}
        self._resets = {}
        self._expect_refusals = {}
        self._serving = 0
        self._idle = threading.Condition()
        super().__init__(upstream_port, upstream_host)

    def fail_part(self, number, status, code, times=1, message="injected by FaultProxy"):
        """Answers the next `times` attempts of part `number` with `status` and S3 error `code`
        and `message` (after reading the body, as S3 does); times=None: every attempt."""
        with self.lock:
            self._failures[number] = [status, code, message, times]

    def clear_failures(self):
        """Forgets every failure still to inject."""
        with self.lock:
            self._failures.clear()

    def reset_part(self, number, after, times=1):
        """Resets (RST) the next `times` attempts of part `number` after `after` body bytes."""
        with self.lock:
            self._resets[number] = [after, times]

    def refuse_expect(self, number, then="drain", after=256 << 10, times=1):
        """The next `times` attempts of part `number` that carry `Expect: 100-continue` get no
        `100 Continue`: `after` body bytes are read (the client sends them once its wait for the
        100 ends), then a 417 without `Connection: close`, as Tests/Peers/fault_server.py's
        /expect-417 answers. then="drain": the rest of the body is read and dropped and the
        connection kept (a keep-alive server); then="close": the connection is closed at once.
        An attempt without Expect (the client's second try) goes upstream as any other."""
        with self.lock:
            self._expect_refusals[number] = [then, after, times]

    def _connected(self, client):
        with self._idle:
            self._serving += 1
        threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def wait_idle(self, timeout=30):
        """Waits until every client connection has ended and its last request was logged (after
        a client is killed: what it had sent is in `actions` before anything that follows)."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._serving == 0, timeout):
                raise TimeoutError("FaultProxy: %d connections still open after %s s" % (self._serving, timeout))

    @staticmethod
    def _action(method, query):
        if method == "PUT" and "partNumber" in query:
            return "part"
        if method == "POST" and "uploads" in query:
            return "create"
        if method == "POST" and "uploadId" in query:
            return "complete"
        if method == "DELETE" and "uploadId" in query:
            return "abort"
        if method == "GET" and "uploadId" in query:
            return "list"
        if method == "PUT":
            return "put"
        return "other"

    @staticmethod
    def _take(rules, number):
        """The rule for part `number` if it still applies (and counts it), else None."""
        rule = rules.get(number)
        if rule is None or rule[-1] == 0:
            return None
        if rule[-1] is not None:
            rule[-1] -= 1
        return rule

    def _serve(self, client):
        rfile = client.makefile("rb")
        upstream = None
        try:
            while True:
                line = rfile.readline(65537)
                if not line:
                    return
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers = []
                while True:
                    header = rfile.readline(65537)
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, value = header.decode("latin-1").split(":", 1)
                    headers.append((name.strip(), value.strip()))
                self._count(None, len(line) + sum(len(n) + len(v) + 4 for n, v in headers) + 2)
                lowered = {name.lower(): value for name, value in headers}
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query, keep_blank_values=True)
                action = self._action(method, query)
                number = int(query["partNumber"][0]) if action == "part" else None
                with self.lock:
                    self.actions.append(action)
                    self.requests.append((action, method, urllib.parse.unquote(urllib.parse.urlsplit(target).path)))
                    if number is not None:
                        self.attempts[number] = self.attempts.get(number, 0) + 1
                    failure = self._take(self._failures, number) if number is not None else None
                    reset = self._take(self._resets, number) if number is not None else None
                    expects = lowered.get("expect", "").lower() == "100-continue"
                    refusal = self._take(self._expect_refusals, number) if number is not None and expects else None
                    if failure or reset or refusal:
                        self.injected += 1
                chunked = "chunked" in lowered.get("transfer-encoding", "").lower()
                length = int(lowered.get("content-length", "0") or 0)
                if refusal is not None:
                    then, after = refusal[0], refusal[1]
                    with self.lock:
                        self.refused_expectations.append(number)
                    taken = len(self._read_chunked(rfile, limit=after)) if chunked else len(rfile.read(min(after, length)))
                    self._count(number, taken)
                    client.sendall(b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n")
                    if then == "close":
                        return
                    rest = self._read_chunked(rfile) if chunked else rfile.read(max(0, length - taken))
                    self._count(number, len(rest))
                    continue
                if expects:
                    client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                if reset is not None:
                    body = rfile.read(min(reset[0], length))
                    self._count(number, len(body))
                    CountingProxy._rst(client)
                    return
                body = self._read_chunked(rfile) if chunked else rfile.read(length)
                self._count(number, len(body))
                if not chunked and len(body) < length:
                    return  # the client went mid-body (killed): nothing to forward or answer
                if failure is None and self.policy is not None:
                    failure = self.policy(action, lowered)
                    if failure is not None:
                        with self.lock:
                            self.refused.append(action)
                if failure is not None:
                    status, code, message = failure[0], failure[1], failure[2]
                    document = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s"
                                "</Message><RequestId>fault</RequestId></Error>" % (code, message)).encode()
                    self._answer(client, status, [("Content-Type", "application/xml")], document)
                    continue
                if upstream is None:
                    upstream = http.client.HTTPConnection(*self.upstream, timeout=120)
                upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    if name.lower() != "expect":
                        upstream.putheader(name, value)
                upstream.endheaders(body)
                response = upstream.getresponse()
                answer = response.read()
                status = response.status
                kept = [(name, value) for name, value in response.getheaders()
                        if name.lower() not in ("content-length", "transfer-encoding", "connection")]
                if response.will_close:
                    upstream.close()
                    upstream = None
                edit = self.rewrite.get(action)
                if edit is not None:
                    status, kept, answer = edit(status, kept, answer)
                # A HEAD answer's Content-Length is the object's, not its (empty) body's.
                length = int(response.getheader("Content-Length") or 0) if method == "HEAD" else None
                self._answer(client, status, kept, answer, length)
        except (OSError, ValueError):
            pass
        finally:
            if upstream is not None:
                upstream.close()
            try:
                client.close()
            except OSError:
                pass
            with self._idle:
                self._serving -= 1
                self._idle.notify_all()

    def _count(self, number, count):
        with self.lock:
            self.received += count
            if number is not None:
                self.part_bytes[number] = self.part_bytes.get(number, 0) + count

    @staticmethod
    def _read_chunked(rfile, limit=None):
        """A chunked body's raw bytes; with `limit`, at least that many (or all) of them."""
        raw = b""
        while limit is None or len(raw) < limit:
            size_line = rfile.readline(65537)
            raw += size_line
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:
                    trailer = rfile.readline(65537)
                    raw += trailer
                    if trailer in (b"\r\n", b"\n", b""):
                        return raw
            raw += rfile.read(size + 2)
        return raw

    @staticmethod
    def _answer(client, status, headers, body, length=None):
        reason = http.client.responses.get(status, "Status")
        head = "HTTP/1.1 %d %s\r\n" % (status, reason)
        head += "".join("%s: %s\r\n" % (name, value) for name, value in headers)
        head += "Content-Length: %d\r\n\r\n" % (len(body) if length is None else length)
        client.sendall(head.encode("latin-1") + body)


def require_sse_kms(action, headers):
    """A FaultProxy policy, as S3 enforces AWS's "deny unencrypted object uploads" bucket policy
    (Deny s3:PutObject when s3:x-amz-server-side-encryption is not aws:kms; moto 5.2 evaluates no
    condition of a bucket policy and denies every upload under it): a PutObject or
    CreateMultipartUpload without `x-amz-server-side-encryption: aws:kms` is answered 403
    AccessDenied; the parts and the completion of an upload created with it go through (S3 takes
    the encryption of the upload for them)."""
    if action in ("put", "create") and headers.get("x-amz-server-side-encryption") != "aws:kms":
        return 403, "AccessDenied", "Access Denied by the bucket policy: x-amz-server-side-encryption must be aws:kms"
    return None
