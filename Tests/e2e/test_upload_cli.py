"""`sluice upload`, `checksum`, `receive` end to end: real uploads to real servers on
127.0.0.1, checked by SHA-256 at the server."""

import json
import os

import pytest

import faults

from conftest import checksum, make_file, response_json, run, sha256_file

TRANSPORTS = ["curl", "urlsession"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_synthetic_256mib_to_the_receiver(receiver, transport):
    spec = "synthetic:256MiB:7"
    status, out, err = run("upload", spec, receiver + "syn.bin", "--transport", transport, "-X", "PUT")
    assert status == 0, err
    got = response_json(out)
    digest, count = checksum(spec)
    assert (got["bytes"], got["sha256"]) == (count, digest)
    assert count == 256 << 20
    if transport == "curl":
        # A known length goes out with Content-Length, never chunked.
        assert got["chunked"] is False and got["content_length"] == count
    else:
        # URLSession on Linux can only stream chunked.
        assert got["chunked"] is True


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_64mib_file_to_the_receiver(receiver, big_file, transport):
    status, out, err = run("upload", big_file, receiver + "file.bin", "--transport", transport)
    assert status == 0, err
    got = response_json(out)
    assert got["bytes"] == os.path.getsize(big_file)
    assert got["sha256"] == sha256_file(big_file)
    assert got["method"] == "POST"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_file_put_to_nginx_dav_is_stored_byte_exact(nginx, big_file, transport):
    url, root = nginx
    name = "dav/put-%s.bin" % transport
    status, out, err = run("upload", big_file, "%s/%s" % (url, name), "-X", "PUT", "--transport", transport)
    if transport == "urlsession":
        # nginx stores chunked PUT bodies too.
        pass
    assert status == 0, err
    stored = os.path.join(root, name)
    assert os.path.getsize(stored) == os.path.getsize(big_file)
    assert sha256_file(stored) == sha256_file(big_file)


def test_one_gib_file_and_seeded_synthetic_put_to_nginx_with_content_length(nginx, receiver, tmp_path_factory):
    url, root = nginx
    path = make_file(tmp_path_factory, 1 << 30, seed=1)
    status, _, err = run("upload", path, url + "/dav/one-gib.bin", "-X", "PUT", "--progress", "none")
    assert status == 0, err
    assert sha256_file(os.path.join(root, "dav/one-gib.bin")) == sha256_file(path)
    spec = "synthetic:300000007:99"
    status, _, err = run("upload", spec, url + "/dav/seeded.bin", "-X", "PUT")
    assert status == 0, err
    assert sha256_file(os.path.join(root, "dav/seeded.bin")) == checksum(spec)[0]
    # What went on the wire: Content-Length, and no Transfer-Encoding.
    status, out, err = run("upload", spec, receiver + "framing", "-X", "PUT")
    assert status == 0, err
    got = response_json(out)
    assert got["content_length"] == 300000007 and got["chunked"] is False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stdin_pipe_is_sent_chunked(receiver, transport):
    data = os.urandom(5_000_003)
    status, out, err = run("upload", "-", receiver + "stdin", "--transport", transport, input_bytes=data)
    assert status == 0, err
    got = response_json(out)
    import hashlib

    assert got["bytes"] == len(data) and got["sha256"] == hashlib.sha256(data).hexdigest()
    assert got["chunked"] is True


def test_chunked_flag_forces_chunked(receiver):
    status, out, err = run("upload", "synthetic:1MiB", receiver + "c", "--chunked")
    assert status == 0, err
    assert response_json(out)["chunked"] is True


def test_checksum_matches_python(big_file):
    assert checksum(big_file) == (sha256_file(big_file), os.path.getsize(big_file))


def test_options_may_come_before_or_after_positionals(receiver):
    status, out, err = run(
        "upload", "-X", "PUT", "synthetic:10", "-H", "X-Test: 1", receiver + "x", "--progress", "none"
    )
    assert status == 0, err
    assert response_json(out)["method"] == "PUT"


@pytest.mark.parametrize(
    "args, fragment, code",
    [
        (["upload", "/no/such/file", "URL"], "no such file", 1),
        (["upload", "/tmp", "URL"], "/tmp: is a directory (upload sends one file; s3 cp --recursive and s3 sync send a directory)", 1),
        (["upload", "synthetic:12XB", "URL"], "invalid size", 2),
        (["upload", "synthetic:1", "ftp://127.0.0.1/x"], "invalid URL", 2),
        (["upload", "synthetic:1", "not a url"], "invalid URL", 2),
        (["upload", "synthetic:1", "URL", "-H", "X-A: 1\r\nX-Injected: 2"], "CR, LF", 2),
        (["upload", "synthetic:1", "URL", "-H", "Bad Name: 1"], "not a valid token", 2),
        (["upload", "synthetic:1", "URL", "-H", "NoColon"], "no ':'", 2),
        (["upload", "synthetic:1", "URL", "-X", "PU T"], "method 'PU T' is not a valid token", 2),
        (["upload", "synthetic:1", "URL", "--transport", "carrier-pigeon"], "unknown transport", 2),
        (["upload", "synthetic:1", "URL", "--buffer-size", "12"], "--buffer-size", 2),
        (["upload", "synthetic:1", "URL", "--bogus"], "unknown option", 2),
        (["upload", "synthetic:1"], "needs SOURCE and URL", 2),
        (["frobnicate"], "unknown command", 2),
        # A mistyped word gets the one it was close to (edit distance, as git and rclone do).
        (["uplod", "synthetic:1", "URL"], "unknown command 'uplod': did you mean 'upload'?", 2),
        (["upload", "synthetic:1", "URL", "--hedaer", "a: b"], "unknown option --hedaer: did you mean --header?", 2),
        (["s3", "synk", ".", "s3://b/p/"], "unknown s3 subcommand 'synk': did you mean 'sync'?", 2),
        (["s3", "sync", ".", "s3://b/p/", "--dry-run"], "unknown option --dry-run: did you mean --dryrun?", 2),
        (["s3", "cp", ".", "s3://b/p/", "--recursiv"], "unknown option --recursiv: did you mean --recursive?", 2),
    ],
)
def test_bad_input_gets_one_clear_line_and_the_documented_exit_code(receiver, args, fragment, code):
    args = [receiver + "x" if a == "URL" else a for a in args]
    status, out, err = run(*args, timeout=30)
    assert status == code, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], err


