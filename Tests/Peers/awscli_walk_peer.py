"""An independent answer to what `sluice`'s directory walks and filters decide, from the AWS CLI.

    python3 awscli_walk_peer.py INPUT.json

INPUT is either
  {"fnmatch": [[PATTERN, TEXT], ...]}        -> [true|false, ...]   (Python's fnmatch, as the AWS CLI calls it)
or
  {"root": DIR, "destination": "s3://B/P/", "filters": [["include"|"exclude", PATTERN], ...],
   "follow_symlinks": true}                  -> {"uploads": [[LOCAL_PATH, KEY], ...], "skipped": [PATH, ...]}
the second from `aws s3 cp --recursive --dryrun` itself (it sends nothing; the endpoint is a closed port).
"""
import fnmatch
import json
import os
import subprocess
import sys


def main():
    with open(sys.argv[1]) as f:
        request = json.load(f)
    if "fnmatch" in request:
        json.dump([fnmatch.fnmatch(text, pattern) for pattern, text in request["fnmatch"]], sys.stdout)
        return
    args = [sys.executable, "-m", "awscli", "s3", "cp", "--recursive", "--dryrun",
            request["root"], request["destination"], "--endpoint-url", "http://127.0.0.1:9", "--region", "us-east-1"]
    if not request.get("follow_symlinks", True):
        args.append("--no-follow-symlinks")
    for kind, pattern in request.get("filters", []):
        args += ["--" + kind, pattern]
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret",
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null", PYTHONIOENCODING="utf-8")
    result = subprocess.run(args, capture_output=True, env=env, timeout=120)
    out = result.stdout.decode("utf-8")
    err = result.stderr.decode("utf-8")
    uploads = []
    for line in out.replace("\r", "\n").split("\n"):
        marker = "(dryrun) upload: "
        if marker not in line:
            continue
        rest = line[line.index(marker) + len(marker):].rstrip()
        local, _, url = rest.rpartition(" to s3://")
        bucket_key = url.split("/", 1)
        uploads.append([os.path.abspath(local), bucket_key[1] if len(bucket_key) > 1 else ""])
    skipped = []
    for line in err.split("\n"):
        if line.startswith("warning: Skipping file "):
            skipped.append(line[len("warning: Skipping file "):].split(". ", 1)[0])
    if result.returncode not in (0, 2):
        sys.stderr.write(err)
        sys.exit(1)
    json.dump({"uploads": uploads, "skipped": skipped}, sys.stdout)


main()
