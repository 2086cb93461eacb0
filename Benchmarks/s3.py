#!/usr/bin/env python3
"""Runs the S3 upload benchmark for Benchmarks/s3.sh: interleaved runs of each tool, medians
of wall time, CPU (user+sys) and peak RSS from /usr/bin/time, printed with ratios to sluice.

Environment (set by s3.sh): SLUICE_S3_URL, SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY,
SLUICE_S3_BUCKET (SeaweedFS) and SLUICE_S3_SINK_URL (the nginx sink)."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import urllib.request

MIB = 1 << 20


def parse_size(text):
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1000, "mb": 10**6, "gb": 10**9, "b": 1, "": 1}
    number = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return int(float(number) * units[text[len(number):].lower()])


def timed(command, env, stdin_path=None):
    """(wall s, cpu s, peak RSS MiB) of one run; raises when it fails. With stdin_path the
    command reads that file through a pipe (`cat F |`), as a stream of unknown length."""
    cat = subprocess.Popen(["cat", stdin_path], stdout=subprocess.PIPE) if stdin_path else None
    try:
        proc = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", *command], env=env,
                              stdin=cat.stdout if cat else subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600)
    finally:
        if cat:
            cat.stdout.close()
            cat.wait()
    err = proc.stderr.decode("utf-8", "replace")
    line = [l for l in err.splitlines() if l.startswith("TIME ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError("%s failed (%d): %s" % (command[0], proc.returncode, err[-600:]))
    _, wall, user, system, rss = line[-1].split()
    return float(wall), float(user) + float(system), int(rss) / 1024


def tools(args, endpoint, bucket, workdir, part_mib, concurrency):
    """name -> (command for a file path and key, environment)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base.update({"AWS_ACCESS_KEY_ID": args.access_key, "AWS_SECRET_ACCESS_KEY": args.secret_key, "AWS_REGION": "us-east-1",
                 "AWS_CONFIG_FILE": os.path.join(workdir, "aws-config"), "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                 "HOME": workdir})
    with open(os.path.join(workdir, "aws-config"), "w") as handle:
        handle.write("[default]\ns3 =\n  multipart_chunksize = %dMB\n  multipart_threshold = %dMB\n  max_concurrent_requests = %d\n"
                     "  addressing_style = path\n" % (part_mib, part_mib, concurrency))
    found = {
        "sluice": (lambda path, key: [args.sluice, "s3", "cp", path, "s3://%s/%s" % (bucket, key), "--endpoint-url", endpoint,
                                      "--part-size", "%dMiB" % part_mib, "--concurrency", str(concurrency), "--progress", "none",
                                      "--state", os.path.join(workdir, "state")]),
        # The AWS CLI's protection over http: each part's SHA-256 in a first pass (plus its
        # CRC32C): plain bodies, cheaper for a server than verifying aws-chunked signatures.
        "sluice-sha256": (lambda path, key: [args.sluice, "s3", "cp", path, "s3://%s/%s" % (bucket, key), "--endpoint-url", endpoint,
                                             "--part-size", "%dMiB" % part_mib, "--concurrency", str(concurrency), "--progress", "none",
                                             "--state", os.path.join(workdir, "state"), "--payload-signing", "sha256"]),
        "s5cmd": (lambda path, key: ["s5cmd", "--endpoint-url", endpoint, "cp", "--concurrency", str(concurrency),
                                     "--part-size", str(part_mib), path, "s3://%s/%s" % (bucket, key)]),
        "aws-cli": (lambda path, key: ["aws", "s3", "cp", path, "s3://%s/%s" % (bucket, key), "--endpoint-url", endpoint,
                                       "--no-progress", "--only-show-errors"]),
        "rclone": (lambda path, key: ["rclone", "copyto", path, ":s3:%s/%s" % (bucket, key), "--s3-provider", "Other",
                                      "--s3-endpoint", endpoint, "--s3-access-key-id", args.access_key,
                                      "--s3-secret-access-key", args.secret_key, "--s3-chunk-size", "%dM" % part_mib,
                                      "--s3-upload-concurrency", str(concurrency), "--s3-no-check-bucket", "--s3-no-head",
                                      "--s3-force-path-style=true", "--s3-upload-cutoff", "%dM" % part_mib, "--multi-thread-streams", "0", "-q",
                                      "--config", "/dev/null"]),
    }
    return {name: (command, base) for name, command in found.items()
            if name.startswith("sluice") or (shutil.which(command("x", "k")[0]) and name in args.tools.split(","))}


def medians(runs):
    """(wall, cpu, rss) medians of timed() results (and anything after them in each tuple)."""
    return tuple(statistics.median(r[i] for r in runs) for i in range(3))


def measured(results, names, width):
    """(name, runs) of each tool in names that has runs; a line saying `failed` for the others."""
    for name in names:
        if results.get(name):
            yield name, results[name]
        else:
            print("%-*s %10s" % (width, name, "failed"))


def table(title, results, names):
    print("\n%s" % title)
    print("%-14s %10s %10s %10s %10s %12s" % ("tool", "wall s", "MiB/s", "cpu s", "RSS MiB", "sluice is"))
    base = statistics.median(r[0] for r in results["sluice"]) if results.get("sluice") else None
    for name, runs in measured(results, names, 14):
        wall, cpu, rss = medians(runs)
        ratio = "%.2fx faster" % (wall / base) if base and name != "sluice" else ""
        print("%-14s %10.2f %10.0f %10.2f %10.1f %12s" % (name, wall, results["size"] / MIB / wall, cpu, rss, ratio))


def remover(args, endpoint, bucket):
    """Deletes an uploaded object between runs, so that SeaweedFS does not keep size x runs x
    tools on disk (boto3 is installed with the test peers)."""
    import boto3
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=args.access_key,
                          aws_secret_access_key=args.secret_key)
    def delete(key):
        client.delete_object(Bucket=bucket, Key=key)
        # A delete only marks the bytes as garbage: have the master scripts/peers.sh started
        # (SLUICE_WEED_MASTER) vacuum the volumes, or 4 GiB x runs x tools fill the disk.
        master = os.environ.get("SLUICE_WEED_MASTER")
        if master:
            urllib.request.urlopen("http://%s/vol/vacuum?garbageThreshold=0.01" % master, timeout=300).read()
    return delete


def throughput(args, title, endpoint, bucket, size, delete=None):
    path = os.path.join(args.workdir, "source-%d.bin" % size)
    if not os.path.exists(path):
        with open(path, "wb") as handle:
            block = os.urandom(4 * MIB)
            for _ in range(size // len(block)):
                handle.write(block)
            handle.write(block[: size % len(block)])
    found = tools(args, endpoint, bucket, args.workdir, 16, 8)
    results = {"size": size}
    for run in range(args.runs):
        for name, (command, env) in found.items():
            key = "bench/%s-%d" % (name, run)
            try:
                results.setdefault(name, []).append(timed(command(path, key), env))
            except RuntimeError as error:
                print("  %s" % error, file=sys.stderr)
            if delete:
                delete(key)
    table(title, results, list(found))


def rss(args):
    size = parse_size(args.rss_size)
    path = os.path.join(args.workdir, "source-%d.bin" % size)
    if not os.path.exists(path):
        with open(path, "wb") as handle:
            block = os.urandom(4 * MIB)
            for _ in range(size // len(block)):
                handle.write(block)
    parts = [int(part) for part in args.rss_parts.split(",")]
    print("\n(c) sluice peak RSS, %d MiB to the sink, concurrency 8 (goal: file < 64 MiB; stdin <= 9 x part + 32 MiB)" % (size // MIB))
    print("%-10s %12s %12s %14s" % ("part size", "file RSS", "stdin RSS", "stdin bound"))
    for part in parts:
        found = tools(args, os.environ["SLUICE_S3_SINK_URL"], "bench", args.workdir, part, 8)
        command, env = found["sluice"]
        file_rss = timed(command(path, "rss-file"), env)[2]
        stdin_rss = timed(command("-", "rss-stdin"), env, stdin_path=path)[2]
        print("%-10s %10.1f M %10.1f M %12d M" % ("%d MiB" % part, file_rss, stdin_rss, 9 * part + 32))
    if os.environ.get("SLUICE_S3_URL"):
        # A slow server: parts wait for their answers, so the pool is full the whole time.
        endpoint, bucket = os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"]
        delete = remover(args, endpoint, bucket)
        print("\n(c) sluice peak RSS, %d MiB from stdin to SeaweedFS, concurrency 8 (goal: <= 9 x part + 32 MiB)" % (size // MIB))
        print("%-10s %12s %10s %14s" % ("part size", "stdin RSS", "wall s", "stdin bound"))
        for part in [part for part in parts if part <= 64]:
            command, env = tools(args, endpoint, bucket, args.workdir, part, 8)["sluice"]
            wall, _, stdin_rss = timed(command("-", "rss-stdin"), env, stdin_path=path)
            delete("rss-stdin")
            print("%-10s %10.1f M %10.1f %12d M" % ("%d MiB" % part, stdin_rss, wall, 9 * part + 32))
    print("\n(c) sluice peak RSS by concurrency, %d MiB file to the sink, 5 MiB parts (goal: < 64 MiB)" % (size // MIB))
    print("%-12s %12s" % ("concurrency", "file RSS"))
    for concurrency in [1, 8, 32, 128, 256]:
        found = tools(args, os.environ["SLUICE_S3_SINK_URL"], "bench", args.workdir, 5, concurrency)
        command, env = found["sluice"]
        print("%-12d %10.1f M" % (concurrency, timed(command(path, "rss-file"), env)[2]))


def server_cpu(pid):
    """CPU seconds (user+sys) of a server process and every descendant (weed runs behind a
    pyenv shim and a Python wrapper), from /proc: what the server spent on a run."""
    if not pid:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    tree, total = {int(pid)}, 0
    grew = True
    while grew:
        grew = False
        for child, (parent, _) in stats.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return sum(stats[p][1] for p in tree if p in stats) / tick


def make_tree(root, count, size, big=()):
    """count files of size bytes under root, 100 to a directory (d000/f00000.bin ...), plus the
    sizes in big as big-N.bin at the top; random bytes (nothing compresses). Kept between runs."""
    marker = root + ".complete"  # beside the tree, not in it
    files = count + len(big)
    total = count * size + sum(big)
    if os.path.exists(marker):
        return files, total
    shutil.rmtree(root, ignore_errors=True)
    block = os.urandom(4 * MIB)
    for index in range(count):
        directory = os.path.join(root, "d%03d" % (index // 100))
        if index % 100 == 0:
            os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "f%05d.bin" % index), "wb") as handle:
            handle.write(os.urandom(size) if size <= 1 * MIB else block[:size])
    for number, length in enumerate(big):
        with open(os.path.join(root, "big-%d.bin" % number), "wb") as handle:
            for _ in range(length // len(block)):
                handle.write(block)
            handle.write(block[: length % len(block)])
    os.makedirs(root, exist_ok=True)
    with open(marker, "w") as handle:
        handle.write("%d %d\n" % (files, total))
    return files, total


def tree_tools(args, endpoint, bucket, workdir, part_mib, concurrency):
    """name -> (command for a directory and a key prefix ending in /, environment). Each tool
    gets the same part size and, as near as it allows, `concurrency` requests in flight."""
    _, base = tools(args, endpoint, bucket, workdir, part_mib, concurrency)["sluice"]
    found = {
        # One budget: --concurrency requests in flight across every file and part.
        "sluice": lambda path, prefix: [args.sluice, "s3", "cp", "--recursive", path, "s3://%s/%s" % (bucket, prefix),
                                        "--endpoint-url", endpoint, "--part-size", "%dMiB" % part_mib,
                                        "--concurrency", str(concurrency), "--progress", "none",
                                        "--state", os.path.join(workdir, "state")],
        # Each part's SHA-256 signed in the header, a plain body (as (a), (b)): with --tools sluice-sha256.
        "sluice-sha256": lambda path, prefix: found["sluice"](path, prefix) + ["--payload-signing", "sha256"],
        # --numworkers files at once (default 256), each with --concurrency parts at once.
        "s5cmd": lambda path, prefix: ["s5cmd", "--endpoint-url", endpoint, "--numworkers", str(concurrency), "cp",
                                       "--concurrency", str(concurrency), "--part-size", str(part_mib),
                                       os.path.join(path, "*"), "s3://%s/%s" % (bucket, prefix)],
        # max_concurrent_requests (aws-config, written by tools()) is one pool for every file and part.
        "aws-cli": lambda path, prefix: ["aws", "s3", "cp", "--recursive", path, "s3://%s/%s" % (bucket, prefix),
                                         "--endpoint-url", endpoint, "--no-progress", "--only-show-errors"],
        # --transfers files at once (default 4), each with --s3-upload-concurrency parts at once.
        "rclone": lambda path, prefix: ["rclone", "copy", path, ":s3:%s/%s" % (bucket, prefix.rstrip("/")),
                                        "--s3-provider", "Other", "--s3-endpoint", endpoint,
                                        "--s3-access-key-id", args.access_key, "--s3-secret-access-key", args.secret_key,
                                        "--s3-chunk-size", "%dM" % part_mib, "--s3-upload-cutoff", "%dM" % part_mib,
                                        "--s3-upload-concurrency", str(concurrency), "--transfers", str(concurrency),
                                        "--s3-no-check-bucket", "--s3-no-head", "--s3-force-path-style=true",
                                        "--multi-thread-streams", "0", "-q", "--config", "/dev/null"]
        # The sink answers every PutObject with the empty body's MD5 as ETag, which rclone
        # checks against the file's; SeaweedFS's are right and rclone checks them there.
        + (["--ignore-checksum"] if endpoint == os.environ.get("SLUICE_S3_SINK_URL") else []),
    }
    return {name: (command, base) for name, command in found.items()
            if name == "sluice" or (shutil.which(command("x", "k/")[0]) and name in args.tools.split(","))}


def s3_client(args, endpoint):
    import boto3
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=args.access_key,
                        aws_secret_access_key=args.secret_key)


def weed_check_and_delete(args, endpoint, bucket):
    """(objects, bytes) under a prefix on SeaweedFS, then every one of them deleted and the
    volumes vacuumed, so that the next tool starts on the same (empty) store."""
    client = s3_client(args, endpoint)
    def check(prefix):
        keys, total = [], 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                keys.append(item["Key"])
                total += item["Size"]
        for start in range(0, len(keys), 1000):
            client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]],
                                                         "Quiet": True})
        master = os.environ.get("SLUICE_WEED_MASTER")
        if master:
            urllib.request.urlopen("http://%s/vol/vacuum?garbageThreshold=0.01" % master, timeout=600).read()
        return len(keys), total
    return check


def sink_counter():
    """Objects the sink stored: the lines of its objects log (one per PutObject and one per
    CompleteMultipartUpload; s3.sh's config), counted since the last call."""
    path = os.path.join(os.environ["SLUICE_S3_SINK_DIR"], "logs", "objects.log")
    seen = [0]
    def count(prefix=None):
        try:
            with open(path, "rb") as handle:
                lines = handle.read().count(b"\n")
        except FileNotFoundError:
            lines = 0
        new, seen[0] = lines - seen[0], lines
        return new
    count()
    return count


def tree_table(title, results, names, files, total, server):
    print("\n%s" % title)
    print("%-10s %9s %9s %9s %9s %9s %11s %10s  %s" % ("tool", "objects/s", "MiB/s", "wall s", "cpu s", "RSS MiB",
                                                       "server cpu", "objects", "vs sluice"))
    base = results.get("sluice")
    for name, runs in measured(results, names, 10):
        wall, cpu, rss = medians(runs)
        scpu = [r[3] for r in runs if r[3] is not None]
        stored = "/".join(str(r[4]) for r in runs)
        ratio = ""
        if base and name != "sluice":
            bwall, bcpu, _ = medians(base)
            ratio = "sluice %.2fx the objects/s, %.2fx the CPU" % (wall / bwall, bcpu / cpu)
        print("%-10s %9.0f %9.1f %9.2f %9.2f %9.1f %11s %10s  %s" % (
            name, files / wall, total / MIB / wall, wall, cpu, rss,
            "%.2f" % statistics.median(scpu) if scpu else "-", stored, ratio))
    print("(objects: as stored %s, of %d files; server cpu: %s's user+sys during the run)" % (
        "and listed back" if server == "SeaweedFS" else "by the sink's objects log", files, server))


def tree(args, step, title, endpoint, bucket, count, size, big, check, server_pid, server):
    root = os.path.join(args.tree_dir or args.workdir, "tree-%s-%dx%d-%s" % (
        step, count, size, "-".join(str(b) for b in big) or "0"))
    files, total = make_tree(root, count, size, big)
    found = tree_tools(args, endpoint, bucket, args.workdir, 16, args.tree_concurrency)
    results = {}
    for run in range(args.tree_runs):
        for name, (command, env) in found.items():
            prefix = "tree-%s/%s-%d/" % (step, name, run)
            before = server_cpu(server_pid)
            try:
                wall, cpu, rss = timed(command(root, prefix), env)
            except RuntimeError as error:
                print("  %s" % error, file=sys.stderr)
                check(prefix)
                continue
            after = server_cpu(server_pid)
            stored = check(prefix)
            objects = stored[0] if isinstance(stored, tuple) else stored
            if objects != files:
                print("  %s stored %s objects of %d files" % (name, stored, files), file=sys.stderr)
            results.setdefault(name, []).append((wall, cpu, rss, after - before if before is not None else None, objects))
            print("  %s run %d: %.2f s, %d objects" % (name, run, wall, objects), file=sys.stderr, flush=True)
    tree_table("%s, %d files, %.0f MiB, part 16 MiB, %d requests in flight%s" % (
        title, files, total / MIB, args.tree_concurrency, ", medians of %d" % args.tree_runs if args.tree_runs > 1 else ""),
        results, list(found), files, total, server)
    # What each file costs the kernel (issue 37, item 11: a trip to a thread pool is futex calls).
    for name, (command, env) in found.items():
        prefix = "tree-%s/%s-strace/" % (step, name)
        counted = syscalls_per_file(command(root, prefix), env, files)
        check(prefix)
        if counted:
            print("%-10s futex %.1f a file, stat %.1f a file (one more run under strace -f -c)" % (name, counted[0], counted[1]))


def syscalls_per_file(command, env, files):
    """futex and stat calls per file of one more run under `strace -f -c` (every thread), or
    None when strace is missing or the run fails. The stat calls are every kind the C library
    makes (statx, newfstatat for stat/lstat/fstat, and the older ones)."""
    if not shutil.which("strace"):
        return None
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "sluice-strace-%d.txt" % os.getpid())
    traced = ["strace", "-f", "-c", "-o", out, "-e", "trace=futex,statx,newfstatat,fstat,lstat,stat", *command]
    proc = subprocess.run(traced, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if proc.returncode != 0 or not os.path.exists(out):
        return None
    counts = {}
    with open(out) as handle:
        for line in handle:
            fields = line.split()
            if len(fields) >= 5 and fields[-1] in ("futex", "statx", "newfstatat", "fstat", "lstat", "stat"):
                counts[fields[-1]] = int(fields[3])
    os.unlink(out)
    futex = counts.get("futex", 0)
    stats = sum(v for k, v in counts.items() if k != "futex")
    return futex / files, stats / files


def scaled(args, count):
    return max(1, int(round(count * args.tree_scale)))


def tree_steps(args, only):
    files = args.tree_files
    big = [parse_size(b) for b in args.tree_big.split(",") if b]
    big = [max(MIB, int(b * args.tree_scale)) for b in big]
    targets = []
    servers = args.tree_servers.split(",")
    if os.environ.get("SLUICE_S3_URL") and "weed" in servers:
        targets.append(("SeaweedFS", os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"],
                        weed_check_and_delete(args, os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"]),
                        os.environ.get("SLUICE_WEED_PID")))
    if "sink" in servers:
        targets.append(("the sink", os.environ["SLUICE_S3_SINK_URL"], "bench", sink_counter(),
                        os.environ.get("SLUICE_S3_SINK_PID")))
    for server, endpoint, bucket, check, pid in targets:
        if "d" in only:
            tree(args, "d", "(d) small files to %s" % server, endpoint, bucket, scaled(args, files), parse_size(args.tree_small),
                 [], check, pid, server)
        if "e" in only:
            tree(args, "e", "(e) 1 MiB files and large ones to %s" % server, endpoint, bucket, scaled(args, files // 10),
                 MIB, big, check, pid, server)


def many_files_rss(args):
    """(f) sluice's peak RSS for one job of many small files to the sink (goal: < 100 MiB)."""
    count, size = args.rss_files, parse_size(args.rss_file_size)
    root = os.path.join(args.tree_dir or args.workdir, "tree-f-%dx%d-0" % (count, size))
    files, total = make_tree(root, count, size)
    found = tree_tools(args, os.environ["SLUICE_S3_SINK_URL"], "bench", args.workdir, 16, args.tree_concurrency)
    count_objects = sink_counter()
    print("\n(f) peak RSS, one job of %d files of %d bytes to the sink, %d requests in flight (goal for sluice: < 100 MiB)"
          % (files, size, args.tree_concurrency))
    print("%-10s %9s %9s %9s %9s %10s" % ("tool", "RSS MiB", "wall s", "cpu s", "objects/s", "objects"))
    for name in ["sluice"] + [t for t in args.rss_tools.split(",") if t and t != "sluice"]:
        if name not in found:
            continue
        command, env = found[name]
        try:
            wall, cpu, rss = timed(command(root, "tree-f/%s/" % name), env)
        except RuntimeError as error:
            print("  %s" % error, file=sys.stderr)
            continue
        print("%-10s %9.1f %9.2f %9.2f %9.0f %10d" % (name, rss, wall, cpu, files / wall, count_objects()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--size", default="4GiB")
    parser.add_argument("--sink-size", default="4GiB")
    parser.add_argument("--rss-size", default="2GiB")
    parser.add_argument("--rss-parts", default="8,64,512", help="part sizes in MiB for (c)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="a,b,c")
    parser.add_argument("--tools", default="s5cmd,aws-cli,rclone", help="the peers to run besides sluice")
    parser.add_argument("--tree-files", type=int, default=10000, help="(d) files; (e) has a tenth of them")
    parser.add_argument("--tree-small", default="16KiB", help="(d) file size")
    parser.add_argument("--tree-big", default="1GiB,1GiB", help="(e) the large files besides the 1 MiB ones")
    parser.add_argument("--tree-scale", type=float, default=1.0, help="(d), (e): multiplies the counts and the large sizes")
    parser.add_argument("--tree-runs", type=int, default=1)
    parser.add_argument("--tree-concurrency", type=int, default=8)
    parser.add_argument("--tree-servers", default="weed,sink", help="(d), (e): SeaweedFS (weed), the sink, or both")
    parser.add_argument("--tree-dir", default=None, help="where the trees are made and kept (default: the workdir)")
    parser.add_argument("--rss-files", type=int, default=100000, help="(f) files in the job")
    parser.add_argument("--rss-file-size", default="1KiB", help="(f) file size")
    parser.add_argument("--rss-tools", default="sluice", help="(f) tools, e.g. sluice,s5cmd")
    args = parser.parse_args()
    args.access_key = os.environ["SLUICE_S3_ACCESS_KEY"]
    args.secret_key = os.environ["SLUICE_S3_SECRET_KEY"]
    only = set(args.only.split(","))
    if "a" in only:
        throughput(args, "(a) to SeaweedFS, %s, 16 MiB parts x 8, medians of %d" % (args.size, args.runs),
                   os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"], parse_size(args.size),
                   delete=remover(args, os.environ["SLUICE_S3_URL"], os.environ["SLUICE_S3_BUCKET"]))
    if "b" in only:
        throughput(args, "(b) to the nginx sink (canned XML, bodies dropped), %s, 16 MiB parts x 8, medians of %d"
                   % (args.sink_size, args.runs), os.environ["SLUICE_S3_SINK_URL"], "bench", parse_size(args.sink_size))
    if "c" in only:
        rss(args)
    if only & {"d", "e"}:
        tree_steps(args, only)
    if "f" in only:
        many_files_rss(args)


if __name__ == "__main__":
    main()
