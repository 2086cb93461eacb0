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


def table(title, results, names):
    print("\n%s" % title)
    print("%-14s %10s %10s %10s %10s %12s" % ("tool", "wall s", "MiB/s", "cpu s", "RSS MiB", "sluice is"))
    base = statistics.median(r[0] for r in results["sluice"]) if results.get("sluice") else None
    for name in names:
        runs = results.get(name)
        if not runs:
            print("%-14s %10s" % (name, "failed"))
            continue
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = statistics.median(r[2] for r in runs)
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


if __name__ == "__main__":
    main()
