"""`sluice s3 sync` against a server that lies in its listing: each case ends in one `sluice: ...`
line and status 1, with nothing deleted — a listing that cannot be trusted must not make present
objects look like orphans. The server is a small one of this file's own: no real server sends
these answers."""

import http.server
import os
import subprocess
import threading
import urllib.parse

import pytest

from conftest import LocalServer, sluice_bin


def listing(keys, truncated=False, token=None, size="1"):
    items = "".join("<Contents><Key>%s</Key><LastModified>2030-01-01T00:00:00.000Z</LastModified>"
                    "<ETag>\"x\"</ETag><Size>%s</Size></Contents>" % (k, size) for k in keys)
    next_token = "<NextContinuationToken>%s</NextContinuationToken>" % token if token else ""
    return ('<?xml version="1.0"?><ListBucketResult><Name>bucket1</Name><Prefix>p/</Prefix>'
            "<KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>%s</IsTruncated>%s%s</ListBucketResult>"
            % (len(keys), "true" if truncated else "false", next_token, items)).encode()


# Each lie: (the answer to a ListObjectsV2 of p/, given its continuation token; what the line says).
LIES = {
    "not XML": (lambda token: b"<ListBucketResult><Contents><Key>p/a</Key>", "is not XML S3 sends"),
    "truncated without a token": (lambda token: listing(["p/a"], truncated=True), "has no NextContinuationToken"),
    "the same token again": (lambda token: listing(["p/a"] if token is None else ["p/b"], truncated=True, token="T"),
                             "do not advance"),
    "a new token, the same keys": (lambda token: listing(["p/a"], truncated=True, token=str(int(token or 0) + 1)),
                                   "is not in S3's key order"),
    "a key outside the prefix": (lambda token: listing(["other/x", "p/a"]), "not under the prefix"),
    "keys out of order": (lambda token: listing(["p/b", "p/a"]), "is not in S3's key order"),
    "a negative size": (lambda token: listing(["p/a"], size="-5"), "without a Key or Size"),
    "an endless answer": (None, "longer than 8 MiB"),
    "silence": (None, "timed out"),
}


class LyingLister:
    """Answers every ListObjectsV2 with `lie`; records every other request (a delete would be a
    POST ?delete, an upload a PUT)."""

    def __init__(self, lie):
        self.others = others = []
        self.stop = stop = threading.Event()
        answer, _ = LIES[lie]

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                if lie == "silence":
                    stop.wait(600)
                    return
                if lie == "an endless answer":
                    self.send_response(200)
                    self.send_header("Content-Length", str(1 << 34))
                    self.end_headers()
                    chunk = b"<!--" + b"x" * 65536
                    try:
                        while not stop.is_set():
                            self.wfile.write(chunk)
                    except OSError:
                        pass
                    return
                query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                body = answer(query.get("continuation-token", [None])[0])
                self.send_response(200)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def other(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                others.append((self.command, self.path))
                self.send_response(200)
                self.send_header("ETag", '"e"')
                self.send_header("Content-Length", "0")
                self.end_headers()
            do_PUT = do_POST = do_DELETE = do_HEAD = other

            def log_message(self, *args):
                pass
        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.stop.set()
        self.local.close()


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lying_listing_deletes_nothing_and_fails_in_one_line(tmp_path, lie):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"a")  # p/a: in every listing, so only a lie could make it look missing
    server = LyingLister(lie)
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    try:
        proc = subprocess.run([sluice_bin(), "s3", "sync", str(tree), "s3://bucket1/p/", "--endpoint-url", server.url,
                               "--delete", "--stall-timeout", "2", "--retries", "1"],
                              env=env, capture_output=True, text=True, timeout=300)
        status, out, err = proc.returncode, proc.stdout, proc.stderr
    finally:
        server.close()
    assert status == 1, (status, out, err)
    assert err.startswith("sluice: ") and err.count("\n") == 1, err
    assert LIES[lie][1] in err, err
    assert not any(method in ("POST", "DELETE") for method, _ in server.others), server.others
