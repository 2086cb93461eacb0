#!/usr/bin/env python3
"""An S3 endpoint that lists a synthetic prefix of any number of objects and takes uploads
into a sink: for measuring `s3 sync` (its memory and its speed) against a listing of a million
objects without a store that holds them.

The bucket (`--bucket`, default `bench`) holds N objects (`--objects`), none of them stored:
object i is `PREFIX + name(i)` (`--prefix`, default `sync/`; `name(i)` is `d%04d/f%07d`, a
directory of 1,000 objects per `d`, or `--per-directory`), `--size` bytes long (`content(i)`: deterministic bytes),
LastModified `--last-modified` (default 2020-01-01, after `OLD`, the modification time
`write_tree` gives its files) and ETag the MD5 of `content(i)`. The names have a fixed width,
so index order is S3's key order (and a file system's: the orders agree on them), and every
page is made from the indices alone: `bisect` finds where a prefix, a `start-after`, a
`continuation-token` (the next index) or a delimiter's next group starts, so a page costs the
same at object 10 as at object 999,000 and nothing grows with N.

`write_tree(root, count)` writes the files `0 .. count-1` as the listing shows them: a sync of
that tree to `s3://BUCKET/PREFIX` finds every file unchanged (same size, older than the
object) and, with `--delete`, every object from `count` on without a file.

Requests (path style, `http://127.0.0.1:PORT/BUCKET/KEY`):
- `GET /BUCKET?list-type=2` (ListObjectsV2: `prefix`, `delimiter`, `max-keys` up to 1,000,
  `start-after`, `continuation-token`, `encoding-type=url`), and `GET /BUCKET` without it
  (ListObjects v1: `marker`; the next marker is the last key, or `NextMarker` with a delimiter);
- `HEAD /BUCKET` and `GET /BUCKET?location`; `HEAD /BUCKET/KEY` (200 with its size for a listed
  key, 404 otherwise) and `GET /BUCKET/KEY` (its content);
- `PUT /BUCKET/KEY` (PutObject: the body read and dropped; the ETag is its MD5), multipart
  (`POST ?uploads`, `PUT ?partNumber&uploadId`, `POST ?uploadId`, `DELETE ?uploadId`),
  `POST /BUCKET?delete` (DeleteObjects: every key "deleted", nothing changes), `DELETE
  /BUCKET/KEY`: counted, the listing stays as it is;
- `GET /_stats`: the counts as JSON (`requests`, `list_pages`, `listed`, `heads`, `gets`, `puts`,
  `put_bytes`, `creates`, `parts`, `completes`, `delete_requests`, `deleted_keys`, ...);
  `POST /_stats/reset` sets them to 0 (neither of the two is counted).

Signatures (SigV4, header or presigned) are accepted without being checked, and so is any key
pair: this is a sink for measuring clients, not a check of them. A body is read as it says
(Content-Length, or chunked), which covers aws-chunked. Any other bucket is `NoSuchBucket`.

Usage: listing_server.py --objects 1000000 [--port 0] [--prefix sync/] [--bucket bench]
                         [--size 32] [--last-modified 2020-01-01T00:00:00.000Z] [--per-directory 1000]
The first line on stdout is the port it listens on. 127.0.0.1 only.
"""

import argparse
import bisect
import hashlib
import json
import os
import threading
import urllib.parse
import xml.etree.ElementTree as ElementTree
from datetime import datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from peer_serve import serve

# The modification time write_tree gives its files (2017-07-14): before the listing's LastModified.
OLD = 1_500_000_000
PER_DIRECTORY = 1000
PAGE_LIMIT = 1000
BODY_LIMIT = 1 << 30
XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"


def set_per_directory(count):
    """Sets how many objects (and files) each `d%04d` directory holds: 1,000 unless changed;
    10,000,000 puts them all in `d0000/` (the single-directory case of a sync benchmark)."""
    global PER_DIRECTORY
    if count < 1:
        raise ValueError("per-directory must be at least 1")
    PER_DIRECTORY = count


