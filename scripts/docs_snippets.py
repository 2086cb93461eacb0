#!/usr/bin/env python3
"""Writes every ```swift block that imports Sluice, from the given Markdown files, to a file of
its own, so that scripts/docs.sh can type-check it against the module just built: an example in
the README or the DocC catalog that no longer compiles fails the docs step.

    python3 scripts/docs_snippets.py OUTPUT_DIR FILE.md ...

A block without `import Sluice` is a fragment (it names values the text describes) and is left
alone. Prints one line per snippet: the file written, then where the block is."""

import os
import re
import sys

BLOCK = re.compile(r"^```swift[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def main(output, files):
    count = 0
    for path in files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for match in BLOCK.finditer(text):
            code = match.group(1)
            if not re.search(r"^import Sluice$", code, re.M):
                continue
            count += 1
            directory = os.path.join(output, "snippet%d" % count)
            os.makedirs(directory)
            target = os.path.join(directory, "main.swift")
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(code)
            print("%s\t%s:%d" % (target, path, text.count("\n", 0, match.start()) + 2))
    if count == 0:
        print("docs_snippets: no swift block imports Sluice in %s" % " ".join(files), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
