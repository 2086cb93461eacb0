"""Reads an object back with boto3 and reports what is stored, for Sluice's S3 tests.

    python3 s3_object.py INPUT.json  ->  {"status": 200, "size": N, "sha256": hex, "content_encoding": ...}

INPUT: {"endpoint", "region", "access_key", "secret_key", "bucket", "key"}. A missing object gives
{"status": 404}. boto3 does not undo any Content-Encoding, so the bytes are the stored bytes.
With "prefix" instead of "key": {"objects": {key below the prefix: sha256, ...}} for every object
under the prefix (one process for a whole tree).
"""
import hashlib
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def client(spec):
    """A boto3 S3 client for the spec's endpoint, region and keys (path-style)."""
    return boto3.client(
        "s3", endpoint_url=spec["endpoint"], region_name=spec["region"],
        aws_access_key_id=spec["access_key"], aws_secret_access_key=spec["secret_key"],
        config=Config(retries={"max_attempts": 2}, s3={"addressing_style": "path"}))


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    s3 = client(spec)
    if "prefix" in spec:
        objects = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=spec["bucket"], Prefix=spec["prefix"]):
            for item in page.get("Contents", []):
                body = s3.get_object(Bucket=spec["bucket"], Key=item["Key"])["Body"]
                objects[item["Key"][len(spec["prefix"]):]] = hashlib.sha256(body.read()).hexdigest()
        json.dump({"objects": objects}, sys.stdout)
        return
    try:
        answer = s3.get_object(Bucket=spec["bucket"], Key=spec["key"])
    except ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        json.dump({"status": status, "code": error.response.get("Error", {}).get("Code")}, sys.stdout)
        return
    digest = hashlib.sha256()
    size = 0
    for chunk in answer["Body"].iter_chunks(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    json.dump({"status": 200, "size": size, "sha256": digest.hexdigest(),
               "content_encoding": answer.get("ContentEncoding")}, sys.stdout)


if __name__ == "__main__":
    main()
