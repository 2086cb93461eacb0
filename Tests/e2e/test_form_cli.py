"""`sluice upload --form` against a real multipart parser (python-multipart), compared with
`curl -F` on the same arguments."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, make_file, run, sha256_file, stop


@pytest.fixture(scope="module")
def multipart_url():
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "Tests", "Peers", "multipart_server.py"), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        port = int(proc.stdout.readline())
        yield "http://127.0.0.1:%d/" % port
    finally:
        stop(proc)


def test_form_matches_curl_and_the_parser_sees_every_part(multipart_url, tmp_path_factory):
    path = make_file(tmp_path_factory, 200 << 20, seed=4)
    forms = [
        "title=Quarterly report",
        "file=@%s;type=application/octet-stream;filename=report.bin" % path,
        'odd=@%s;filename="we;ird \\"name\\".bin"' % path,
        "caf\u00e9=cr\u00e8me",
    ]
    args = []
    for form in forms:
        args += ["--form", form]
    status, out, err = run("upload", *args, "--form-string", "literal=@not-a-file", multipart_url)
    assert status == 0, err
    ours = json.loads(out.decode())
    curl_args = ["curl", "-sS", "-f"]
    for form in forms:
        curl_args += ["-F", form]
    curl_args += ["--form-string", "literal=@not-a-file", multipart_url]
    theirs = json.loads(subprocess.run(curl_args, capture_output=True, check=True).stdout.decode())
    summary = lambda body: [(p["name"], p["filename"], p["content_type"], p["size"], p["sha256"]) for p in body["parts"]]
    assert summary(ours) == summary(theirs)
    parts = {p["name"]: p for p in ours["parts"]}
    assert parts["file"]["sha256"] == sha256_file(path) and parts["file"]["size"] == 200 << 20
    assert parts["literal"]["size"] == len("@not-a-file")
    assert "caf\u00e9" in parts


def test_hostile_names_never_inject_headers(multipart_url):
    status, out, err = run("upload", "--form-string", "a\r\nX-Injected: 1=v", multipart_url)
    if status == 0:
        for part in json.loads(out.decode())["parts"]:
            assert all(name.lower() != "x-injected" for name, _ in part["headers"])
    else:
        assert status == 2 and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("form, fragment, code", [("file=@/no/such/file", "no such file", 1), ("novalue", "=", 2), ("f=@-", "stdin", 2)])
def test_bad_forms_get_one_line(multipart_url, form, fragment, code):
    status, _, err = run("upload", "--form", form, multipart_url)
    assert status == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], err
