"""A person's terminal, driven through tmux: an 80x24 pane with a shell in it, as someone at a
shell sees sluice. Every byte sluice writes to the pane is kept (`tmux pipe-pane`), and the
pane's screen and history are read once the command ended (`capture-pane`): a progress bar was
drawn, no redraw was wider than the pane (a wider one wraps and leaves a line behind), and no
bar is left among the lines once it ended; the response body of `upload` stands whole. The
command signals a tmux channel when it ends: the test waits on that, never on time."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid

import pytest

from conftest import sluice_bin
from test_s3_cli import BUCKET, env, s3, weed  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/peers.sh installs it)")

# A bar as sluice draws it: a percentage, or files counted, with a rate.
BAR = re.compile(r"(\d+\.\d% |\d+/~?\d+ files).*B/s")


class Pane:
    """An 80x24 tmux pane running bash, on a tmux server of its own (its socket named for the test)."""

    def __init__(self, directory, environment):
        self.directory = directory
        self.socket = "sluice-%s" % uuid.uuid4().hex[:8]
        config = os.path.join(directory, "tmux.conf")
        with open(config, "w") as handle:
            handle.write("set -g history-limit 20000\nset -g status off\n")
        self.tmux = ["tmux", "-L", self.socket, "-f", config]
        environment = dict(environment, TERM="xterm-256color", PS1="$ ")
        subprocess.run(self.tmux + ["new-session", "-d", "-x", "80", "-y", "24", "-s", "t", "bash --norc --noprofile"],
                       env=environment, cwd=directory, check=True, timeout=60)
        self.raw = os.path.join(directory, "pane.raw")
        subprocess.run(self.tmux + ["pipe-pane", "-o", "-t", "t", "cat >> %s" % self.raw], check=True, timeout=60)

    def run(self, script):
        """Runs `script` (written to a file, so the line typed is short) in the pane; the pane's
        history and screen once it ended, and every byte the pane was sent meanwhile."""
        path = os.path.join(self.directory, "step-%s.sh" % uuid.uuid4().hex[:8])
        with open(path, "w") as handle:
            handle.write(script)
        channel = "done-%s" % uuid.uuid4().hex[:8]
        start = os.path.getsize(self.raw) if os.path.exists(self.raw) else 0
        subprocess.run(self.tmux + ["send-keys", "-t", "t", "bash %s; tmux -L %s wait-for -S %s" % (path, self.socket, channel),
                                    "Enter"], check=True, timeout=60)
        subprocess.run(self.tmux + ["wait-for", channel], check=True, timeout=900)
        screen = subprocess.run(self.tmux + ["capture-pane", "-p", "-t", "t", "-S", "-"], capture_output=True, check=True,
                                timeout=60).stdout.decode("utf-8", "replace")
        joined = subprocess.run(self.tmux + ["capture-pane", "-p", "-J", "-t", "t", "-S", "-"], capture_output=True, check=True,
                                timeout=60).stdout.decode("utf-8", "replace")
        with open(self.raw, "rb") as handle:
            handle.seek(start)
            raw = handle.read().decode("utf-8", "replace")
        return screen, joined, raw

    def close(self):
        subprocess.run(self.tmux + ["kill-server"], timeout=60)


@pytest.fixture
def pane(tmp_path, env):
    environment = dict(env, PATH=os.path.dirname(sluice_bin()) + os.pathsep + os.environ.get("PATH", ""))
    made = Pane(str(tmp_path), environment)
    try:
        yield made
    finally:
        made.close()


def drawn_bars(raw):
    """Each bar drawn: the text after each carriage return that looks like a bar, escape
    sequences taken out."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    return [segment.split("\n")[0] for segment in plain.split("\r") if BAR.search(segment.split("\n")[0])]


def assert_fits(screen, raw):
    bars = drawn_bars(raw)
    assert bars, "no progress bar was drawn:\n" + raw[-2000:]
    assert max(len(bar) for bar in bars) <= 80, max(bars, key=len)
    # Once the command ended, at most the last bar stays (its final state); no stale lines.
    left = [line for line in screen.splitlines() if BAR.search(line)]
    assert len(left) <= 1, "\n".join(left)


def test_a_one_gib_copy_leaves_no_stale_progress_lines(pane, s3):
    key = "tmux-%s" % uuid.uuid4().hex[:8]
    screen, _, raw = pane.run("sluice s3 cp synthetic:1GiB:3 s3://%s/%s --part-size 16MiB\n" % (BUCKET, key))
    assert "upload: synthetic:1GiB:3 to s3://%s/%s" % (BUCKET, key) in screen, screen
    assert "sluice: uploaded" in screen, screen
    assert_fits(screen, raw)
    assert s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"] == 1 << 30


def test_a_tree_copy_leaves_no_stale_progress_lines(pane, s3, tmp_path):
    root = tmp_path / "tree"
    for index in range(40):
        (root / ("d%d" % (index % 4))).mkdir(parents=True, exist_ok=True)
        with open(root / ("d%d" % (index % 4)) / ("f%02d" % index), "wb") as handle:
            handle.write(os.urandom((8 << 20) if index % 10 == 0 else 4096))
    prefix = "tmux-tree-%s/" % uuid.uuid4().hex[:8]
    screen, _, raw = pane.run("sluice s3 cp -r tree s3://%s/%s\n" % (BUCKET, prefix))
    assert "40 files sent" in screen, screen
    assert_fits(screen, raw)
    # Each per-file line stands whole on its own line: 40 of them, none broken by a bar.
    told = [line for line in pane.run("true\n")[1].splitlines() if line.startswith("upload: tree/")]
    assert len(told) == 40 and all(re.fullmatch(r"upload: tree/d\d/f\d\d to s3://\S+/d\d/f\d\d", line) for line in told), told


def test_the_response_body_of_upload_stands_whole(pane, receiver, tmp_path):
    body = os.urandom(64 << 20)
    with open(tmp_path / "big.bin", "wb") as handle:
        handle.write(body)
    _, joined, raw = pane.run("sluice upload big.bin %sbig.bin\n" % receiver)
    assert drawn_bars(raw), raw[-2000:]
    answers = [line for line in joined.splitlines() if line.startswith("{")]
    assert len(answers) == 1, joined
    answer = json.loads(answers[0][:answers[0].rindex("}") + 1])
    assert answer["sha256"] == hashlib.sha256(body).hexdigest() and answer["bytes"] == len(body), answer
