#!/usr/bin/env python3
"""Runs the copy benchmark for Benchmarks/copies.sh: objects copied by the store on one SeaweedFS,
`sluice s3 cp` against `aws s3 cp`, `s5cmd cp` and `rclone copyto`/`copy`.

(o) one object of --size copied within the bucket (16 MiB parts x --concurrency);
(p) a prefix of --objects objects copied below another prefix.
Each run's copy is checked (its size, or the count of objects listed back) and deleted before
the next; interleaved runs, medians, sluice's wall and CPU as ratios to each peer's.

Environment (from copies.sh): SLUICE_S3_URL, SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY,
SLUICE_S3_BUCKET."""
import argparse
import os
import statistics
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sync import real_binary, timed  # noqa: E402

MIB = 1 << 20


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.lower().rstrip("ib").rstrip("b")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


class Tools:
    def __init__(self, args):
        self.args = args
        self.endpoint = os.environ["SLUICE_S3_URL"]
        self.bucket = os.environ["SLUICE_S3_BUCKET"]
        self.key_id, self.secret = os.environ["SLUICE_S3_ACCESS_KEY"], os.environ["SLUICE_S3_SECRET_KEY"]
        self.s5cmd, self.rclone = real_binary("s5cmd"), real_binary("rclone")
        config = os.path.join(args.workdir, "aws-config")
        with open(config, "w") as handle:
            handle.write("[default]\ns3 =\n  max_concurrent_requests = %d\n  multipart_chunksize = 16MB\n"
                         "  multipart_threshold = 16MB\n  addressing_style = path\n" % args.concurrency)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.env.update({"AWS_ACCESS_KEY_ID": self.key_id, "AWS_SECRET_ACCESS_KEY": self.secret, "AWS_REGION": "us-east-1",
                         "AWS_CONFIG_FILE": config, "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "HOME": args.workdir})
        import boto3
        self.s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key_id,
                               aws_secret_access_key=self.secret, region_name="us-east-1")

    def names(self):
        have = {"aws-cli": True, "s5cmd": bool(self.s5cmd), "rclone": bool(self.rclone)}
        base = ["sluice-base"] if self.args.base else []
        return ["sluice"] + base + [t for t in self.args.tools.split(",") if have.get(t)]

    def binary(self, name):
        """sluice's binary, or with --base, the one of the build compared against (`sluice-base`)."""
        return self.args.base if name == "sluice-base" else self.args.sluice

    def command(self, name, source, destination, recursive):
        """`source` and `destination`: keys (recursive: prefixes ending in /)."""
        c = str(self.args.concurrency)
        src, dst = "s3://%s/%s" % (self.bucket, source), "s3://%s/%s" % (self.bucket, destination)
        if name in ("sluice", "sluice-base"):
            return ([self.binary(name), "s3", "cp", src, dst, "--endpoint-url", self.endpoint, "--progress", "none",
                     "--concurrency", c, "--part-size", "16MiB"] + (["--recursive"] if recursive else []))
        if name == "aws-cli":
            return ([sys.executable, "-m", "awscli", "s3", "cp", src, dst, "--endpoint-url", self.endpoint, "--no-progress",
                     "--only-show-errors"] + (["--recursive"] if recursive else []))
        if name == "s5cmd":
            return [self.s5cmd, "--endpoint-url", self.endpoint, "--numworkers", c, "cp", "--concurrency", c, "--part-size", "16",
                    src + ("*" if recursive else ""), dst]
        if name == "rclone":
            remote = ":s3:%s/" % self.bucket
            return [self.rclone, "copy" if recursive else "copyto", remote + source.rstrip("/"), remote + destination.rstrip("/"),
                    "--s3-provider", "Other", "--s3-endpoint", self.endpoint, "--s3-access-key-id", self.key_id,
                    "--s3-secret-access-key", self.secret, "--s3-force-path-style=true", "--s3-no-check-bucket",
                    "--s3-copy-cutoff", "16M", "--s3-upload-concurrency", c, "--transfers", c, "--checkers", c, "-q",
                    "--config", "/dev/null"]
        raise ValueError(name)

    def streamed(self, name, source, destination):
        """One object copied between two endpoint names of one SeaweedFS (127.0.0.1 and
        localhost): two stores to each tool, so the bytes go through it."""
        other = self.endpoint.replace("127.0.0.1", "localhost")
        c = str(self.args.concurrency)
        if name in ("sluice", "sluice-base"):
            return [self.binary(name), "s3", "cp", "s3://%s/%s" % (self.bucket, source), "s3://%s/%s" % (self.bucket, destination),
                    "--endpoint-url", other, "--source-endpoint-url", self.endpoint, "--progress", "none", "--concurrency", c,
                    "--part-size", "16MiB", "--state", os.path.join(self.args.workdir, "state-x-" + name)]
        if name == "rclone":
            return [self.rclone, "copyto", ":s3,endpoint='%s':%s/%s" % (self.endpoint, self.bucket, source),
                    ":s3,endpoint='%s':%s/%s" % (other, self.bucket, destination), "--s3-provider", "Other",
                    "--s3-access-key-id", self.key_id, "--s3-secret-access-key", self.secret, "--s3-force-path-style=true",
                    "--s3-no-check-bucket", "--s3-chunk-size", "16M", "--s3-upload-cutoff", "16M", "--s3-upload-concurrency", c,
                    "--multi-thread-streams", "0", "-q", "--config", "/dev/null"]
        return None

    def keys(self, prefix):
        found = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            found += [(item["Key"], item["Size"]) for item in page.get("Contents", [])]
        return found

    def delete(self, prefix):
        keys = [key for key, _ in self.keys(prefix)]
        for start in range(0, len(keys), 1000):
            self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]], "Quiet": True})


