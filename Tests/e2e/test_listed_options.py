"""Every option a command lists is applied: each command's `--help`, as the binary prints it, is
walked, and every command that lists `--stall-timeout` or `--limit-rate` is run with it.

`--stall-timeout 1` against a server that accepts and never answers must end the command with
one "timed out" line: before, `s3 complete` and `s3 presign --multipart` listed the option and
ignored it (60 s an attempt, six attempts: the run's limit below ends such a run as a failure).
`--limit-rate` must be read by the command that lists it (a bad value is that command's usage
error). The list of commands comes from `sluice --help`; a command that lists either option and
has no case here fails the walk, so a new one cannot be missed."""

import json
import os
import re
import subprocess

import pytest

from conftest import run, sluice_bin
from test_hostile_cli import silent  # noqa: F401 (fixture: a server that accepts and never answers)


def spelled(command):
    """`command` as typed: an option that takes a value gets a placeholder (`--parts plan.json`)."""
    return [*command, "plan.json"] if command and command[-1] == "--parts" else list(command)


def help_text(*command):
    status, out, err = run(*spelled(command), "--help")
    assert status == 0, (command, err)
    return out.decode() + err


def commands_in_top_level_help():
    """`upload`, `s3 cp`, `upload --parts`, ...: each usage line of `sluice --help`, up to its
    first argument that is not a word or an option's name."""
    found = []
    for line in help_text().splitlines():
        match = re.match(r"^  ([a-z0-9]+(?: [a-z0-9]+)?)\b", line)
        if not match or match.group(1).split()[0] in ("usage",):
            continue
        words = match.group(1).split()
        # `s3 SUBCOMMAND` and `upload SOURCE` keep their first word only when the second is a placeholder.
        command = [words[0]] + ([words[1]] if len(words) > 1 and words[0] == "s3" else [])
        # The forms with their own usage: `upload --parts plan.json`, `s3 presign ... --multipart`.
        form = {"upload": "--parts", "s3 presign": "--multipart"}.get(" ".join(command))
        usage = line.split("  ")[1] if "  " in line.strip() else line
        if form and re.search(r" %s\b" % form, usage):
            command.append(form)
        if command not in found:
            found.append(command)
    return found


def environment(tmp_path, server):
    return dict(os.environ, AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="us-east-1",
                AWS_ENDPOINT_URL=server.url, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
                HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))


def plan(tmp_path, env):
    """A plan for an existing upload id, made without the network (`--upload-id`)."""
    proc = subprocess.run([sluice_bin(), "s3", "presign", "s3://bucket/k", "--multipart", "--size", "1000",
                           "--upload-id", "U1", "--checksum", "none"], capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "plan.json"
    path.write_bytes(proc.stdout)
    return path


def invocation(command, tmp_path, server, env):
    """The arguments that make `command` talk to `server` (a silent one) at once."""
    source = tmp_path / "f.bin"
    source.write_bytes(b"y" * 1000)
    name = " ".join(command)
    if name == "upload":
        return ["upload", str(source), server.url + "/sink"]
    if name == "upload --parts":
        # The plan's URLs point at the silent server (presigned for AWS_ENDPOINT_URL).
        return ["upload", "--parts", str(plan(tmp_path, env)), str(source), "--retries", "1"]
    if name == "tus":
        return ["tus", str(source), server.url + "/files/", "--retries", "1", "--state", str(tmp_path / "tus")]
    if name == "s3 cp":
        return ["s3", "cp", str(source), "s3://bucket/k", "--retries", "1"]
    if name == "s3 sync":
        return ["s3", "sync", str(tmp_path), "s3://bucket/p/", "--retries", "1", "--state", str(tmp_path / "state")]
    if name == "s3 abort":
        return ["s3", "abort", "s3://bucket/k"]
    if name == "s3 presign":
        return None  # signs locally: no request to bound
    if name == "s3 presign --multipart":
        return ["s3", "presign", "s3://bucket/k", "--multipart", "--size", "1000"]
    if name == "s3 complete":
        document = plan(tmp_path, env).read_text()
        upload = json.loads(document)["upload"]
        parts = tmp_path / "etags.json"
        parts.write_text(json.dumps({"version": json.loads(document)["version"], "upload": upload,
                                     "parts": [{"partNumber": 1, "eTag": "\"e1\""}]}))
        return ["s3", "complete", "s3://bucket/k", "--upload-id", upload["uploadId"], "--parts", str(parts)]
    raise AssertionError("no case for %r, which lists --stall-timeout or --limit-rate: add one" % name)


def listed(command):
    text = help_text(*command)
    return {option for option in ("--stall-timeout", "--limit-rate") if re.search(r"(?<![\w-])%s\b" % option, text)}


def test_the_walk_finds_the_commands_that_talk_to_servers():
    commands = [" ".join(command) for command in commands_in_top_level_help()]
    for expected in ("upload", "upload --parts", "tus", "s3 cp", "s3 sync", "s3 abort", "s3 presign --multipart", "s3 complete"):
        assert expected in commands, commands
        assert listed(expected.split()) == {"--stall-timeout", "--limit-rate"}, expected


@pytest.mark.parametrize("command", [" ".join(c) for c in commands_in_top_level_help()])
def test_a_listed_stall_timeout_is_applied(silent, tmp_path, command):
    command = command.split()
    if "--stall-timeout" not in listed(command):
        return
    env = environment(tmp_path, silent)
    args = invocation(command, tmp_path, silent, env)
    if args is None:
        return
    try:
        status, _, err = run_in(env, *args, "--stall-timeout", "1")
    except subprocess.TimeoutExpired:
        pytest.fail("%s --stall-timeout 1 against a silent server did not end within 120 s: the option was not applied" % " ".join(command))
    assert status == 1 and "timed out" in err and "127.0.0.1:%d" % silent.port in err, (status, err)


@pytest.mark.parametrize("command", [" ".join(c) for c in commands_in_top_level_help()])
def test_a_listed_limit_rate_is_read(tmp_path, command):
    command = command.split()
    if "--limit-rate" not in listed(command):
        return
    status, _, err = run(*spelled(command), "--limit-rate", "0", "placeholder")
    assert status == 2 and "--limit-rate" in err, (status, err)


def run_in(env, *args):
    """Runs sluice with `env`, for at most 120 s (a limit for a run that would otherwise wait
    six minutes, not a measure of how long it took)."""
    proc = subprocess.run([sluice_bin(), *args], capture_output=True, env=env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")
