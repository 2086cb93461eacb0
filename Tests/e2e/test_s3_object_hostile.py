"""Hostile input to `s3 cp`'s object options (issue 26): an SSE-C key file that is a FIFO, a /proc
file, short, long, missing or a directory; absurd --tag, --expires and --metadata values; a server
that lies about the full-object checksum on Complete. Each is one line and a non-zero exit (2 for
bad input, before anything is sent: the endpoint is a closed port), never a crash or a hang. The
SSE-C key appears in no output, progress record, state record or error."""

import base64
import os
import re
import uuid

import pytest

from test_s3_cli import BUCKET, MIB, env, fault_proxy, s3, sluice, weed, write_random  # noqa: F401 (fixtures)

CLOSED = "http://127.0.0.1:9"  # nothing listens: a request would fail with exit 1, not 2


def one_line(err):
    return err.startswith("sluice: ") and err.count("\n") == 1


def refused(env, tmp_path, *options, command=("s3", "cp")):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100)
    target = "s3://%s/hostile" % BUCKET
    return sluice(dict(env, AWS_ENDPOINT_URL=CLOSED), *command, str(path), target, "--progress", "none", *options, timeout=60)


def key_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "short").write_bytes(b"k" * 31)
    (tmp_path / "long").write_bytes(b"k" * 33)
    (tmp_path / "dir").mkdir()
    return {"fifo": (str(fifo), "not a regular file"), "proc": ("/proc/self/status", "more than 32 bytes"),
            "short": (str(tmp_path / "short"), "32 bytes"), "long": (str(tmp_path / "long"), "more than 32 bytes"),
            "missing": (str(tmp_path / "missing"), "no such file"), "dir": (str(tmp_path / "dir"), "not a regular file")}


@pytest.mark.parametrize("kind", ["fifo", "proc", "short", "long", "missing", "dir"])
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_bad_sse_c_key_file_is_one_line_and_exit_2_without_waiting(env, tmp_path, kind, how):
    path, words = key_files(tmp_path)[kind]
    if how == "option":
        code, out, err = refused(env, tmp_path, "--sse-c", "AES256", "--sse-c-key-file", path)
    else:
        code, out, err = refused(dict(env, SLUICE_SSE_C_KEY_FILE=path), tmp_path, "--sse-c", "AES256")
    assert code == 2 and one_line(err) and words in err and path in err, (code, err)


@pytest.mark.parametrize("kind", ["fifo", "short"])
def test_upload_parts_refuses_a_bad_key_file_the_same_way(env, tmp_path, kind):
    path, words = key_files(tmp_path)[kind]
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    code, out, err = sluice(env, "upload", "--parts", str(plan), "synthetic:10", "--sse-c-key-file", path, timeout=60)
    # The plan is read first here (not one sluice writes): exit 2 either way, one line, no wait.
    assert code == 2 and one_line(err), (code, err)


@pytest.mark.parametrize("tag, words", [
    ("a&b=1", "S3 allows letters"), ("k=v<x>", "S3 allows letters"), ("k=a\nb", "S3 allows letters"),
    ("k\tx=1", "S3 allows letters"), ("aws:team=1", "reserved"), ("AWS:team=1", "reserved"), ("=v", "KEY=VALUE"),
    ("k" * 129 + "=v", "1 ... 128"), ("k=" + "v" * 257, "257 characters"), ("novalue", "KEY=VALUE"),
])
def test_absurd_tags_are_refused_before_anything_is_sent(env, tmp_path, tag, words):
    code, out, err = refused(env, tmp_path, "--tag", tag)
    assert code == 2 and one_line(err) and words in err, (code, err)


def test_tags_s3_allows_pass(env, tmp_path):
    # Letters of any script, digits, spaces and + - = . _ : / @: only the closed port stops it.
    code, out, err = refused(env, tmp_path, "--tag", "équipe=données 2024", "--tag", "path=/a/b:c@d+e-f.g_h=i")
    assert code == 1 and "connection refused" in err, err


