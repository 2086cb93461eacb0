#!/usr/bin/env python3
"""Runs DESIGN.md's fault table against the fault server with one or more transports and
prints which rows each gets right. Exits 1 when any row fails for any transport.

    python3 scripts/fault_matrix.py --fault-url http://127.0.0.1:PORT [--transport curl urlsession]

The test run gates the same rows for both transports (Tests/e2e/test_faults.py); this prints
them as the table in docs/faults.md."""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "e2e"))

from faults import ROWS  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault-url", default=os.environ.get("SLUICE_FAULT_URL"))
    parser.add_argument("--transport", nargs="+", default=["curl", "urlsession"])
    args = parser.parse_args()
    if not args.fault_url:
        parser.error("--fault-url or SLUICE_FAULT_URL is needed")
    failures = {transport: 0 for transport in args.transport}
    with tempfile.TemporaryDirectory() as workdir:
        print("| case | " + " | ".join(args.transport) + " |")
        print("|---|" + "---|" * len(args.transport))
        details = []
        for name, row in ROWS:
            cells = []
            for transport in args.transport:
                try:
                    ok, detail = row(args.fault_url, transport, workdir)
                except Exception as error:  # a row that crashes counts as failed
                    ok, detail = False, "error: %s" % error
                failures[transport] += 0 if ok else 1
                cells.append("ok" if ok else "**FAILS**")
                details.append("%s / %s: %s" % (name, transport, detail))
            print("| %s | %s |" % (name, " | ".join(cells)), flush=True)
        print()
        for line in details:
            print("- " + line)
    print()
    print(", ".join("%s: %d of %d rows fail" % (t, n, len(ROWS)) for t, n in failures.items()))
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
