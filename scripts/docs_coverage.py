#!/usr/bin/env python3
"""Every public declaration of the Sluice library (the module and the floors it re-exports) has a doc comment.

    python3 scripts/docs_coverage.py SYMBOL_GRAPH_DIR SOURCES_PREFIX

Reads the symbol graphs swift-symbolgraph-extract wrote (public symbols only) and counts the
declarations whose source lies under SOURCES_PREFIX (what the compiler synthesises, such as
`Equatable`'s `!=`, has no such place). A declaration is documented when it has a doc comment
of its own, or when it implements a protocol requirement and so inherits the requirement's
comment (the symbol graph then gives the requirement's). Prints the counts; exits 1 naming
each undocumented declaration by file and line."""

import glob
import json
import os
import sys


def main(directory, prefix):
    own = inherited = 0
    missing = []
    for path in sorted(glob.glob(os.path.join(directory, "*.symbols.json"))):
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            location = symbol.get("location", {})
            uri = location.get("uri", "")
            if not uri.startswith("file://") or not uri[len("file://"):].startswith(prefix):
                continue
            comment = symbol.get("docComment")
            if not comment or not any(line.get("text", "").strip() for line in comment.get("lines", [])):
                line = location.get("position", {}).get("line", -1) + 1
                missing.append("%s:%d: %s (%s)" % (
                    uri[len("file://") + len(prefix):], line, ".".join(symbol["pathComponents"]),
                    symbol["kind"]["displayName"]))
            elif comment.get("uri") == uri:
                own += 1
            else:
                inherited += 1
    total = own + inherited + len(missing)
    print("docs_coverage: %d public declarations in the library: %d documented "
          "(%d with their own comment, %d implementations inheriting a protocol requirement's), "
          "%d undocumented" % (total, own + inherited, own, inherited, len(missing)))
    if missing:
        print("docs_coverage: undocumented public declarations (write a /// comment):", file=sys.stderr)
        for entry in sorted(missing):
            print("  Sources/" + entry, file=sys.stderr)
        return 1
    if total == 0:
        print("docs_coverage: no public declarations found under %s" % prefix, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
