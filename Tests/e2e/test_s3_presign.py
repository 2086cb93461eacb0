"""`sluice s3 presign`: the URL is the one botocore's presigner makes for the same request at
the same second; bad input is one line and exit status 2."""

import datetime
import os
import subprocess
import urllib.parse
from unittest import mock

import botocore.auth
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import sluice_bin

ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_SESSION_TOKEN": "token/with+chars=",
    "AWS_REGION": "eu-central-1",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
    "HOME": "/nonexistent",
}


def sluice_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(ENV)
    env.update(extra or {})
    return env


def run_env(env, *args):
    proc = subprocess.run([sluice_bin(), *args], env=env, capture_output=True, timeout=60)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def botocore_presign(method, url, expires, amz_date, env):
    credentials = Credentials(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN"))
    auth = S3SigV4QueryAuth(credentials, "s3", env["AWS_REGION"], expires=expires)
    request = AWSRequest(method=method, url=url)
    now = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=now):
        auth.add_auth(request)
    return request.url


def test_presign_matches_botocore():
    for method, key, expires in [("GET", "plain.bin", None), ("PUT", "dir/a b/é+%//x", "600"), ("get", "k", "604800")]:
        args = ["s3", "presign", "s3://bucket-1/" + key]
        if expires:
            args += ["--expires", expires]
        if method != "GET":
            args += ["--method", method]
        status, out, err = run_env(sluice_env(), *args)
        assert status == 0, err
        url = out.strip()
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        base = "http://127.0.0.1:8333/bucket-1/" + urllib.parse.quote(key, safe="/~")
        expected = botocore_presign(method.upper(), base, int(expires or 3600), query["X-Amz-Date"], ENV)
        assert url == expected


def test_presign_endpoint_flag_wins():
    status, out, err = run_env(sluice_env({"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"}), "s3", "presign", "s3://bucket-1/k",
                               "--endpoint-url", "http://127.0.0.1:7777")
    assert status == 0, err
    assert out.startswith("http://127.0.0.1:7777/bucket-1/k?")


def test_presign_bad_input_is_one_line_and_status_2():
    no_credentials = sluice_env()
    del no_credentials["AWS_ACCESS_KEY_ID"]
    cases = [
        (no_credentials, ["s3", "presign", "s3://bucket-1/k"]),
        (sluice_env(), ["s3", "presign", "s3://bucket-1/k", "--expires", "0"]),
        (sluice_env(), ["s3", "presign", "s3://bucket-1/k", "--expires", "604801"]),
        (sluice_env(), ["s3", "presign", "s3://bucket-1/k", "--method", "DELETE"]),
        (sluice_env(), ["s3", "presign", "s3://bucket-1/"]),
        (sluice_env(), ["s3", "presign", "nope"]),
        (sluice_env(), ["s3", "presign"]),
        (sluice_env(), ["s3"]),
        (sluice_env(), ["s3", "frobnicate"]),
    ]
    for env, args in cases:
        status, out, err = run_env(env, *args)
        assert status == 2, (args, status, err)
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("sluice: "), (args, err)
