"""Presigned multipart uploads through the three commands: `sluice s3 presign --multipart` (the
side with credentials creates the upload and prints plan.json), `sluice upload --parts plan.json
SOURCE` (no credentials: every AWS_* variable is removed) and `sluice s3 complete`. Against
SeaweedFS (the fixtures of test_s3_cli.py; it checks SigV4 query signatures, expiry and part
checksums) and moto; objects read back with boto3. Presigned URLs sign `host`, so the byte counts
come from a proxy the plan is presigned for (Tests/Peers/s3_proxy.py)."""

import base64
import calendar
import hashlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import checksum, sluice_bin
from test_s3_cli import BUCKET, MIB, env, fault_proxy, key, moto_s3, object_sha256, s3, sluice, uploads_of, weed  # noqa: F401 (fixtures)


PART = 5 * MIB


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def no_credentials(env):
    """The client's environment: no AWS variable, a HOME without ~/.aws."""
    return {k: v for k, v in env.items() if not k.startswith("AWS_")}


def presign(env, name, size, *extra, bucket=BUCKET):
    status, out, err = sluice(env, "s3", "presign", "s3://%s/%s" % (bucket, name), "--multipart", "--size", str(size),
                              "--part-size", "5MiB", *extra)
    assert status == 0, err
    return json.loads(out)


def write_json(path, document):
    path.write_text(json.dumps(document))
    return str(path)


def upload_parts(env, plan_path, source, *extra):
    return sluice(no_credentials(env), "upload", "--parts", plan_path, source, "--progress", "none", *extra, timeout=180)


def complete(env, name, upload_id, etags_path, *extra, bucket=BUCKET):
    return sluice(env, "s3", "complete", "s3://%s/%s" % (bucket, name), "--upload-id", upload_id, "--parts", etags_path, *extra)


def held_parts(client, name, upload_id, bucket=BUCKET):
    return client.list_parts(Bucket=bucket, Key=name, UploadId=upload_id).get("Parts", [])


def absent(client, name, bucket=BUCKET):
    try:
        client.head_object(Bucket=bucket, Key=name)
        return False
    except client.exceptions.ClientError as error:
        return error.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound")


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
def test_the_three_commands_against_seaweedfs(s3, env, tmp_path, transport):
    name = key()
    spec = "synthetic:%d:41" % (3 * PART + 12345)
    plan = presign(env, name, 3 * PART + 12345)
    assert [p["length"] for p in plan["parts"]] == [PART, PART, PART, 12345]
    upload_id = plan["upload"]["uploadId"]
    plan_path = write_json(tmp_path / "plan.json", plan)
    status, out, err = upload_parts(env, plan_path, spec, "--transport", transport)
    assert status == 0 and one_line(err), err
    etags = json.loads(out)
    assert [p["partNumber"] for p in etags["parts"]] == [1, 2, 3, 4]
    assert all(p["checksum"] and p["eTag"] for p in etags["parts"])
    status, out, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", etags), "--plan", plan_path)
    assert status == 0 and one_line(err), err
    assert out == "s3://%s/%s\n" % (BUCKET, name)
    # SeaweedFS returns the composite CRC32C of the parts; sluice checked it against the list.
    assert "in 4 parts" in err and "checksum CRC32C " in err and "-4 verified" in err, err
    assert object_sha256(s3, name) == checksum(spec)
    assert uploads_of(s3, name) == []


def test_the_three_commands_against_moto(moto_s3, env, tmp_path):
    url, client = moto_s3
    env = dict(env, AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="AKIDMOTO", AWS_SECRET_ACCESS_KEY="moto")
    client.create_bucket(Bucket="presigned")
    name = "a/b/" + key()
    spec = "synthetic:%d:42" % (2 * PART + 7)
    plan = presign(env, name, 2 * PART + 7, bucket="presigned")
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", plan), spec)
    assert status == 0 and one_line(err), err
    status, _, err = complete(env, name, plan["upload"]["uploadId"], write_json(tmp_path / "etags.json", json.loads(out)),
                              bucket="presigned")
    assert status == 0 and one_line(err), err
    # moto returns no checksums (so none is claimed as verified) but the multipart ETag's part count.
    assert "in 3 parts" in err and '-3"' in err and "verified" not in err, err
    body = client.get_object(Bucket="presigned", Key=name)["Body"].read()
    assert (hashlib.sha256(body).hexdigest(), len(body)) == checksum(spec)


