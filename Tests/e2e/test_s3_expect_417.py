"""A 417 to `Expect: 100-continue` on an S3 part (issue 29, defect 9): `s3 cp` and `upload --parts`
on both transports, parts of 5-7 MiB, against SeaweedFS behind Tests/Peers/s3_proxy.py's
FaultProxy, whose `refuse_expect` answers a part that carries Expect as fault_server.py's
/expect-417 does (no 100 Continue, 256 KiB of body read, then 417). Objects read back by SHA-256.

What was found: libcurl sends the request again without Expect, the body rewound, when the server
drains the refused body; when it closes the connection, libcurl 7.88's second request carried only
the rest of the body, the server waited for the bytes that never came, and only the stall timeout
(60 s by default) ended that attempt, after which the part went again from its first byte (three
requests). The curl transport now starts a random-access body again at byte 0 on a 417, so that
second request is whole. URLSession sends a part held in memory
(`prefersContentLength`, up to 8 MiB) without `Expect: 100-continue` at all, so such a part never
meets the 417 and the final-response count of URLSessionAttempt is not reached."""

import json

import pytest

from conftest import checksum
from test_s3_cli import BUCKET, MIB, env, fault_proxy, key, object_sha256, s3, sluice, weed  # noqa: F401 (fixtures)
from test_s3_presigned_parts import no_credentials, write_json

SIZE = 2 * 7 * MIB + 12345      # three parts at 7 MiB (URLSession's default), four at 5 MiB


def send(env, transport, command, name, tmp_path, part_size):
    """Runs `s3 cp` or the presigned flow (presign, upload --parts, complete) for one object."""
    spec = "synthetic:%d:29" % SIZE
    common = ["--transport", transport, "--stall-timeout", "3", "--progress", "none"]
    if command == "s3 cp":
        return sluice(env, "s3", "cp", spec, "s3://%s/%s" % (BUCKET, name), "--part-size", part_size, *common,
                      timeout=180)
    status, out, err = sluice(env, "s3", "presign", "s3://%s/%s" % (BUCKET, name), "--multipart", "--size", str(SIZE),
                              "--part-size", part_size)
    assert status == 0, err
    plan = json.loads(out)
    plan_path = write_json(tmp_path / "plan.json", plan)
    status, out, err = sluice(no_credentials(env), "upload", "--parts", plan_path, spec, *common, timeout=180)
    if status != 0:
        return status, out, err
    etags = write_json(tmp_path / "etags.json", json.loads(out))
    return sluice(env, "s3", "complete", "s3://%s/%s" % (BUCKET, name), "--upload-id", plan["upload"]["uploadId"],
                  "--parts", etags)


@pytest.mark.parametrize("command", ["s3 cp", "upload --parts"])
@pytest.mark.parametrize("transport,part_size", [("curl", "5MiB"), ("urlsession", "7MiB")])
def test_a_417_drained_by_the_server_is_sent_again_without_expect(s3, fault_proxy, tmp_path, command, transport, part_size):
    proxy, env = fault_proxy
    proxy.refuse_expect(2, then="drain")
    name = key()
    status, _, err = send(env, transport, command, name, tmp_path, part_size)
    assert status == 0, err
    assert object_sha256(s3, name) == checksum("synthetic:%d:29" % SIZE)
    if transport == "curl":
        # The refused attempt and libcurl's own second request without Expect: no retry counted.
        assert proxy.refused_expectations == [2], proxy.refused_expectations
        assert proxy.attempts[2] == 2, proxy.attempts
    else:
        # A part held in memory goes without Expect: nothing to refuse, each part sent once.
        assert proxy.refused_expectations == [], proxy.refused_expectations
        assert set(proxy.attempts.values()) == {1}, proxy.attempts


@pytest.mark.parametrize("command", ["s3 cp", "upload --parts"])
def test_a_417_with_the_connection_closed_ends_in_the_part_sent_again(s3, fault_proxy, tmp_path, command):
    """libcurl's own second request (without Expect) carries the part from its first byte; or,
    when the send breaks on the closed connection before the 417 is read, the part is retried.
    Either way two requests for part 2 (before: three, the second one short and ended only by the
    stall timeout)."""
    proxy, env = fault_proxy
    proxy.refuse_expect(2, then="close")
    name = key()
    status, _, err = send(env, "curl", command, name, tmp_path, "5MiB")
    assert status == 0, err
    assert proxy.refused_expectations == [2], proxy.refused_expectations
    assert proxy.attempts[2] == 2, proxy.attempts
    assert object_sha256(s3, name) == checksum("synthetic:%d:29" % SIZE)