def name(index):
    """Object `index`'s key below the prefix (and its file's path below the tree's root)."""
    return "d%04d/f%07d" % (index // PER_DIRECTORY, index)


def content(index, size):
    """Object `index`'s bytes (and its file's): `size` bytes naming the index."""
    text = b"sluice listing object %07d\n" % index
    return (text * (size // len(text) + 1))[:size]


def write_tree(root, count, size=32, start=0):
    """Writes files `start .. count-1` as the listing shows them, each with mtime `OLD`."""
    made = set()
    for index in range(start, count):
        path = os.path.join(root, name(index))
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, content(index, size))
            os.utime(fd, (OLD, OLD))
        finally:
            os.close(fd)


def change_tree(root, indices):
    """Rewrites the files `indices` with one byte more and the time now: a sync sends them."""
    for index in indices:
        with open(os.path.join(root, name(index)), "ab") as handle:
            handle.write(b"+")


class Listing:
    """The bucket's N keys as a sorted sequence computed from the index (for `bisect`)."""

    def __init__(self, prefix, count, size, last_modified):
        self.prefix = prefix
        self.count = count
        self.size = size
        self.last_modified = last_modified

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return self.prefix + name(index)

    def first_at_or_after(self, key, lo=0):
        return bisect.bisect_left(self, key, lo)

    def first_after(self, key, lo=0):
        return bisect.bisect_right(self, key, lo)

    def index_of(self, key):
        index = self.first_at_or_after(key)
        return index if index < self.count and self[index] == key else None

    def page(self, prefix, delimiter, start, limit):
        """(contents: a range of indices, common prefixes [str], next index or None) from `start`."""
        end = self.first_at_or_after(prefix + "\U0010ffff")
        index = max(start, self.first_at_or_after(prefix))
        if not delimiter:
            stop = min(end, index + limit)
            return range(index, stop), [], (stop if stop < end else None)
        contents, prefixes = [], []
        while index < end and len(contents) + len(prefixes) < limit:
            key = self[index]
            rest = key[len(prefix):]
            cut = rest.find(delimiter)
            if cut >= 0:
                group = prefix + rest[:cut + len(delimiter)]
                prefixes.append(group)
                index = self.first_at_or_after(group + "\U0010ffff", index)
            else:
                contents.append(index)
                index += 1
        return contents, prefixes, (index if index < end else None)


class ETags:
    """Each object's MD5, computed a directory (1,000 objects) at a time when first asked for
    and kept as 16 bytes an object: 16 MB for a million, no Python object per key."""

    def __init__(self, count, size):
        self.size = size
        self.digests = bytearray(16 * count)
        self.done = bytearray((count + PER_DIRECTORY - 1) // PER_DIRECTORY)
        self.lock = threading.Lock()

    def hex(self, index):
        block = index // PER_DIRECTORY
        if not self.done[block]:
            with self.lock:
                if not self.done[block]:
                    first = block * PER_DIRECTORY
                    for item in range(first, min(first + PER_DIRECTORY, len(self.digests) // 16)):
                        self.digests[16 * item:16 * item + 16] = hashlib.md5(content(item, self.size)).digest()
                    self.done[block] = 1
        return self.digests[16 * index:16 * index + 16].hex()


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}

    def add(self, **amounts):
        with self.lock:
            for field, amount in amounts.items():
                self.counts[field] = self.counts.get(field, 0) + amount

    def snapshot(self):
        with self.lock:
            return dict(self.counts)

    def reset(self):
        with self.lock:
            self.counts = {}


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SluiceListing/1"

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    # --- plumbing ---

    def answer(self, status, body=b"", headers=(), content_type="application/xml"):
        self.send_response(status)
        if body or self.command != "HEAD":
            self.send_header("Content-Type", content_type)
        for field, value in headers:
            self.send_header(field, value)
        if self.command == "HEAD":
            if not any(field == "Content-Length" for field, _ in headers):
                self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, message):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>'
                % (code, escape(message))).encode()
        self.answer(status, body)

    def body(self, keep=False):
        """Reads the request's body up to BODY_LIMIT: (bytes or b"" unless keep, MD5 hex, length)."""
        digest, kept, length = hashlib.md5(), bytearray(), 0

        def take(count):
            nonlocal length
            while count > 0:
                block = self.rfile.read(min(count, 1 << 20))
                if not block:
                    raise ConnectionError("body ended early")
                digest.update(block)
                if keep:
                    kept.extend(block)
                length += len(block)
                count -= len(block)

        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                take(size)
                self.rfile.readline(8)
        else:
            count = int(self.headers.get("Content-Length") or 0)
            if count > BODY_LIMIT:
                raise ConnectionError("body of %d bytes: over the limit" % count)
            take(count)
        return bytes(kept), digest.hexdigest(), length

    def route(self):
        """(bucket, key, query dict) of the request; None after answering a bad bucket."""
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        path = urllib.parse.unquote(parsed.path)
        bucket, _, key = path.lstrip("/").partition("/")
        return bucket, key, query

    def known_bucket(self, bucket):
        if bucket == self.server.bucket:
            return True
        self.error(404, "NoSuchBucket", "The specified bucket does not exist")
        return False

    # --- verbs ---

    def do_GET(self):
        bucket, key, query = self.route()
        if bucket == "_stats":
            return self.answer(200, json.dumps(self.server.stats.snapshot()).encode(), content_type="application/json")
        self.server.stats.add(requests=1)
        if not self.known_bucket(bucket):
            return
        if not key and "location" in query:
            return self.answer(200, ('<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="%s"></LocationConstraint>'
                                     % XMLNS).encode())
        if not key:
            return self.list_objects(query)
        index = self.server.listing.index_of(key)
        self.server.stats.add(gets=1)
        if index is None:
            return self.error(404, "NoSuchKey", "The specified key does not exist.")
        self.answer(200, content(index, self.server.listing.size), self.object_headers(index), "application/octet-stream")

    def do_HEAD(self):
        self.server.stats.add(requests=1, heads=1)
        bucket, key, _ = self.route()
        if bucket != self.server.bucket:
            return self.answer(404)
        if not key:
            return self.answer(200)
        index = self.server.listing.index_of(key)
        if index is None:
            return self.answer(404)
        self.answer(200, headers=[("Content-Length", str(self.server.listing.size))] + self.object_headers(index),
                    content_type="application/octet-stream")

    def do_PUT(self):
        self.server.stats.add(requests=1)
        bucket, key, query = self.route()
        _, md5, length = self.body()
        if not self.known_bucket(bucket):
            return
        if "uploadId" in query:
            self.server.stats.add(parts=1, put_bytes=length)
        else:
            self.server.stats.add(puts=1, put_bytes=length)
        self.answer(200, headers=[("ETag", '"%s"' % md5)])

    def do_POST(self):
        bucket, key, query = self.route()
        if bucket == "_stats":
            self.body()
            self.server.stats.reset()
            return self.answer(200, b"{}", content_type="application/json")
        self.server.stats.add(requests=1)
        document, _, _ = self.body(keep="delete" in query)
        if not self.known_bucket(bucket):
            return
        if "delete" in query:
            return self.delete_objects(document)
        if "uploads" in query:
            self.server.stats.add(creates=1)
            return self.answer(200, ('<?xml version="1.0" encoding="UTF-8"?>\n<InitiateMultipartUploadResult xmlns="%s">'
                                     '<Bucket>%s</Bucket><Key>%s</Key><UploadId>listing-upload</UploadId>'
                                     '</InitiateMultipartUploadResult>' % (XMLNS, escape(bucket), escape(key))).encode())
        if "uploadId" in query:
            self.server.stats.add(completes=1)
            return self.answer(200, ('<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUploadResult xmlns="%s">'
                                     '<Location>/%s/%s</Location><Bucket>%s</Bucket><Key>%s</Key>'
                                     '<ETag>"00000000000000000000000000000000-1"</ETag></CompleteMultipartUploadResult>'
                                     % (XMLNS, escape(bucket), escape(key), escape(bucket), escape(key))).encode())
        self.error(400, "InvalidRequest", "not a request this server answers")

    def do_DELETE(self):
        self.server.stats.add(requests=1)
        bucket, key, query = self.route()
        self.body()
        if not self.known_bucket(bucket):
            return
        self.server.stats.add(**({"aborts": 1} if "uploadId" in query else {"delete_requests": 1, "deleted_keys": 1}))
        self.answer(204)

    # --- answers ---

    def object_headers(self, index):
        return [("ETag", self.server.etag(index)), ("Last-Modified", self.server.http_date)]

    def delete_objects(self, document):
        root = ElementTree.fromstring(document)
        keys = [element.text or "" for element in root.iter() if element.tag.endswith("Key")]
        quiet = any(element.tag.endswith("Quiet") and (element.text or "").strip().lower() == "true" for element in root.iter())
        self.server.stats.add(delete_requests=1, deleted_keys=len(keys))
        parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<DeleteResult xmlns="%s">' % XMLNS]
        if not quiet:
            parts += ["<Deleted><Key>%s</Key></Deleted>" % escape(key) for key in keys]
        parts.append("</DeleteResult>")
        self.answer(200, "".join(parts).encode())

    def list_objects(self, query):
        listing = self.server.listing
        version2 = query.get("list-type") == "2"
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter", "")
        encoded = query.get("encoding-type", "").lower() == "url"
        try:
            limit = max(0, min(PAGE_LIMIT, int(query.get("max-keys", PAGE_LIMIT))))
        except ValueError:
            return self.error(400, "InvalidArgument", "max-keys is not a number")
        start = 0
        if version2 and query.get("continuation-token"):
            try:
                start = int(query["continuation-token"])
            except ValueError:
                return self.error(400, "InvalidArgument", "The continuation token provided is incorrect")
        elif version2 and query.get("start-after"):
            start = listing.first_after(query["start-after"])
        elif not version2 and query.get("marker"):
            start = listing.first_after(query["marker"])
        marker = query.get("start-after" if version2 else "marker", "")
        if delimiter and marker.endswith(delimiter) and not query.get("continuation-token"):
            # A NextMarker that is a common prefix: the next page starts past its whole group.
            start = listing.first_at_or_after(marker + "\U0010ffff")
        contents, prefixes, following = listing.page(prefix, delimiter, start, limit)
        self.server.stats.add(list_pages=1, listed=len(contents))
        show = (lambda text: urllib.parse.quote(text, safe="/")) if encoded else escape
        out = ['<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="%s"><Name>%s</Name><Prefix>%s</Prefix>'
               % (XMLNS, escape(self.server.bucket), show(prefix))]
        if version2:
            out.append("<KeyCount>%d</KeyCount>" % (len(contents) + len(prefixes)))
            if query.get("continuation-token"):
                out.append("<ContinuationToken>%s</ContinuationToken>" % escape(query["continuation-token"]))
            if query.get("start-after"):
                out.append("<StartAfter>%s</StartAfter>" % show(query["start-after"]))
        else:
            out.append("<Marker>%s</Marker>" % show(query.get("marker", "")))
        out.append("<MaxKeys>%d</MaxKeys>" % limit)
        if delimiter:
            out.append("<Delimiter>%s</Delimiter>" % show(delimiter))
        if encoded:
            out.append("<EncodingType>url</EncodingType>")
        out.append("<IsTruncated>%s</IsTruncated>" % ("true" if following is not None else "false"))
        if following is not None:
            if version2:
                out.append("<NextContinuationToken>%d</NextContinuationToken>" % following)
            elif delimiter:
                last = max(([listing[contents[-1]]] if contents else []) + prefixes[-1:])
                out.append("<NextMarker>%s</NextMarker>" % show(last))
        # The keys need neither escaping nor URL-encoding: one format an object.
        item = ("<Contents><Key>%s%%s</Key><LastModified>%s</LastModified><ETag>&quot;%%s&quot;</ETag><Size>%d</Size>"
                "<StorageClass>STANDARD</StorageClass></Contents>" % (show(listing.prefix).replace("%", "%%"), listing.last_modified, listing.size))
        etags = self.server.etags
        out += [item % (name(index), etags.hex(index)) for index in contents]
        for group in prefixes:
            out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % show(group))
        out.append("</ListBucketResult>")
        self.answer(200, "".join(out).encode())


class ListingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, listing, bucket):
        super().__init__(address, Handler)
        self.listing = listing
        self.bucket = bucket
        self.stats = Stats()
        stamp = datetime.strptime(listing.last_modified.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
        self.http_date = formatdate(stamp, usegmt=True)
        self.etags = ETags(listing.count, listing.size)

    def etag(self, index):
        return '"%s"' % self.etags.hex(index)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prefix", default="sync/")
    parser.add_argument("--bucket", default="bench")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--last-modified", default="2020-01-01T00:00:00.000Z")
    parser.add_argument("--per-directory", type=int, default=PER_DIRECTORY,
                        help="objects per d%%04d directory (10000000: one directory of them all)")
    args = parser.parse_args()
    set_per_directory(args.per_directory)
    if not 0 <= args.objects <= 10_000_000:
        parser.error("--objects: 0 to 10,000,000")
    listing = Listing(args.prefix, args.objects, args.size, args.last_modified)
    serve(ListingServer(("127.0.0.1", args.port), listing, args.bucket))


if __name__ == "__main__":
    main()
