#!/usr/bin/env python3
"""Writes every ```swift block of the given Markdown files to a file of its own, so that
scripts/docs.sh can type-check each: an example in the README or the DocC catalog that no longer
compiles fails the docs step.

    python3 scripts/docs_snippets.py OUTPUT_DIR FILE.md ...

Every block is compiled, none is passed over: a block that imports Sluice is checked against the
module just built (kind `sluice`); a package manifest (`import PackageDescription`) against the
toolchain's manifest API (kind `manifest`). A block that is neither (a fragment naming values
the text describes) is an error: make it whole, its unknowns a function's parameters.
Prints one line per snippet: the file written, its kind, then where the block is."""

import os
import re
import sys

BLOCK = re.compile(r"^```swift[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def main(output, files):
    count = 0
    fragments = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for match in BLOCK.finditer(text):
            code = match.group(1)
            origin = "%s:%d" % (path, text.count("\n", 0, match.start()) + 2)
            if re.search(r"^import Sluice$", code, re.M):
                kind = "sluice"
            elif re.search(r"^import PackageDescription$", code, re.M):
                kind = "manifest"
            else:
                fragments.append(origin)
                continue
            count += 1
            directory = os.path.join(output, "snippet%d" % count)
            os.makedirs(directory)
            target = os.path.join(directory, "main.swift" if kind == "sluice" else "Package.swift")
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(code)
            print("%s\t%s\t%s" % (target, kind, origin))
    for origin in fragments:
        print("docs_snippets: the swift block at %s imports neither Sluice nor PackageDescription, so it cannot be "
              "compiled: make it a whole example" % origin, file=sys.stderr)
    if fragments:
        return 1
    if count == 0:
        print("docs_snippets: no swift block in %s" % " ".join(files), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
