"""botocore's SigV4 signers as an independent reference for Sluice's signer.

    python3 sigv4_botocore.py CASES.json   ->   one JSON result per case, in order

Each case: {"kind": "header" | "presign", "rules": "s3" | "normalizing", "method", "url",
"params": [[name, value], ...] (decoded; botocore encodes them), "headers": [[name, value], ...],
"amz_date", "access_key", "secret_key", "token" (or null), "region", "service",
"payload" (the x-amz-content-sha256 value, S3 header signing), "expires" (presign)}.

Header signing goes through botocore's own SigV4Auth / S3SigV4Auth methods (canonical_request,
string_to_sign, signature, the Authorization header) with the date, token and payload headers
set the way add_auth sets them; presigning runs S3SigV4QueryAuth.add_auth at a fixed time.
"""
import datetime
import json
import sys
from unittest import mock

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def make_request(case):
    request = AWSRequest(method=case["method"], url=case["url"])
    for name, value in case.get("headers", []):
        request.headers[name] = value  # HTTPHeaders appends: repeated names stay repeated
    if case.get("params"):
        request.params = [tuple(pair) for pair in case["params"]]
    return request


def header_case(case):
    credentials = Credentials(case["access_key"], case["secret_key"], case.get("token"))
    auth_class = S3SigV4Auth if case["rules"] == "s3" else SigV4Auth
    auth = auth_class(credentials, case["service"], case["region"])
    request = make_request(case)
    request.context["timestamp"] = case["amz_date"]
    # What add_auth's _modify_request_before_signing does, without its payload heuristics.
    for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-SHA256"):
        if name in request.headers:
            del request.headers[name]
    request.headers["X-Amz-Date"] = case["amz_date"]
    if credentials.token:
        request.headers["X-Amz-Security-Token"] = credentials.token
    if case["rules"] == "s3":
        request.headers["X-Amz-Content-SHA256"] = case["payload"]
    canonical_request = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical_request)
    signature = auth.signature(string_to_sign, request)
    auth._inject_signature_to_request(request, signature)
    return {
        "canonical_request": canonical_request,
        "string_to_sign": string_to_sign,
        "authorization": request.headers["Authorization"],
    }


def presign_case(case):
    credentials = Credentials(case["access_key"], case["secret_key"], case.get("token"))
    auth = S3SigV4QueryAuth(credentials, case["service"], case["region"], expires=case["expires"])
    request = make_request(case)
    now = datetime.datetime.strptime(case["amz_date"], "%Y%m%dT%H%M%SZ")
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=now):
        auth.add_auth(request)
    return {"url": request.url}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        out.append(header_case(case) if case["kind"] == "header" else presign_case(case))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