def test_kill_9_then_the_same_command_sends_only_the_parts_not_accepted(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    name = key()
    size = 5 * PART + 999
    spec = "synthetic:%d:43" % size
    plan = presign(env, name, size)
    plan_path = write_json(tmp_path / "plan.json", plan)
    upload_id = plan["upload"]["uploadId"]
    # Parts 4 to 6 are refused (503 SlowDown) for as long as the first run lives, so that it is
    # killed with exactly parts 1 to 3 accepted.
    for number in (4, 5, 6):
        proxy.fail_part(number, 503, "SlowDown", times=None)
    client_env = no_credentials(env)
    state = os.path.join(env["XDG_CACHE_HOME"], "sluice", "s3-presigned")
    proc = subprocess.Popen([sluice_bin(), "upload", "--parts", plan_path, spec, "--retries", "1000", "--concurrency", "3",
                             "--progress", "none"], env=client_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60

        def recorded():
            for path in (os.listdir(state) if os.path.isdir(state) else []):
                if path.endswith(".journal"):
                    # A header line naming the upload, then a line per accepted part (a last
                    # line without its newline is being written).
                    with open(os.path.join(state, path)) as handle:
                        lines = handle.read().split("\n")[1:-1]
                    return sorted(json.loads(line)["partNumber"] for line in lines)
            return []
        while (recorded() != [1, 2, 3] or not all(proxy.attempts.get(n, 0) >= 1 for n in (4, 5, 6))) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recorded() == [1, 2, 3], (recorded(), proxy.attempts)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert sorted(p["PartNumber"] for p in held_parts(s3, name, upload_id)) == [1, 2, 3]
    proxy.clear_failures()
    attempts_before = dict(proxy.attempts)
    bytes_before = dict(proxy.part_bytes)
    status, out, err = upload_parts(env, plan_path, spec)
    assert status == 0 and one_line(err), err
    assert "sent 3 of 6 parts" in err and "3 accepted before" in err, err
    # The rerun sent parts 4, 5 and 6 once each, whole, and nothing of parts 1 to 3.
    for number in (1, 2, 3):
        assert proxy.attempts[number] == attempts_before[number], (number, proxy.attempts)
    sent = {n: proxy.part_bytes[n] - bytes_before.get(n, 0) for n in (4, 5, 6)}
    assert sent == {4: PART, 5: PART, 6: 999}, sent
    status, _, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", json.loads(out)))
    assert status == 0 and "verified" in err, err
    assert object_sha256(s3, name) == checksum(spec)


@pytest.mark.parametrize("fault", ["503 SlowDown", "500 InternalError", "reset"])
def test_a_failed_part_is_retried_alone_from_its_first_byte(s3, fault_proxy, tmp_path, fault):
    proxy, env = fault_proxy
    name = key()
    size = 3 * PART + 5
    spec = "synthetic:%d:46" % size
    plan = presign(env, name, size)
    if fault == "reset":
        proxy.reset_part(2, after=MIB, times=1)
    else:
        status, code = fault.split()
        proxy.fail_part(2, int(status), code, times=1)
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", plan), spec)
    assert status == 0 and one_line(err), err
    assert ", 1 retries" in err, err
    assert proxy.attempts == {1: 1, 2: 2, 3: 1, 4: 1}, proxy.attempts
    # Part 2 went twice (whole the second time); the others once.
    assert proxy.part_bytes[2] == (MIB if fault == "reset" else PART) + PART, proxy.part_bytes
    status, _, err = complete(env, name, plan["upload"]["uploadId"], write_json(tmp_path / "etags.json", json.loads(out)))
    assert status == 0, err
    assert object_sha256(s3, name) == checksum(spec)


def test_a_url_s3_calls_expired_is_asked_for_again_once(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    name = key()
    spec = "synthetic:%d:44" % (PART + 10)
    plan = presign(env, name, PART + 10)
    plan_path = write_json(tmp_path / "plan.json", plan)
    # S3's answer to a URL past its expiry: a plan's URL cannot be renewed, so the part is sent
    # to the same URL again, once.
    proxy.fail_part(2, 403, "AccessDenied", times=1, message="Request has expired")
    status, out, err = upload_parts(env, plan_path, spec)
    assert status == 0 and one_line(err), err
    assert "1 expired URLs asked for again" in err, err
    assert proxy.attempts[2] == 2
    status, _, err = complete(env, name, plan["upload"]["uploadId"], write_json(tmp_path / "etags.json", json.loads(out)))
    assert status == 0, err
    assert object_sha256(s3, name) == checksum(spec)

    other = key()
    plan = presign(env, other, PART + 10)
    proxy.fail_part(2, 403, "AccessDenied", times=2, message="Request has expired")
    status, out, err = upload_parts(env, write_json(tmp_path / "plan2.json", plan), spec)
    assert status == 1 and out == "" and one_line(err), err
    assert "part 2 expired" in err and "asked for again had expired too" in err, err
    assert proxy.attempts[2] == 4
    assert absent(s3, other)


def test_an_expired_plan_is_refused_before_any_byte(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    name = key()
    plan = presign(env, name, PART + 1, "--expires", "1")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(plan["parts"][0]["url"]).query))
    signed = calendar.timegm(time.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))
    while time.time() < signed + 2:   # the clock is the gate: the URLs are valid for 1 s
        time.sleep(0.1)
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", plan), "synthetic:%d" % (PART + 1))
    assert status == 1 and out == "" and one_line(err), err
    assert "the plan's URLs expired at" in err and "nothing was sent" in err and "--upload-id " + plan["upload"]["uploadId"] in err, err
    assert proxy.attempts == {}
    # The backend presigns the same upload again; the client then sends it.
    status, out, err = sluice(env, "s3", "presign", "s3://%s/%s" % (BUCKET, name), "--multipart", "--size", str(PART + 1),
                              "--part-size", "5MiB", "--upload-id", plan["upload"]["uploadId"])
    assert status == 0, err
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", json.loads(out)), "synthetic:%d" % (PART + 1))
    assert status == 0, err


def test_bad_plans_and_sources_end_in_one_line_and_nothing_is_completed(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    name, other = key(), key()
    size = 2 * PART + 3
    spec = "synthetic:%d:45" % size
    plan = presign(env, name, size)
    upload_id = plan["upload"]["uploadId"]
    # The same upload id presigned for another key: what a mixed-up backend could hand out.
    status, out, err = sluice(env, "s3", "presign", "s3://%s/%s" % (BUCKET, other), "--multipart", "--size", str(size),
                              "--part-size", "5MiB", "--upload-id", upload_id)
    assert status == 0, err
    for_other = json.loads(out)

    def edited(change):
        document = json.loads(json.dumps(plan))
        change(document)
        return write_json(tmp_path / ("edited-%s.json" % change.__name__), document)

    def swap_url(document):
        document["parts"][1]["url"] = for_other["parts"][1]["url"]

    def edit_length(document):
        document["parts"][2]["length"] += 1

    def edit_part_number(document):
        document["parts"][0]["url"] = document["parts"][0]["url"].replace("partNumber=1", "partNumber=2")

    def edit_size(document):
        document["upload"]["size"] += PART

    refused_before_sending = [
        (edited(swap_url), spec, 2, "has a URL for part 2 to "),
        (edited(edit_length), spec, 2, "has part 3 at bytes 10485760+4"),
        (edited(edit_part_number), spec, 2, "has a URL for part 1 that is not UploadPart of part 1"),
        (edited(edit_size), spec, 2, "lists 3 parts"),
        (write_json(tmp_path / "plan.json", plan), "synthetic:%d:45" % (size - 1), 1,
         "the source has 10485762 bytes; the plan for s3://%s/%s is for 10485763 bytes" % (BUCKET, name)),
        (write_json(tmp_path / "plan.json", plan), "synthetic:%d:45" % (size + 1), 1, "the source has 10485764 bytes"),
    ]
    for plan_path, source, expected, reason in refused_before_sending:
        status, out, err = upload_parts(env, plan_path, source)
        assert status == expected and out == "" and one_line(err), (reason, err)
        assert reason in err, (reason, err)
    assert proxy.attempts == {}, "nothing was sent"

    # A whole plan for the other key with this upload id reaches the server, which refuses it.
    status, out, err = upload_parts(env, write_json(tmp_path / "other.json", for_other), spec)
    assert status == 1 and out == "" and one_line(err), err
    assert "404" in err and "NoSuchUpload" in err, err
    # A signature edited by hand: refused by the server.
    def edit_signature(document):
        document["parts"][0]["url"] = document["parts"][0]["url"][:-4] + "0000"
    status, out, err = upload_parts(env, edited(edit_signature), spec)
    assert status == 1 and out == "" and one_line(err), err
    assert "403" in err and "SignatureDoesNotMatch" in err, err
    assert absent(s3, name) and absent(s3, other)

    # The parts list: only the one for this plan and upload completes.
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", plan), spec)
    assert status == 0, err
    etags = json.loads(out)
    short = dict(etags, parts=etags["parts"][:-1])
    wrong_etag = json.loads(out)
    wrong_etag["parts"][0]["eTag"] = '"00000000000000000000000000000000"'
    wrong_size = json.loads(out)
    wrong_size["upload"]["size"] += 1
    for document, args, reason in [
        (short, [], "are numbered 1, 2; the plan has parts 1 ... 3"),
        (wrong_etag, [], "give part 1 the ETag"),
        (wrong_size, [], "include part 3 of 3 bytes; the plan gives it 4"),
        (wrong_size, ["--plan", str(tmp_path / "plan.json")], "is for upload %s of s3://%s/%s (10485764 bytes" % (upload_id, BUCKET, name)),
        (etags, ["--upload-id", "another"], "not another of"),
    ]:
        status, out, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", document), *args)
        assert status == 1 and out == "" and one_line(err), (reason, err)
        assert reason in err and "nothing was completed" in err, (reason, err)
        assert absent(s3, name)
    status, _, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", etags))
    assert status == 0, err
    assert object_sha256(s3, name) == checksum(spec)


def edit_listed_parts(edit):
    """A FaultProxy rewrite of ListParts answers: edit(the <Part> elements) -> the elements."""
    def rewrite(status, headers, body):
        text = body.decode()
        parts = re.findall(r"<Part>.*?</Part>", text, flags=re.S)
        if not parts:
            return status, headers, body
        start, end = text.index(parts[0]), text.rindex(parts[-1]) + len(parts[-1])
        return status, headers, (text[:start] + "".join(edit(parts)) + text[end:]).encode()
    return rewrite


def new_upload(env, size, seed):
    """(key, source spec, plan, upload id) of a new presigned upload of synthetic:SIZE:SEED."""
    name = key()
    plan = presign(env, name, size)
    return name, "synthetic:%d:%d" % (size, seed), plan, plan["upload"]["uploadId"]


def test_complete_takes_the_latest_entry_of_a_part_sent_twice(s3, fault_proxy, tmp_path):
    """A part sent again (a rerun after kill -9 that had cut it short) is listed by SeaweedFS
    once for each send, in no order. S3 keeps the last one sent; so does s3 complete, which
    here sees the older entry listed last (before: it took that one and refused)."""
    proxy, env = fault_proxy
    name, spec, plan, upload_id = new_upload(env, 2 * PART + 7, 47)
    # An earlier send of part 2 with other bytes, through its presigned URL (it signs only host).
    url = plan["parts"][1]["url"]
    request = urllib.request.Request(url, data=b"\0" * PART, method="PUT")
    with urllib.request.urlopen(request, timeout=60) as answer:
        older = answer.headers["ETag"].strip('"')
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", plan), spec)
    assert status == 0, err
    assert [p["PartNumber"] for p in held_parts(s3, name, upload_id)].count(2) == 2, "SeaweedFS lists part 2 twice"

    proxy.rewrite["list"] = edit_listed_parts(lambda parts: sorted(parts, key=lambda part: older in part))
    status, out, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", json.loads(out)))
    assert status == 0 and one_line(err) and "verified" in err, err
    assert object_sha256(s3, name) == checksum(spec)


def test_complete_checks_the_part_checksums_before_it_completes(s3, fault_proxy, tmp_path):
    """Where ListParts gives a part's checksum it must be the one reported, and every reported
    checksum must be one, before CompleteMultipartUpload (before: a listed checksum was not
    looked at, and a reported one that does not parse left the composite check with nothing
    to compare after Complete)."""
    proxy, env = fault_proxy
    name, spec, plan, upload_id = new_upload(env, 2 * PART + 9, 48)
    status, out, err = upload_parts(env, write_json(tmp_path / "plan.json", plan), spec)
    assert status == 0, err
    etags = json.loads(out)

    proxy.rewrite["list"] = edit_listed_parts(lambda parts: [
        part.replace("</Part>", "<ChecksumCRC32C>AAAAAA==</ChecksumCRC32C></Part>") if "<PartNumber>2</PartNumber>" in part
        else part for part in parts])
    status, out, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", etags))
    assert status == 1 and out == "" and one_line(err), err
    assert "give part 2 the CRC32C checksum %s; the server holds AAAAAA==" % etags["parts"][1]["checksum"] in err, err
    assert "nothing was completed" in err, err
    del proxy.rewrite["list"]
    malformed = json.loads(json.dumps(etags))
    malformed["parts"][0]["checksum"] = "not a checksum"
    status, out, err = complete(env, name, upload_id, write_json(tmp_path / "malformed.json", malformed))
    assert status == 1 and out == "" and one_line(err), err
    assert "give part 1 the CRC32C checksum \"not a checksum\", which is not one" in err, err
    assert "complete" not in proxy.actions and absent(s3, name), proxy.actions
    status, out, err = complete(env, name, upload_id, write_json(tmp_path / "etags.json", etags))
    assert status == 0 and "verified" in err, err
    assert object_sha256(s3, name) == checksum(spec)


# --- Object options in the plan: SSE-C per part, checksum choice and type, attributes ---


def test_sse_c_and_object_options_go_into_the_plan_and_upload_parts_sends_them(s3, env, tmp_path):
    name = key().replace(".bin", ".json")
    size = 2 * PART + 77
    spec = "synthetic:%d:44" % size
    key_bytes = os.urandom(32)
    key_file = tmp_path / "key"
    key_file.write_bytes(key_bytes)
    plan = presign(env, name, size, "--sse-c", "AES256", "--sse-c-key-file", str(key_file), "--checksum", "crc64nvme",
                   "--tag", "team=data", "--cache-control", "max-age=5", "--metadata", "owner=ops")
    text = json.dumps(plan)
    secret = base64.b64encode(key_bytes).decode()
    assert secret not in text and key_bytes.hex() not in text
    md5 = base64.b64encode(hashlib.md5(key_bytes).digest()).decode()
    assert plan["upload"]["sseCustomerKeyMD5"] == md5 and plan["upload"]["checksumAlgorithm"] == "CRC64NVME"
    for part in plan["parts"]:
        # The headers each part carries, signed into its URL: all but the key itself.
        assert part["headers"] == {"x-amz-server-side-encryption-customer-algorithm": "AES256",
                                   "x-amz-server-side-encryption-customer-key-MD5": md5}, part["headers"]
        assert "x-amz-server-side-encryption-customer-key" in part["url"]  # in X-Amz-SignedHeaders
    plan_path = write_json(tmp_path / "plan.json", plan)
    # Without the key, or with another, nothing is sent: exit 2 before any byte.
    other = tmp_path / "other"
    other.write_bytes(os.urandom(32))
    for extra, words in [([], "need the key"), (["--sse-c-key-file", str(other)], "not the one of the plan")]:
        status, out, err = upload_parts(env, plan_path, spec, *extra)
        assert status == 2 and one_line(err) and words in err, err
    assert held_parts(s3, name, plan["upload"]["uploadId"]) == []
    status, out, err = upload_parts(env, plan_path, spec, "--sse-c-key-file", str(key_file))
    assert status == 0 and one_line(err), err
    assert secret not in out + err
    etags_path = write_json(tmp_path / "etags.json", json.loads(out))
    status, out, err = complete(env, name, plan["upload"]["uploadId"], etags_path, "--plan", plan_path)
    assert status == 0 and one_line(err), err
    sse = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key_bytes}
    head = s3.head_object(Bucket=BUCKET, Key=name, ChecksumMode="ENABLED", **sse)
    assert head["ContentType"] == "application/json"  # guessed from the key's name
    assert head["CacheControl"] == "max-age=5" and head["Metadata"] == {"owner": "ops"}
    assert {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=BUCKET, Key=name)["TagSet"]} == {"team": "data"}
    # The full-object CRC64NVME of the parts combined: the source's own.
    status, out, err = sluice(env, "checksum", "--algorithm", "crc64nvme", spec)
    assert status == 0 and out.split() == [head["ChecksumCRC64NVME"], str(size)], (out, head)
    body = s3.get_object(Bucket=BUCKET, Key=name, **sse)["Body"].read()
    assert (hashlib.sha256(body).hexdigest(), len(body)) == checksum(spec)
    with pytest.raises(Exception):
        s3.get_object(Bucket=BUCKET, Key=name)


