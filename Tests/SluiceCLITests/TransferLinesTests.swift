import Testing

@testable import SluiceCLI

/// The per-file lines' paths: made relative once a directory (`TransferLines.shown(_:)`), the
/// same as made afresh for each file (`shown(_:from:)`, what the AWS CLI prints).
@Suite struct TransferLinesTests {
    @Test func aDirectoryMadeRelativeOnceShowsEachFileAsMadeAfresh() {
        let working = "/w/tree/sub"
        let lines = TransferLines(level: .all, dryRun: false, workingDirectory: working)
        // Files of several directories, coming back to one (parallel uploads end in any order),
        // and the names the shortcut leaves to the full way: `.`, `..`, a trailing `/`, no `/`,
        // and a path that is not ASCII.
        let paths = [
            "/w/tree/a", "/w/tree/f", "/w/tree/sub/b", "/w/tree/a2", "/w/tree/sub/deep/c d", "/w/tree/sub/b2",
            "/other/x", "/w/tree/sub/.", "/w/tree/sub/..", "/w/tree/sub/", "f", "./f", "../a", "/w/tree/é/x", "/w/tree/é/y",
            "/x", "/y",
        ]
        for path in paths {
            #expect(lines.shown(path) == TransferLines.shown(path, from: working), "\(path)")
        }
        #expect(lines.shown("/w/tree/sub/deep/c d") == "deep/c d")
        #expect(lines.shown("/w/tree/a") == "../a")
    }
}