def run(args, tools, title, source, recursive, expected, streamed=False):
    names = [name for name in tools.names() if not streamed or tools.streamed(name, "s", "d")]
    results = {name: [] for name in names}
    for round in range(args.runs):
        # Rotated each round: the first copy of a round meets the store still freeing the last
        # round's deleted copies (SeaweedFS: seconds for 2 GiB), which must not fall on one tool.
        for name in names[round % len(names):] + names[:round % len(names)]:
            destination = "copy-%s-%s/" % (name, uuid.uuid4().hex[:8])
            target = destination if recursive else destination + "object"
            command = tools.streamed(name, source, target) if streamed else tools.command(name, source, target, recursive)
            wall, cpu, rss, status, tail = timed(command, tools.env, args.timeout)
            copied = tools.keys(destination)
            ok = status == 0 and (len(copied), sum(size for _, size in copied)) == expected
            if not ok:
                print("  %s: exit %s, %d objects of %d bytes (expected %s): %s" % (name, status, len(copied),
                      sum(size for _, size in copied), expected, tail.strip()[-300:]))
            results[name].append((wall, cpu, rss) if ok else None)
            tools.delete(destination)
    print("\n%s" % title)
    print("  %-11s %10s %10s %10s %12s %12s" % ("tool", "wall s", "CPU s", "peak MiB", "wall ratio", "CPU ratio"))
    medians = {}
    for name in names:
        good = [r for r in results[name] if r]
        if good:
            medians[name] = tuple(statistics.median(r[i] for r in good) for i in range(3))
    for name in names:
        if name not in medians:
            print("  %-11s failed" % name)
            continue
        wall, cpu, rss = medians[name]
        base = medians.get("sluice")
        ratios = ("%12s %12s" % ("", "")) if name == "sluice" or not base else "%12.2f %12.2f" % (base[0] / wall, base[1] / max(cpu, 1e-3))
        print("  %-11s %10.2f %10.2f %10.1f %s" % (name, wall, cpu, rss, ratios))
    print("  (ratios: sluice's median over the tool's; below 1 sluice is faster or cheaper)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--only", default="o,p,x")
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--object-size", default="16384")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tools", default="s5cmd,aws-cli,rclone")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--base", default=None, help="another sluice binary run beside it as sluice-base (a build to compare with)")
    args = parser.parse_args()
    tools = Tools(args)
    only = set(args.only.split(","))
    if "o" in only or "x" in only:
        size = parse_size(args.size)
        key = "copy-bench-source-%s" % uuid.uuid4().hex[:8]
        subprocess.run([args.sluice, "s3", "cp", "synthetic:%d" % size, "s3://%s/%s" % (tools.bucket, key), "--endpoint-url",
                        tools.endpoint, "--progress", "none", "--part-size", "16MiB"], env=tools.env, check=True,
                       stdout=subprocess.DEVNULL)
        run(args, tools, "(o) one object of %d MiB copied by the store (16 MiB parts x %d)" % (size // MIB, args.concurrency),
            key, False, (1, size))
        if "x" in only:
            run(args, tools, "(x) the same object streamed between two endpoints (16 MiB parts x %d)" % args.concurrency,
                key, False, (1, size), streamed=True)
        tools.s3.delete_object(Bucket=tools.bucket, Key=key)
    if "p" in only:
        size = parse_size(args.object_size)
        prefix = "copy-bench-prefix-%s/" % uuid.uuid4().hex[:8]
        tree = os.path.join(args.workdir, "tree")
        os.makedirs(tree)
        for index in range(args.objects):
            with open(os.path.join(tree, "o%06d" % index), "wb") as handle:
                handle.write(os.urandom(size))
        subprocess.run([args.sluice, "s3", "cp", "-r", tree, "s3://%s/%s" % (tools.bucket, prefix), "--endpoint-url", tools.endpoint,
                        "--progress", "none", "--state", os.path.join(args.workdir, "state")], env=tools.env, check=True,
                       stdout=subprocess.DEVNULL)
        run(args, tools, "(p) a prefix of %d objects of %d bytes copied by the store below another" % (args.objects, size),
            prefix, True, (args.objects, args.objects * size))
        tools.delete(prefix)


if __name__ == "__main__":
    main()