@pytest.mark.parametrize(
    "args",
    [
        ["s3", "cp", ".", "s3://b/p/", "--zzzzzzzzzz"],  # near no option
        ["upload", "synthetic:1", "http://127.0.0.1:1/", "-Z"],  # one letter: one edit from every other
        ["zz", "a", "b"],
    ],
)
def test_a_word_near_nothing_known_gets_no_suggestion(args):
    status, _, err = run(*args, timeout=30)
    assert status == 2 and "unknown" in err and "did you mean" not in err, err


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refused_connection_is_one_clear_line(transport):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    status, _, err = run("upload", "synthetic:1MiB", "http://127.0.0.1:%d/x" % port, "--transport", transport, timeout=60)
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "connect" in lines[0], err


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sigint_during_a_stalled_producer_stops_promptly(receiver, transport, tmp_path):
    """A producer that never writes: SIGINT ends the upload at once, nothing left running."""
    ok, detail = faults.producer_stall_then_sigint(receiver.rstrip("/"), transport, str(tmp_path))
    assert ok, detail


def run_on_terminal(args, columns, timeout=120):
    """Runs sluice with stdout and stderr on one pseudo-terminal `columns` wide, as a user at a
    shell sees it; returns (status, everything written to the terminal)."""
    import fcntl
    import select
    import struct
    import subprocess
    import termios
    import time
    from conftest import sluice_bin
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    attributes = termios.tcgetattr(follower)
    attributes[1] &= ~termios.ONLCR  # keep "\n" as sluice wrote it
    termios.tcsetattr(follower, termios.TCSANOW, attributes)
    proc = subprocess.Popen([sluice_bin(), *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    seen = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    status = proc.wait(timeout=30)
    return status, seen.decode("utf-8", "replace")


def screen_lines(text):
    """What stays on each line of a terminal: every "\\r" returns to its start, ESC[K clears the
    rest; a line longer than the terminal is kept whole (so a test sees that it wrapped)."""
    lines, current, column = [], [], 0
    i = 0
    while i < len(text):
        if text.startswith("\x1b[K", i):
            del current[column:]
            i += 3
            continue
        ch = text[i]
        if ch == "\r":
            column = 0
        elif ch == "\n":
            lines.append("".join(current))
            current, column = [], 0
        else:
            if column < len(current):
                current[column] = ch
            else:
                current.append(ch)
            column += 1
        i += 1
    lines.append("".join(current))
    return lines


@pytest.mark.parametrize("columns", [40, 80])
def test_the_progress_bar_fits_the_terminal_and_the_answer_stands_whole(receiver, columns):
    # Rate-limited so the bar is redrawn many times; the receiver's JSON answer goes to stdout,
    # the same terminal: it must stand whole on its own line, not under a redraw.
    status, text = run_on_terminal(["upload", "synthetic:3MiB:4", receiver + "bar.bin", "--progress", "bar",
                                    "--limit-rate", "2MiB"], columns)
    assert status == 0, text
    redraws = [part for part in text.replace("\n", "\r").split("\r") if "%" in part]
    assert len(redraws) >= 3, text
    widest = max(len(part.replace("\x1b[K", "")) for part in redraws)
    assert widest <= columns - 1, text
    lines = [line for line in screen_lines(text) if line]
    answers = [line for line in lines if line.startswith("{")]
    assert len(answers) == 1, lines
    got = json.loads(answers[0])
    digest, count = checksum("synthetic:3MiB:4")
    assert (got["bytes"], got["sha256"]) == (count, digest)
    # Every line left on the screen is as wide as the terminal at the most: no wrapped copies.
    assert all(len(line) < columns for line in lines if not line.startswith("{")), lines


def test_no_progress_draws_no_bar_on_a_terminal(receiver):
    # --progress auto draws a bar on a terminal; --no-progress (the AWS CLI's flag) draws none.
    args = ["upload", "synthetic:2MiB:4", receiver + "quiet.bin", "--limit-rate", "2MiB"]
    status, text = run_on_terminal(args, 80)
    assert status == 0 and "%" in text, text
    status, text = run_on_terminal(args + ["--no-progress"], 80)
    assert status == 0 and "%" not in text and "\r" not in text.replace("\r\n", ""), text
    assert json.loads(text.strip().splitlines()[-1])["bytes"] == 2 << 20, text
