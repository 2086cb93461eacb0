#!/usr/bin/env bash
# Builds the DocC documentation of the Sluice library with the toolchain's own tools, and fails
# on any warning or any undocumented public symbol.
#
#   bash scripts/docs.sh [--output DIR]        (default: .build/docs; SLUICE_SCRATCH_PATH as test.sh)
#
# 1. `swift build --target Sluice` (a no-op when scripts/test.sh has just built it);
# 2. `swift-symbolgraph-extract` of the module's public symbols from the build;
# 3. `docc convert Sources/Sluice/Sluice.docc --warnings-as-errors` over that symbol graph, with
#    documentation coverage: an unresolved link, a parameter documented that does not exist or
#    one missing from a `- Parameters:` list fails here;
# 4. scripts/docs_coverage.py: every public declaration of the library (Sources/Sluice and the
#    floors it re-exports) has a doc comment of
#    its own (or is a protocol requirement's implementation, which inherits the requirement's);
#    it prints the count and names each one missing;
# 5. every ```swift block in README.md and the catalog type-checks (scripts/docs_snippets.py
#    writes them out): examples against the module, package manifests against the toolchain's
#    PackageDescription; a block that is neither fails (a fragment cannot be checked).
# No plugin is fetched: only swift, swift-symbolgraph-extract and docc from the toolchain.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUTPUT=.build/docs
while (($#)); do
    case $1 in
        --output) OUTPUT=${2:?--output needs a directory}; shift 2 ;;
        *) printf 'docs.sh: unknown argument %s\n' "$1" >&2; exit 2 ;;
    esac
done

SCRATCH=(--scratch-path "${SLUICE_SCRATCH_PATH:-.build}")
SWIFT=$(command -v swift)
TOOLCHAIN=$(dirname "$(readlink -f "$SWIFT")")
DOCC=$TOOLCHAIN/docc
EXTRACT=$TOOLCHAIN/swift-symbolgraph-extract
for tool in "$DOCC" "$EXTRACT"; do
    [[ -x $tool ]] || { printf 'docs.sh: %s is not in the toolchain (%s)\n' "$(basename "$tool")" "$TOOLCHAIN" >&2; exit 1; }
done

swift build "${SCRATCH[@]}" --target Sluice >&2
BIN=$(swift build "${SCRATCH[@]}" --show-bin-path)
TRIPLE=$(basename "$(dirname "$BIN")")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sluice-docs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/symbols"
# The floors `import Sluice` re-exports (Sources/Sluice/Exports.swift): their public symbols are
# documented as Sluice's, in one catalog.
FLOORS=$(sed -n 's/^@_exported import \([A-Za-z0-9_]*\)$/\1/p' Sources/Sluice/Exports.swift | paste -sd, -)
"$EXTRACT" -module-name Sluice -target "$TRIPLE" -I "$BIN/Modules" \
    -experimental-allowed-reexported-modules="$FLOORS" \
    -Xcc -fmodule-map-file="$BIN/CCurl.build/module.modulemap" \
    -Xcc -fmodule-map-file="$BIN/CSluiceCrypto.build/module.modulemap" \
    -minimum-access-level public -output-dir "$WORK/symbols"

rm -rf "$OUTPUT"
"$DOCC" convert Sources/Sluice/Sluice.docc \
    --additional-symbol-graph-dir "$WORK/symbols" \
    --output-dir "$OUTPUT" \
    --fallback-display-name Sluice --fallback-bundle-identifier org.sluice.Sluice \
    --warnings-as-errors --enable-inherited-docs \
    --experimental-documentation-coverage --coverage-summary-level brief

"${SLUICE_PYTHON:-python3}" scripts/docs_coverage.py "$WORK/symbols" "$PWD/Sources/"

# The examples: every swift block (README, the catalog) compiles: those that import Sluice
# against the module, the package manifests against the toolchain's manifest API; any other
# block is refused by docs_snippets.py (it could not be checked).
SWIFTC=$TOOLCHAIN/swiftc
MANIFEST_API=$(dirname "$TOOLCHAIN")/lib/swift/pm/ManifestAPI
failed=0
snippets=$("${SLUICE_PYTHON:-python3}" scripts/docs_snippets.py "$WORK/snippets" README.md Sources/Sluice/Sluice.docc/*.md) || exit 1
while IFS=$'\t' read -r snippet kind origin; do
    case $kind in
        sluice)
            "$SWIFTC" -typecheck "$snippet" -I "$BIN/Modules" \
                -Xcc -fmodule-map-file="$BIN/CCurl.build/module.modulemap" \
                -Xcc -fmodule-map-file="$BIN/CSluiceCrypto.build/module.modulemap" ;;
        manifest)
            "$SWIFTC" -typecheck "$snippet" -I "$MANIFEST_API" -package-description-version 6.0 ;;
    esac || {
        printf 'docs.sh: the example at %s does not compile\n' "$origin" >&2
        failed=1
    }
done <<<"$snippets"
((failed == 0)) || exit 1
printf 'docs.sh: documentation in %s\n' "$OUTPUT" >&2
