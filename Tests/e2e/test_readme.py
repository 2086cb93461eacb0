"""Every shell command in README.md, run against the test peers, so the README cannot rot.

The README's ```sh blocks run in order, each in `bash -euo pipefail`, in one temporary directory
(with HOME there too, so no resume state or ~/.aws leaks in or out), with the sluice under test
first on PATH; exported variables carry from one block to the next. A ```text block right after a
```sh block is its output: every line of it must appear, in order, in what the block printed
(stdout and stderr together), once numbers, hashes and checksums are masked. An HTML comment
`<!-- readme-test ... -->` in the README source says what cannot run here as written:

    setup: COMMAND                       run before the first block
    replace: WRITTEN => RUN  # why       WRITTEN in a block runs as RUN ($VARS from the peers'
                                         environment); the peers' values are written back in output
    exclude: COMMAND LINE  # why         that line of a block is not run
    <!-- readme-test exit N -->          the next block must exit with N (default 0)
    <!-- readme-test server URL: why --> the next block's last line starts a server: it runs
                                         in the background with --port 0 (the lines before it
                                         first), and the address it prints replaces URL in the
                                         blocks after it

Every replace and exclude must name its reason and must match text in a block, so a stale one
fails the test. Every fenced block must say its language (sh, text, swift), so no command hides
in an untagged block.
"""

import os
import re
import shlex
import subprocess

import pytest

from conftest import REPO, sluice_bin, stop

README = os.path.join(REPO, "README.md")
BLOCK_TIMEOUT = 300

FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[ \t]*$")
DIRECTIVE = re.compile(r"<!--\s*readme-test\b(.*?)-->", re.S)


class Block:
    def __init__(self, language, text, line, directives):
        self.language = language
        self.text = text
        self.line = line
        self.directives = directives  # the per-block comments just before it
        self.output = None  # the ```text block right after it


def parse(path=README):
    """(blocks, global directive lines) of the README."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    lines = source.split("\n")
    blocks, pending, fence, body, start = [], [], None, [], 0
    offset = 0
    line_offsets = []
    for line in lines:
        line_offsets.append(offset)
        offset += len(line) + 1
    comments = [(source.count("\n", 0, m.start()), m.group(1).strip()) for m in DIRECTIVE.finditer(source)]
    global_lines, per_block = [], {}
    for at, text in comments:
        if "\n" in text or text.startswith(("setup:", "replace:", "exclude:")):
            global_lines.extend(raw.strip() for raw in text.split("\n") if raw.strip())
        else:
            per_block[at] = text
    last_block_end = -1
    for number, line in enumerate(lines):
        match = FENCE.match(line)
        if fence is None and match:
            fence, body, start = match.group(1), [], number
            pending = [text for at, text in per_block.items() if last_block_end < at < number]
            continue
        if fence is not None and line.strip() == "```":
            block = Block(fence, "\n".join(body), start + 1, pending)
            between = lines[last_block_end + 1:start] if blocks else []
            if (fence == "text" and blocks and blocks[-1].language == "sh"
                    and all(not text.strip() for text in between)):
                blocks[-1].output = block
            blocks.append(block)
            fence, last_block_end = None, number
            continue
        if fence is not None:
            body.append(line)
    assert fence is None, "README.md: a code block opened at line %d is never closed" % (start + 1)
    return blocks, global_lines


def rules(global_lines):
    setup, replaces, excludes = [], [], []
    for line in global_lines:
        kind, _, rest = line.partition(":")
        rest = rest.strip()
        if kind == "setup":
            setup.append(rest)
        elif kind in ("replace", "exclude"):
            body, _, why = rest.partition("  # ")
            assert why.strip(), "README.md readme-test %s without a reason: %r" % (kind, line)
            if kind == "replace":
                written, _, run = body.partition(" => ")
                assert run, "README.md readme-test replace needs WRITTEN => RUN: %r" % line
                replaces.append((written.strip(), run.strip()))
            else:
                excludes.append(body.strip())
        elif kind.strip():
            # Free text explaining the comment: only lines starting with a known word act.
            continue
    return setup, replaces, excludes


def logical_lines(text):
    """The block's lines with backslash continuations joined."""
    out, current = [], ""
    for line in text.split("\n"):
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current:
        out.append(current)
    return out


MASKS = [
    (re.compile(r"[0-9a-f]{16,}(_[0-9a-f]{16,})?"), "<hex>"),
    (re.compile(r"[A-Za-z0-9+/]{6}=="), "<crc>"),
    (re.compile(r"\d+(\.\d+)?"), "<n>"),
]


def masked(line):
    for pattern, mask in MASKS:
        line = pattern.sub(mask, line)
    return line.rstrip()


def expand(value, env):
    return re.sub(r"\$([A-Z_][A-Z0-9_]*)", lambda m: env[m.group(1)], value)


@pytest.fixture(scope="module")
def readme():
    return parse()


