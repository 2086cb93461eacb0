#!/usr/bin/env python3
"""The headers botocore's serializer (and its handlers: SSE-C key and MD5, conditions)
builds for S3 calls, for Sluice's S3ObjectOptionsTests. Nothing is sent: the request is
caught at `before-send`.

    python3 s3_headers_peer.py INPUT.json  ->  [{"header-name": "value", ...}, ...]

INPUT is a list of {"operation": "PutObject" | "CreateMultipartUpload" | "UploadPart" |
"CompleteMultipartUpload", "params": {...botocore parameters, Bucket and Key included...}};
"Expires" and "ObjectLockRetainUntilDate" are epoch seconds, "SSECustomerKey" is base64.
Signature, date, user-agent, length and checksum-negotiation headers are left out.
"""
import base64
import datetime
import json
import sys

import botocore.config
import botocore.session

LEFT_OUT = {"authorization", "x-amz-date", "user-agent", "x-amz-content-sha256", "content-length", "content-md5",
            "expect", "amz-sdk-invocation-id", "amz-sdk-request", "x-amz-sdk-checksum-algorithm", "transfer-encoding",
            "x-amz-decoded-content-length", "x-amz-trailer", "content-encoding-aws-chunked"}


class Caught(Exception):
    def __init__(self, headers):
        self.headers = headers


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    session = botocore.session.Session()
    config = botocore.config.Config(request_checksum_calculation="when_required", s3={"addressing_style": "path"})
    client = session.create_client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9", aws_access_key_id="AKID",
                                   aws_secret_access_key="SECRET", config=config)

    def catch(request, **_):
        raise Caught({name.lower(): (value.decode() if isinstance(value, bytes) else value) for name, value in request.headers.items()})

    client.meta.events.register("before-send.s3.*", catch)
    out = []
    for case in cases:
        params = dict(case["params"])
        for name in ("Expires", "ObjectLockRetainUntilDate"):
            if name in params:
                params[name] = datetime.datetime.fromtimestamp(params[name], tz=datetime.timezone.utc)
        if "SSECustomerKey" in params:
            params["SSECustomerKey"] = base64.b64decode(params["SSECustomerKey"])
        if case["operation"] in ("PutObject", "UploadPart"):
            params["Body"] = b""
        try:
            getattr(client, {"PutObject": "put_object", "CreateMultipartUpload": "create_multipart_upload",
                             "UploadPart": "upload_part", "CompleteMultipartUpload": "complete_multipart_upload"}[case["operation"]])(**params)
            out.append({"error": "not caught"})
        except Caught as caught:
            out.append({name: value for name, value in caught.headers.items() if name not in LEFT_OUT})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
