"""`sluice s3 cp s3://A/K s3://B/K2` between two stores (issue 38, items 3, 4 and 6): SeaweedFS and
moto (PyPI moto[server]) as two endpoints with different credentials, the source read with
`--source-profile` (its credentials and endpoint from an AWS CLI profile only) or
`--source-endpoint-url`. The object is streamed through sluice (ranged GETs pinned by If-Match
into a multipart upload) byte-exact (SHA-256 read back at the destination) with its content
type and metadata; and the faults, through Tests/Peers/s3_proxy.py's FaultProxy where a real
server will not show them: a source changed mid-copy, x-amz-copy-source-if-match refused, the
source's 403 mid-copy, a missing source, a destination that does not implement UploadPartCopy
(streamed instead, said once), and --metadata-directive beside the AWS CLI's answer."""

import hashlib
import os
import subprocess
import sys
import uuid

import pytest

from conftest import REPO, need_env, nginx, sha256_file  # noqa: F401 (fixtures)
from test_s3_cli import BUCKET, MIB, env, moto_s3, s3, sluice, weed  # noqa: F401 (fixtures)

sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
from s3_proxy import FaultProxy  # noqa: E402
from test_remote_source import held_parts, kill_once_parts_are_held, peak_rss_run  # noqa: E402

MOTO_BUCKET = "copies"


@pytest.fixture(scope="module")
def moto(moto_s3):
    url, client = moto_s3
    client.create_bucket(Bucket=MOTO_BUCKET)
    return url, client


def name(prefix):
    return "%s-%s.bin" % (prefix, uuid.uuid4().hex[:8])


def sha(data):
    return hashlib.sha256(data).hexdigest()


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def profile_env(env, tmp_path, weed, moto_url):
    """The destination is moto (its keys in the environment, --endpoint-url); the source's
    endpoint and keys are only in the profile `src` of the config file."""
    url, _, access, secret = weed
    config = tmp_path / "aws-config"
    config.write_text("[profile src]\nendpoint_url = %s\naws_access_key_id = %s\naws_secret_access_key = %s\nregion = us-east-1\n"
                      % (url, access, secret))
    environment = {k: v for k, v in env.items() if k != "AWS_ENDPOINT_URL"}
    environment.update(AWS_CONFIG_FILE=str(config), AWS_ACCESS_KEY_ID="AKIDMOTO", AWS_SECRET_ACCESS_KEY="moto")
    return environment


@pytest.mark.parametrize("size,parts", [(1 * MIB, None), (40 * MIB, 5)], ids=["1MiB", "40MiB"])
def test_an_object_is_streamed_from_seaweedfs_to_moto_with_a_source_profile(s3, moto, env, tmp_path, weed, size, parts):
    url, client = moto
    data = os.urandom(size)
    source = name("cross-src")
    s3.put_object(Bucket=BUCKET, Key=source, Body=data, ContentType="image/png", Metadata={"owner": "ada", "n": "1"},
                  CacheControl="max-age=60")
    status, out, err = sluice(profile_env(env, tmp_path, weed, url), "s3", "cp", "s3://%s/%s" % (BUCKET, source),
                              "s3://%s/%s" % (MOTO_BUCKET, source), "--endpoint-url", url, "--source-profile", "src",
                              "--part-size", "8MiB", "--progress", "none", timeout=300)
    assert status == 0, err
    assert out == "copy: s3://%s/%s to s3://%s/%s\n" % (BUCKET, source, MOTO_BUCKET, source), out
    assert ("streamed in %d parts" % parts if parts else "streamed in one PutObject") in err, err
    body = client.get_object(Bucket=MOTO_BUCKET, Key=source)["Body"].read()
    assert sha(body) == sha(data)
    head = client.head_object(Bucket=MOTO_BUCKET, Key=source)
    assert (head["ContentType"], head["Metadata"], head["CacheControl"]) == ("image/png", {"owner": "ada", "n": "1"}, "max-age=60"), head


def test_an_object_is_streamed_from_moto_to_seaweedfs_with_a_source_endpoint(s3, moto, env):
    url, client = moto
    data = os.urandom(11 * MIB + 5)
    source = name("back-src")
    client.put_object(Bucket=MOTO_BUCKET, Key=source, Body=data, ContentType="text/csv", Metadata={"from": "moto"})
    status, out, err = sluice(env, "s3", "cp", "s3://%s/%s" % (MOTO_BUCKET, source), "s3://%s/%s" % (BUCKET, source),
                              "--source-endpoint-url", url, "--part-size", "5MiB", "--progress", "none", timeout=300)
    assert status == 0, err
    assert "streamed in 3 parts" in err, err
    assert sha(s3.get_object(Bucket=BUCKET, Key=source)["Body"].read()) == sha(data)
    head = s3.head_object(Bucket=BUCKET, Key=source)
    assert (head["ContentType"], head["Metadata"]) == ("text/csv", {"from": "moto"}), head


