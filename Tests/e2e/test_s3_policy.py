"""`sluice s3 cp` where one policy decides (issue 17): a part refused with an S3 error is reported
once, from the server's typed fields (code, status, request id), with the hint that fits; against
SeaweedFS behind Tests/Peers/s3_proxy.py's FaultProxy."""

import os
import sys

import pytest

from conftest import REPO
from test_s3_cli import BUCKET, env, key, s3, sluice, uploads_of, weed  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy  # noqa: E402


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def through(proxy, env):
    return dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port)


def test_a_part_refused_with_an_s3_error_is_named_once_with_its_code_and_request(s3, weed, env):
    # Before: "UploadPart: part 3 (bytes ...) failed: part 3 (bytes ...) failed: 403 access denied (AccessDenied)".
    proxy = FaultProxy(weed[1])
    try:
        proxy.fail_part(3, 403, "AccessDenied", times=None)
        status, out, err = sluice(through(proxy, env), "s3", "cp", "synthetic:%d:5" % (16 << 20), "s3://%s/%s" % (BUCKET, key()),
                                  "--part-size", "5MiB", "--retries", "2", timeout=120)
    finally:
        proxy.close()
    assert status == 1 and out == "" and one_line(err), (status, err)
    assert "UploadPart of part 3 failed: 403 access denied (AccessDenied)" in err, err
    assert "[request fault]" in err, err
    assert err.count("failed") == 1 and err.count("part 3") == 1, err
    # Not transient: one attempt only.
    assert proxy.attempts.get(3) == 1, proxy.attempts


def test_a_part_refused_for_its_region_gets_the_region_hint(s3, weed, env):
    # Before: the S3 code was read from the first "( ... )" of the message (the part's byte
    # range), so the --region hint never fired for a multipart upload.
    proxy = FaultProxy(weed[1])
    try:
        proxy.fail_part(2, 400, "AuthorizationHeaderMalformed", times=None)
        status, out, err = sluice(through(proxy, env), "s3", "cp", "synthetic:%d:6" % (11 << 20), "s3://%s/%s" % (BUCKET, key()),
                                  "--part-size", "5MiB", timeout=120)
    finally:
        proxy.close()
    assert status == 1 and one_line(err), (status, err)
    assert "UploadPart of part 2 failed: 400 the bucket is in another region (AuthorizationHeaderMalformed)" in err, err
    assert "(--region)" in err, err


@pytest.mark.parametrize("host", ["127.1", "0x7f000001", "0177.0.0.1", "2130706433"])
def test_a_non_canonical_ipv4_endpoint_is_signed_as_sent(s3, weed, env, host):
    # Before: libcurl sent Host: 127.0.0.1:PORT while Sluice signed the host as written:
    # every request failed with SignatureDoesNotMatch, blaming the secret key.
    name = key()
    for spec, extra in [("synthetic:1000:7", []), ("synthetic:%d:7" % (6 << 20), ["--part-size", "5MiB"])]:
        status, out, err = sluice(env, "s3", "cp", spec, "s3://%s/%s" % (BUCKET, name), "--endpoint-url",
                                  "http://%s:%d" % (host, weed[1]), *extra, timeout=120)
        assert status == 0, err
        assert s3.head_object(Bucket=BUCKET, Key=name)["ContentLength"] == int(spec.split(":")[1]), spec
