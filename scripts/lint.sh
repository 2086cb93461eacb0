#!/usr/bin/env bash
# swift-format over Sources and Tests with the checked-in .swift-format (the toolchain's own
# swift-format; SWIFT_FORMAT overrides which binary):
#
#   bash scripts/lint.sh          lint --strict: every finding is an error, exit 1
#   bash scripts/lint.sh --fix    format --in-place: rewrites the files it would flag
#
# .swift-format was chosen to change as little of the code as it stood as possible: 4-space
# indentation, lines up to 180, `#if` bodies not indented, `case` level with `switch`, no spaces
# around `..<`; off: DoNotUseSemicolons (`a; return b` on one line is house style),
# OneVariableDeclarationPerLine, OneCasePerLine, OrderedImports, ReplaceForEachWithForLoop, and
# AlwaysUseLowerCamelCase (C names such as Glibc_read, XMLParserDelegate's CDATABlock).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FORMAT=${SWIFT_FORMAT:-$(command -v swift-format || echo /opt/swift/usr/bin/swift-format)}
if [[ ${1:-} == --fix ]]; then
    exec "$FORMAT" format --configuration .swift-format --in-place --parallel --recursive Sources Tests
fi
exec "$FORMAT" lint --configuration .swift-format --strict --parallel --recursive Sources Tests