def test_a_streamed_copy_killed_mid_way_resumes_without_sending_it_all_again(s3, env, weed):
    """The source read through another endpoint name of the same SeaweedFS (`localhost`: another
    store to sluice, so streamed), killed with SIGKILL once the destination holds a part; the
    same command sends only the rest."""
    data = os.urandom(48 * MIB + 7)
    source = name("resume-src")
    s3.put_object(Bucket=BUCKET, Key=source, Body=data)
    target = name("resume-copy")
    args = ["s3", "cp", "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, target), "--source-endpoint-url",
            weed[0].replace("127.0.0.1", "localhost"), "--part-size", "8MiB", "--concurrency", "2", "--limit-rate", "8M",
            "--progress", "none"]
    kill_once_parts_are_held(s3, env, args, target)
    status, _, err = sluice(env, *args[:-4], "--progress", "none", timeout=300)
    assert status == 0, err
    assert "already at the server" in err and "streamed in 7 parts" in err, err
    sent = int(err.split(" sent, ")[0].rsplit(" ", 1)[1])
    assert sent < len(data), err
    assert sha(s3.get_object(Bucket=BUCKET, Key=target)["Body"].read()) == sha(data)


def test_256_mib_from_seaweedfs_to_moto_by_a_source_profile_in_flat_memory_resumed_after_kill_9(s3, moto, env, tmp_path, weed):
    """Issue 38's done-when: SeaweedFS -> moto, the source's endpoint and keys from a profile only,
    256 MiB byte-exact under 64 MiB peak RSS at 16 MiB parts x 8; killed with SIGKILL once moto
    holds a part, the same command sends only the parts moto does not hold."""
    url, client = moto
    size = 256 * MIB
    source = name("cross-big")
    path = tmp_path / "src.bin"
    digest = hashlib.sha256()
    with open(path, "wb") as handle:
        for _ in range(size // MIB):
            chunk = os.urandom(MIB)
            digest.update(chunk)
            handle.write(chunk)
    s3.upload_file(str(path), BUCKET, source)
    path.unlink()
    environment = profile_env(env, tmp_path, weed, url)
    args = ["s3", "cp", "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (MOTO_BUCKET, source), "--endpoint-url", url,
            "--source-profile", "src", "--part-size", "16MiB", "--concurrency", "8", "--progress", "none"]
    kill_once_parts_are_held(client, environment, args + ["--limit-rate", "32M"], source, bucket=MOTO_BUCKET)
    held = held_parts(client, source, bucket=MOTO_BUCKET)
    status, err, peak = peak_rss_run(environment, args)
    assert status == 0, err
    assert "already at the server" in err and "streamed in 16 parts" in err, err
    assert peak < 64, "peak RSS %.1f MiB" % peak
    sent = int(err.split(" sent, ")[0].rsplit(" ", 1)[1])
    assert sent < size - (held - 1) * 16 * MIB, (sent, held, err)
    copied = hashlib.sha256()
    for chunk in client.get_object(Bucket=MOTO_BUCKET, Key=source)["Body"].iter_chunks(4 * MIB):
        copied.update(chunk)
    assert copied.hexdigest() == digest.hexdigest()
    client.delete_object(Bucket=MOTO_BUCKET, Key=source)


def test_a_missing_source_on_another_store_is_one_line(moto, env):
    url, _ = moto
    status, out, err = sluice(env, "s3", "cp", "s3://%s/%s" % (MOTO_BUCKET, name("none")), "s3://%s/%s" % (BUCKET, name("none")),
                              "--source-endpoint-url", url, timeout=120)
    assert status == 1 and out == "" and one_line(err) and "no such object" in err, (status, out, err)


def test_source_options_without_an_s3_source_are_a_usage_error(env, tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    for args in (["s3", "cp", str(path), "s3://%s/k" % BUCKET, "--source-region", "eu-west-1"],
                 ["s3", "cp", str(path), "s3://%s/k" % BUCKET, "--metadata-directive", "REPLACE"],
                 ["upload", str(path), "http://127.0.0.1:1/", "--source-profile", "p"],
                 ["tus", str(path), "http://127.0.0.1:1/", "--source-endpoint-url", "http://127.0.0.1:2"],
                 ["s3", "sync", str(tmp_path), "s3://%s/q/" % BUCKET, "--source-region", "eu-west-1"]):
        status, out, err = sluice(env, *args, timeout=60)
        assert status == 2 and one_line(err) and "s3:// SOURCE" in err, (args, status, err)
    # A prefix copy takes them (test_a_prefix_is_copied_and_synced_…): a profile that is not
    # there is one line before any request.
    status, out, err = sluice(env, "s3", "cp", "-r", "s3://%s/p/" % BUCKET, "s3://%s/q/" % BUCKET, "--source-profile", "nope", timeout=60)
    assert status == 2 and one_line(err) and "the source's configuration" in err and "'nope'" in err, (status, err)


def test_upload_and_tus_read_an_s3_source_from_a_source_profile(s3, moto, env, tmp_path, weed, nginx):
    """`upload s3://…` to nginx's dav and `tus s3://…` to the tus server, the object's keys and
    endpoint from a profile only: byte-exact at the server."""
    data = os.urandom(9 * MIB + 17)
    source = name("to-http")
    s3.put_object(Bucket=BUCKET, Key=source, Body=data)
    environment = profile_env(env, tmp_path, weed, moto[0])
    target = nginx[0] + "/dav/" + source
    status, _, err = sluice(environment, "upload", "s3://%s/%s" % (BUCKET, source), target, "-X", "PUT", "--source-profile", "src",
                            "--progress", "none", timeout=300)
    assert status == 0, err
    assert sha256_file(os.path.join(nginx[1], "dav", source)) == sha(data)
    endpoint, store = need_env("SLUICE_TUS_URL"), need_env("SLUICE_TUS_STORE")
    status, out, err = sluice(environment, "tus", "s3://%s/%s" % (BUCKET, source), endpoint, "--source-profile", "src",
                              "--state", str(tmp_path / "tus"), "--progress", "none", timeout=300)
    assert status == 0, err
    assert sha256_file(os.path.join(store, out.strip().rstrip("/").rsplit("/", 1)[-1])) == sha(data)
    # Without the profile the source is read with the environment's (moto's) keys at no endpoint of theirs: one line.
    status, _, err = sluice(dict(environment, AWS_ENDPOINT_URL=weed[0]), "upload", "s3://%s/%s" % (BUCKET, source), target,
                            "-X", "PUT", "--progress", "none", timeout=300)
    assert status == 1 and one_line(err) and "403" in err, (status, err)


def first_range_past_zero(action, headers):
    asked = headers.get("range", "")
    return action == "other" and asked.startswith("bytes=") and not asked.startswith("bytes=0-")


def test_a_source_changed_mid_copy_is_refused_and_nothing_is_stored(s3, moto, env, weed):
    url, client = moto
    source = name("changing")
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(20 * MIB))
    proxy = FaultProxy(weed[1])
    changed = []

    def change_it(action, headers):
        # The first range past byte 0: the source is replaced before its GET reaches the store.
        if not changed and first_range_past_zero(action, headers):
            s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(20 * MIB))
            changed.append(headers["range"])
        return None

    proxy.policy = change_it
    try:
        status, out, err = sluice(env, "s3", "cp", "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (MOTO_BUCKET, source), "--endpoint-url", url,
                                  "--source-endpoint-url", "http://127.0.0.1:%d" % proxy.port, "--part-size", "5MiB",
                                  "--concurrency", "1", "--progress", "none", "--state", str(env["HOME"]) + "/state", timeout=300)
    finally:
        proxy.close()
    assert changed, "no ranged GET past byte 0 went through the proxy"
    assert status == 1 and one_line(err) and "changed during the copy" in err and "is kept" not in err, (status, err)
    with pytest.raises(Exception):
        client.head_object(Bucket=MOTO_BUCKET, Key=source)
    # Its parts were of a version no run will ask for again: aborted, nothing left billed.
    assert client.list_multipart_uploads(Bucket=MOTO_BUCKET, Prefix=source).get("Uploads", []) == []