def test_an_explicit_checksum_type_is_stored_in_the_plan(s3, env, tmp_path):
    name = key()
    size = 2 * PART + 5
    spec = "synthetic:%d:45" % size
    plan = presign(env, name, size, "--checksum", "crc32c", "--checksum-type", "full-object")
    assert plan["upload"]["checksumType"] == "FULL_OBJECT" and plan["upload"]["checksumAlgorithm"] == "CRC32C"
    assert "checksumType" not in presign(env, key(), size)["upload"]
    plan_path = write_json(tmp_path / "plan.json", plan)
    status, out, err = upload_parts(env, plan_path, spec)
    assert status == 0, err
    status, out, err = complete(env, name, plan["upload"]["uploadId"], write_json(tmp_path / "etags.json", json.loads(out)))
    assert status == 0, err
    head = s3.head_object(Bucket=BUCKET, Key=name, ChecksumMode="ENABLED")
    assert head.get("ChecksumType") == "FULL_OBJECT"
    status, out, _ = sluice(env, "checksum", "--algorithm", "crc32c", spec)
    assert out.split()[0] == head["ChecksumCRC32C"] and head["ChecksumCRC32C"] in err, (out, head, err)


def test_two_machines_send_one_upload_by_part_ranges(s3, env, tmp_path):
    """`--part-numbers A-B`: two processes at once (each its own state directory, as two
    machines have), each sending its range; `s3 complete` joins their lists; the object is whole."""
    name = key()
    size = 4 * PART + 777
    spec = "synthetic:%d:43" % size
    plan = presign(env, name, size)
    upload_id = plan["upload"]["uploadId"]
    plan_path = write_json(tmp_path / "plan.json", plan)
    runs = []
    for index, numbers in enumerate(["1-2", "3-5"]):
        args = [sluice_bin(), "upload", "--parts", plan_path, spec, "--progress", "none", "--part-numbers", numbers,
                "--state", str(tmp_path / ("machine%d" % index))]
        runs.append(subprocess.Popen(args, env=no_credentials(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    lists = []
    for index, run in enumerate(runs):
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0 and one_line(err.decode()), err
        lists.append(json.loads(out))
    assert [p["partNumber"] for p in lists[0]["parts"]] == [1, 2]
    assert [p["partNumber"] for p in lists[1]["parts"]] == [3, 4, 5]
    # One list alone names only its range: refused, nothing completed.
    first = write_json(tmp_path / "etags-1.json", lists[0])
    second = write_json(tmp_path / "etags-2.json", lists[1])
    status, _, err = complete(env, name, upload_id, first)
    assert status != 0 and one_line(err) and "nothing was completed" in err, err
    assert absent(s3, name)
    # A rerun of a range sends nothing (its own record) and prints the same list.
    status, out, err = upload_parts(env, plan_path, spec, "--part-numbers", "3-5", "--state", str(tmp_path / "machine1"))
    assert status == 0 and "sent 0 of 3 parts (3-5)" in err, err
    assert json.loads(out) == lists[1]
    status, out, err = sluice(env, "s3", "complete", "s3://%s/%s" % (BUCKET, name), "--upload-id", upload_id,
                              "--parts", second, "--parts", first, "--plan", plan_path)
    assert status == 0 and one_line(err) and "in 5 parts" in err, err
    assert object_sha256(s3, name) == checksum(spec)
    assert uploads_of(s3, name) == []


@pytest.mark.parametrize("numbers,expected", [
    ("0-2", "--part-numbers needs A-B (or N), part numbers from 1 to 10000, got '0-2'"),
    ("3-2", "--part-numbers 3-2: A must not be above B"),
    ("1-", "--part-numbers needs A-B"),
    ("a-b", "--part-numbers needs A-B"),
    ("1-99999999999999999999", "--part-numbers needs A-B"),
    ("2-9", "parts 2-9 are not all in the plan, which has parts 1-2"),
])
def test_a_bad_part_range_is_one_line_and_sends_nothing(s3, env, tmp_path, numbers, expected):
    name = key()
    plan = presign(env, name, PART + 1)
    plan_path = write_json(tmp_path / "plan.json", plan)
    status, out, err = upload_parts(env, plan_path, "synthetic:%d:44" % (PART + 1), "--part-numbers", numbers,
                                    "--state", str(tmp_path / "state"))
    assert status != 0 and out == "" and one_line(err), (status, err)
    assert expected in err, err
    assert held_parts(s3, name, plan["upload"]["uploadId"]) == []
    sluice(env, "s3", "abort", "s3://%s/%s" % (BUCKET, name), "--upload-id", plan["upload"]["uploadId"])