@pytest.mark.parametrize("value", [
    "99999-01-01", "0000-01-01", "-0001-01-01", "2030-13-01", "2030-02-30", "2030-01-01T25:00:00Z", "2030-01-01T12:60:00Z",
    "2030-01-01T00:00:00+99:00", "2030-01-01T00:00:00", "2030-01-01\n", "tomorrow", "", "\u0662\u0660\u0663\u0660-01-01",
])
@pytest.mark.parametrize("option", ["--expires", "--object-lock-retain-until"])
def test_absurd_dates_are_refused_before_anything_is_sent(env, tmp_path, option, value):
    extra = ["--object-lock-mode", "GOVERNANCE"] if option == "--object-lock-retain-until" else []
    code, out, err = refused(env, tmp_path, option, value, *extra)
    assert code == 2 and one_line(err) and "ISO 8601" in err, (code, err)


@pytest.mark.parametrize("value", ["2030-01-31T12:00:00.5+02:00", "2030-01-31", "2028-02-29T23:59:59Z"])
def test_dates_iso_8601_allows_pass(env, tmp_path, value):
    code, out, err = refused(env, tmp_path, "--expires", value)
    assert code == 1 and "connection refused" in err, err


@pytest.mark.parametrize("metadata, words", [
    ("k\n=v", "metadata key"), ("k=v\nx", "not printable ASCII"), ("\u00fc=1", "metadata key"), ("k=" + "v" * 3000, "S3 allows 2048"),
    ("=v", "KEY=VALUE"), ("k v=1", "metadata key"),
])
def test_absurd_metadata_is_refused_before_anything_is_sent(env, tmp_path, metadata, words):
    code, out, err = refused(env, tmp_path, "--metadata", metadata)
    assert code == 2 and one_line(err) and words in err, (code, err)


def test_a_server_lying_about_the_full_object_crc_on_complete_fails_in_one_line(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy

    def lie(status, headers, body):
        # Another valid CRC64NVME (8 bytes, base64) in place of the server's.
        text = re.sub(rb"<ChecksumCRC64NVME>[^<]*</ChecksumCRC64NVME>",
                      b"<ChecksumCRC64NVME>" + base64.b64encode(b"\x01" * 8) + b"</ChecksumCRC64NVME>", body)
        assert text != body, body
        return status, headers, text

    proxy.rewrite["complete"] = lie
    path = tmp_path / "f.bin"
    write_random(path, 11 * MIB, seed=26)
    code, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/lie-%s" % (BUCKET, uuid.uuid4().hex[:8]), "--part-size", "5MiB",
                            "--checksum", "crc64nvme", "--progress", "none", timeout=120)
    assert code == 1 and out == "" and one_line(err), (code, err)
    assert "CRC64NVME" in err and base64.b64encode(b"\x01" * 8).decode() in err, err


def test_the_sse_c_key_is_in_no_output_progress_record_or_error(s3, fault_proxy, tmp_path):
    proxy, env = fault_proxy
    key = os.urandom(32)
    key_file = tmp_path / "key"
    key_file.write_bytes(key)
    forms = [key, base64.b64encode(key), key.hex().encode(), key.hex().upper().encode()]
    path = tmp_path / "f.bin"
    write_random(path, 16 * MIB, seed=27)
    name = "secret-%s.bin" % uuid.uuid4().hex[:8]
    # A run that fails with the upload kept (part 3 refused for good), then the resume that completes.
    proxy.fail_part(3, 403, "AccessDenied", times=None)
    outputs = []
    records = {}
    for _ in range(2):
        code, out, err = sluice(env, "s3", "cp", str(path), "s3://%s/%s" % (BUCKET, name), "--part-size", "5MiB", "--sse-c", "AES256",
                                "--sse-c-key-file", str(key_file), "--progress", "json", "--retries", "0", timeout=120)
        outputs.append((code, out, err))
        proxy.clear_failures()
        for directory, _, files in os.walk(env["XDG_CACHE_HOME"]):
            for name_ in files:
                with open(os.path.join(directory, name_), "rb") as handle:
                    records[os.path.join(directory, name_)] = handle.read()
    assert outputs[0][0] == 1 and "upload" in outputs[0][2] and outputs[1][0] == 0, outputs
    assert "resumed" in outputs[1][2], outputs[1][2]  # the record was used, with the key's fingerprint only
    assert '"bytes_sent"' in "".join(out + err for _, out, err in outputs)  # progress records were written
    assert any(path_.endswith(".json") for path_ in records), records.keys()  # the failed run's state record
    text = "".join(out + err for _, out, err in outputs).encode()
    assert all(form not in text for form in forms)
    for record, data in records.items():
        assert all(form not in data for form in forms), record