def test_every_block_is_tagged_and_the_directives_name_reasons(readme):
    blocks, global_lines = readme
    untagged = [block.line for block in blocks if not block.language]
    assert not untagged, "README.md: code blocks without a language at lines %s" % untagged
    setup, replaces, excludes = rules(global_lines)
    assert setup and replaces and excludes, global_lines
    shell = "\n".join(block.text for block in blocks if block.language == "sh")
    for written, _ in replaces:
        assert written in shell, "README.md: readme-test replaces %r, which no sh block holds" % written
    for line in excludes:
        assert line in [text.strip().split("  #")[0].strip() for text in logical_lines(shell)], \
            "README.md: readme-test excludes %r, which is no command line of an sh block" % line
    for block in blocks:
        for directive in block.directives:
            assert re.fullmatch(r"exit \d+|server \S+: .+", directive), \
                "README.md line %d: unknown readme-test directive %r" % (block.line, directive)


def test_ci_runs_the_readme_test_command(readme):
    """The README's second opening command is what CI runs."""
    blocks, _ = readme
    first = [line.split("#")[0].strip() for line in blocks[0].text.split("\n")]
    assert first[:2] == ["swift run -c release sluice demo", "bash scripts/test.sh"], first
    with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as handle:
        ci = handle.read()
    assert re.search(r"^exec bash scripts/test\.sh\s*$", ci, re.M), ci


def test_every_shell_command_in_the_readme_runs(readme, tmp_path):
    blocks, global_lines = readme
    setup, replaces, excludes = rules(global_lines)
    peers = {name: os.environ.get(name) for name in
             ("SLUICE_TUS_URL", "SLUICE_S3_URL", "SLUICE_S3_ACCESS_KEY", "SLUICE_S3_SECRET_KEY",
              "SLUICE_S3_BUCKET")}
    missing = [name for name, value in peers.items() if not value]
    if missing:
        pytest.skip("%s not set: run through scripts/test.sh" % ", ".join(missing))
    # The peers' values (and a server's address) are written back in output: `written_back`.
    values = [(written, expand(run, peers)) for written, run in replaces if "$" in run]
    replaces = [(written, expand(run, peers)) for written, run in replaces]

    work = tmp_path / "readme"
    work.mkdir()
    env = {
        "PATH": os.path.dirname(sluice_bin()) + os.pathsep + os.environ["PATH"],
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "TMPDIR": str(tmp_path),
    }
    exports = tmp_path / "exports.sh"
    exports.write_text("")
    servers = []

    def shell(script, timeout=BLOCK_TIMEOUT):
        wrapped = "source %s\n%s\nexport -p > %s\n" % (shlex.quote(str(exports)), script,
                                                        shlex.quote(str(exports)))
        return subprocess.run(["bash", "-euo", "pipefail", "-c", wrapped], cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)

    def rewrite(text):
        kept = []
        for line in logical_lines(text):
            if line.split("  #")[0].strip() in excludes:
                continue
            kept.append(line)
        script = "\n".join(kept)
        for written, run in replaces:
            script = script.replace(written, run)
        return script

    def written_back(output):
        for written, run in sorted(values, key=lambda pair: -len(pair[1])):
            output = output.replace(run.rstrip("/"), written.rstrip("/"))
        return output

    result = shell("\n".join(setup))
    assert result.returncode == 0, result.stdout.decode(errors="replace")
    ran = 0
    try:
        for block in blocks:
            if block.language != "sh":
                continue
            directives = dict(d.split(" ", 1) for d in block.directives)
            script = rewrite(block.text)
            if "server" in directives:
                url = re.match(r"(\S+?):? ", directives["server"] + " ").group(1)
                before, _, command = script.strip().rpartition("\n")
                if before.strip():
                    result = shell(before)
                    assert result.returncode == 0, result.stdout.decode(errors="replace")
                port = "--port %s" % url.rsplit(":", 1)[1]
                assert port in command, "README.md line %d: the server's line names no %s" % (block.line, port)
                command = command.replace(port, "--port 0")
                proc = subprocess.Popen(["bash", "-c", "exec " + command], cwd=work, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                servers.append(proc)
                first = proc.stdout.readline().decode()
                announced = re.match(r"listening on (http://\S+?)/?$", first.strip())
                assert announced, "README.md line %d: the server printed %r" % (block.line, first)
                if block.output is not None:
                    expected = block.output.text.replace(url, "<server>").strip()
                    assert masked(first.strip().replace(announced.group(1), "<server>")) == masked(expected)
                replaces.append((url, announced.group(1)))
                values.append((url, announced.group(1)))
                ran += 1
                continue
            if not script.strip():
                continue
            result = shell(script)
            output = written_back(result.stdout.decode("utf-8", "replace"))
            want = int(directives.get("exit", "0"))
            assert result.returncode == want, \
                "README.md block at line %d exited %d, not %d:\n%s\n--- output:\n%s" % (
                    block.line, result.returncode, want, script, output)
            if block.output is not None:
                got = [masked(line) for line in output.replace("}", "}\n").split("\n") if line.strip()]
                position = 0
                for line in block.output.text.split("\n"):
                    if not line.strip():
                        continue
                    needle = masked(line)
                    while position < len(got) and got[position] != needle:
                        position += 1
                    assert position < len(got), \
                        "README.md block at line %d: the output shown has\n  %s\nwhich the run did not print (in order):\n%s" % (
                            block.line, line, output)
                    position += 1
            ran += 1
    finally:
        for proc in servers:
            stop(proc)
    assert ran >= 8, "only %d README blocks ran" % ran