def test_the_source_s_403_mid_copy_is_one_line(s3, moto, env, weed):
    url, client = moto
    source = name("denied")
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(12 * MIB))
    proxy = FaultProxy(weed[1])
    proxy.policy = lambda action, headers: (403, "AccessDenied", "Access Denied") if first_range_past_zero(action, headers) else None
    try:
        status, out, err = sluice(env, "s3", "cp", "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (MOTO_BUCKET, source), "--endpoint-url", url,
                                  "--source-endpoint-url", "http://127.0.0.1:%d" % proxy.port, "--part-size", "5MiB",
                                  "--concurrency", "1", "--progress", "none", timeout=300)
    finally:
        proxy.close()
    assert "other" in proxy.refused, (proxy.refused, proxy.requests, err)
    # The upload is kept, resumable as an upload of a file is.
    assert status == 1 and one_line(err) and "403" in err and "is kept: run the same command" in err, (status, err)
    with pytest.raises(Exception):
        client.head_object(Bucket=MOTO_BUCKET, Key=source)


def test_options_a_copy_by_the_store_does_not_use_are_refused_before_any_request(tmp_path):
    """Nothing listens at the endpoint: a refusal before any request is exit 2 and its line; an
    accepted option goes on to the connection, which fails (exit 1)."""
    environment = dict(os.environ, AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1",
                       AWS_ENDPOINT_URL="http://127.0.0.1:1", AWS_CONFIG_FILE=str(tmp_path / "none"),
                       AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    state = str(tmp_path / "state")
    one, prefix = ["cp", "s3://bkt/k", "s3://bkt/k2"], ["cp", "-r", "s3://bkt/p/", "s3://cbk/q/"]
    refused = [
        (one, "--limit-rate", "1M"), (one, "--payload-signing", "unsigned"), (one, "--equal-parts"),
        (one + ["--dryrun"], "--limit-rate", "1M"), (prefix, "--payload-signing", "sha256"),
        (["sync", "s3://bkt/p/", "s3://cbk/q/"], "--limit-rate", "1M"),
        # A source option naming the destination's store (same endpoint, same keys): still the store's copy.
        (one + ["--source-endpoint-url", "http://127.0.0.1:1"], "--limit-rate", "1M"),
    ]
    for args, option, *value in refused:
        status, out, err = sluice(environment, "s3", *args, option, *value, "--retries", "0", timeout=60)
        assert status == 2 and out == "" and one_line(err), (args, option, status, err)
        assert "%s is not used by a copy the store makes" % option in err, (args, option, err)
    # Streamed (another store), or a record of a store copy (--state, --restart): taken, so the
    # command goes on to its first request.
    accepted = [
        (one + ["--source-endpoint-url", "http://127.0.0.1:2"], "--limit-rate", "1M"),
        (prefix + ["--source-endpoint-url", "http://127.0.0.1:2"], "--payload-signing", "unsigned"),
        (one, "--state", state), (one, "--restart"),
    ]
    for args, option, *value in accepted:
        status, out, err = sluice(environment, "s3", *args, option, *value, "--retries", "0", timeout=60)
        assert status == 1 and "is not used by a copy" not in err, (args, option, status, err)


def copy_through_proxy(env, weed, source, target, policy):
    """`s3 cp` of SeaweedFS's `source` to `target` on the same store, through a FaultProxy
    answering as `policy` says: (the proxy, (status, stdout, stderr))."""
    proxy = FaultProxy(weed[1])
    proxy.policy = policy
    try:
        return proxy, sluice(dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % proxy.port), "s3", "cp",
                             "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, target), "--part-size", "8MiB",
                             "--progress", "none", timeout=300)
    finally:
        proxy.close()


@pytest.mark.parametrize("size", [100_000, 20 * MIB], ids=["CopyObject", "UploadPartCopy"])
def test_copy_source_if_match_refused_is_one_line(s3, env, weed, size):
    source = name("pinned")
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(size))
    target = name("pinned-copy")
    proxy, (status, out, err) = copy_through_proxy(
        env, weed, source, target, lambda action, headers: (
            (412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
            if "x-amz-copy-source-if-match" in headers else None))
    assert status == 1 and out == "" and one_line(err) and "changed" in err and "412" in err, (status, out, err)
    with pytest.raises(Exception):
        s3.head_object(Bucket=BUCKET, Key=target)


@pytest.mark.parametrize("size,parts", [(100_000, None), (20 * MIB, 3)], ids=["CopyObject", "UploadPartCopy"])
def test_a_destination_that_does_not_copy_gets_the_object_streamed_said_once(s3, env, weed, size, parts):
    source = name("no-copy")
    data = os.urandom(size)
    s3.put_object(Bucket=BUCKET, Key=source, Body=data, ContentType="image/gif", Metadata={"kept": "yes"})
    target = name("streamed-copy")
    proxy, (status, out, err) = copy_through_proxy(
        env, weed, source, target, lambda action, headers: (
            (501, "NotImplemented", "A header you provided implies functionality that is not implemented")
            if "x-amz-copy-source" in headers else None))
    assert status == 0, err
    # A 501 is not retried: one CopyObject refused, or at most one UploadPartCopy a part
    # (those already in flight when the first refusal came).
    assert proxy.refused.count("put") == (1 if parts is None else 0), proxy.refused
    assert 1 <= proxy.refused.count("part") <= (parts or 0) or parts is None, proxy.refused
    assert err.count("does not copy objects itself") == 1 and "501 NotImplemented" in err, err
    assert ("streamed in %d parts" % parts if parts else "streamed in one PutObject") in err, err
    assert sha(s3.get_object(Bucket=BUCKET, Key=target)["Body"].read()) == sha(data)
    head = s3.head_object(Bucket=BUCKET, Key=target)
    assert (head["ContentType"], head["Metadata"]) == ("image/gif", {"kept": "yes"}), head


def aws_cp(env, *args):
    proc = subprocess.run([sys.executable, "-m", "awscli", "s3", "cp", *args, "--no-progress", "--endpoint-url", env["AWS_ENDPOINT_URL"]],
                          env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


DIRECTIVES = {
    # options: what the copy carries (content type, metadata) when the source is image/png, old=0
    "replace": (["--metadata-directive", "REPLACE", "--content-type", "text/plain", "--metadata", "new=1"], ("text/plain", {"new": "1"})),
    "metadata-implies-replace": (["--metadata", "new=1"], (None, {"new": "1"})),
    "type-without-replace": (["--content-type", "text/plain"], ("image/png", {"old": "0"})),
    "copy": (["--metadata-directive", "COPY", "--content-type", "text/plain"], ("image/png", {"old": "0"})),
}


@pytest.mark.parametrize("case", sorted(DIRECTIVES))
def test_metadata_directive_of_a_copy_object_as_the_aws_cli(s3, env, case):
    """What the object carries after sluice and after `aws s3 cp` with the same options (one
    CopyObject: aws-cli 1.x's multipart copy drops the source's metadata, sluice keeps it as
    aws-cli 2's default --copy-props does)."""
    options = DIRECTIVES[case][0]
    source = name("directive")
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(100_000), ContentType="image/png", Metadata={"old": "0"})
    heads = {}
    for tool in ("aws", "sluice"):
        target = name("directive-" + tool)
        args = ["s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, target), *options]
        if tool == "aws":
            aws_cp(env, *args)
        else:
            status, _, err = sluice(env, "s3", "cp", *args, "--progress", "none", timeout=300)
            assert status == 0, err
        head = s3.head_object(Bucket=BUCKET, Key=target)
        heads[tool] = (head["ContentType"], head["Metadata"])
    assert heads["sluice"] == heads["aws"], heads


@pytest.mark.parametrize("case", sorted(DIRECTIVES))
def test_metadata_directive_of_a_multipart_copy(s3, env, case):
    options, (content_type, metadata) = DIRECTIVES[case]
    source = name("directive-parts")
    s3.put_object(Bucket=BUCKET, Key=source, Body=os.urandom(20 * MIB), ContentType="image/png", Metadata={"old": "0"})
    target = name("directive-parts-copy")
    status, _, err = sluice(env, "s3", "cp", "s3://%s/%s" % (BUCKET, source), "s3://%s/%s" % (BUCKET, target), *options,
                            "--part-size", "8MiB", "--progress", "none", timeout=300)
    assert status == 0 and "UploadPartCopy" in err, err
    head = s3.head_object(Bucket=BUCKET, Key=target)
    assert head["Metadata"] == metadata, head
    if content_type:
        assert head["ContentType"] == content_type, head


def test_a_prefix_is_copied_and_synced_from_seaweedfs_to_moto_with_a_source_profile(s3, moto, env, tmp_path, weed):
    """`s3 cp -r` and `s3 sync --delete` of a prefix from another store: each object streamed
    (one multipart), byte-exact with its type; the sync copies only the changed one and
    deletes the object with no source."""
    url, client = moto
    prefix = name("cross-prefix") + "/"
    objects = {"a": os.urandom(100), "d/b": os.urandom(12 * MIB + 3), "d/c d": os.urandom(7)}
    for key, data in objects.items():
        s3.put_object(Bucket=BUCKET, Key=prefix + key, Body=data, ContentType="text/plain")
    environment = profile_env(env, tmp_path, weed, url)

    def run(*args):
        return sluice(environment, "s3", *args, "s3://%s/%s" % (BUCKET, prefix), "s3://%s/%s" % (MOTO_BUCKET, prefix),
                      "--endpoint-url", url, "--source-profile", "src", "--part-size", "5MiB", "--progress", "none", timeout=300)

    def stored():
        found = {}
        for item in client.list_objects_v2(Bucket=MOTO_BUCKET, Prefix=prefix).get("Contents", []):
            found[item["Key"][len(prefix):]] = sha(client.get_object(Bucket=MOTO_BUCKET, Key=item["Key"])["Body"].read())
        return found

    status, out, err = run("cp", "-r")
    assert status == 0 and "3 objects copied" in err and "streamed through sluice" in err, err
    assert stored() == {key: sha(data) for key, data in objects.items()}
    assert client.head_object(Bucket=MOTO_BUCKET, Key=prefix + "d/b")["ContentType"] == "text/plain"
    objects["a"] = os.urandom(101)
    s3.put_object(Bucket=BUCKET, Key=prefix + "a", Body=objects["a"])
    client.put_object(Bucket=MOTO_BUCKET, Key=prefix + "orphan", Body=b"o")
    status, out, err = run("sync", "--delete")
    assert status == 0 and "1 object copied, 2 unchanged, 1 deleted" in err, err
    assert sorted(out.splitlines()) == ["copy: s3://%s/%sa to s3://%s/%sa" % (BUCKET, prefix, MOTO_BUCKET, prefix),
                                        "delete: s3://%s/%sorphan" % (MOTO_BUCKET, prefix)], out
    assert stored() == {key: sha(data) for key, data in objects.items()}


def test_a_sync_between_stores_that_list_in_two_orders_is_refused_before_any_copy(s3, moto, env, tmp_path, weed):
    """SeaweedFS lists `d/b` before `d-b` (a file system's order), moto after (S3's): a join of
    the two listings (`s3 sync`, with or without --delete) is refused in one line, and nothing
    is copied or deleted; once one side's keys fit either order the sync runs; `cp -r` joins
    nothing."""
    url, client = moto
    prefix = name("orders") + "/"
    for key in ("d-b", "d/b"):
        client.put_object(Bucket=MOTO_BUCKET, Key=prefix + key, Body=b"old")
    client.put_object(Bucket=MOTO_BUCKET, Key=prefix + "orphan", Body=b"o")
    objects = {"d-b": os.urandom(50), "d/b": os.urandom(60)}
    for key, data in objects.items():  # newer and of another size: a sync would copy both
        s3.put_object(Bucket=BUCKET, Key=prefix + key, Body=data)
    environment = profile_env(env, tmp_path, weed, url)

    def run(*args):
        return sluice(environment, "s3", *args, "s3://%s/%s" % (BUCKET, prefix), "s3://%s/%s" % (MOTO_BUCKET, prefix),
                      "--endpoint-url", url, "--source-profile", "src", "--progress", "none", timeout=300)

    def stored():
        return {item["Key"][len(prefix):]: client.get_object(Bucket=MOTO_BUCKET, Key=item["Key"])["Body"].read()
                for item in client.list_objects_v2(Bucket=MOTO_BUCKET, Prefix=prefix).get("Contents", [])}

    for args in (["sync"], ["sync", "--delete"], ["sync", "--size-only", "--dryrun"]):
        status, out, err = run(*args)
        assert status == 1 and out == "" and one_line(err), (args, status, out, err)
        assert "listed in a file system's (a/b before a-b)" in err and "in S3's key order" in err, (args, err)
        assert "cannot be joined" in err and "nothing was copied or deleted" in err, (args, err)
        assert stored() == {"d-b": b"old", "d/b": b"old", "orphan": b"o"}, args
    # moto's keys no longer tell the orders apart: joined in SeaweedFS's from the start.
    client.delete_object(Bucket=MOTO_BUCKET, Key=prefix + "d/b")
    status, out, err = run("sync", "--delete")
    assert status == 0 and "2 objects copied, 0 unchanged, 1 deleted" in err, err
    assert stored() == objects
    status, out, err = run("cp", "-r")
    assert status == 0 and "2 objects copied" in err, err
