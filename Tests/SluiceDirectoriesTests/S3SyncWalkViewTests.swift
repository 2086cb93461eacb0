import Foundation
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport
import Synchronization
@_spi(Floors) import SluicePrimitives

/// The walk's view held to the end of a sync (issue 37, "Deletes as a last phase"): every
/// directory walked is checked again before deletions go out, and one replaced after the walk
/// left it holds every delete back.
@Suite(.serialized)
struct S3SyncWalkViewTests {
    /// Each directory the walk left is recorded and checked again: one replaced after the walk
    /// left it (`mv d x; mkdir d`) is named, an unchanged tree names none.
    @Test func theWalkedDirectoriesAreCheckedAgainAtTheEnd() throws {
        let root = try s3TemporaryDirectory("walk-recheck")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try S3SyncDeleteGateTests.write(root + "/d/e/a", "a")
        try S3SyncDeleteGateTests.write(root + "/d/b", "b")
        try S3SyncDeleteGateTests.write(root + "/z", "z")
        let walked = WalkedDirectories()
        var walk = try DirectoryWalk(root: root)
        walk.walked = walked
        while let entry = walk.next() {
            if case .issue(let issue) = entry { Issue.record("\(issue)") }
        }
        #expect(walked.count == 3)
        #expect(walked.recheck() == [])
        #expect(rename(root + "/d", root + "/x") == 0)
        try FileManager.default.createDirectory(atPath: root + "/d/e", withIntermediateDirectories: true)
        #expect(walked.recheck() == [WalkIssue(path: root + "/d/e", kind: .changedDuringWalk), WalkIssue(path: root + "/d", kind: .changedDuringWalk)])
    }

    /// The walk's view held to the end of a sync: `d` replaced by a copy after the walk left it
    /// (the gate: `z`'s PutObject in a real run, the upload decisions a dry run tells once the
    /// join ended) holds every delete back. Before: the orphan was deleted.
    @Test(arguments: [false, true])
    func aDirectoryReplacedAfterTheWalkLeftItHoldsEveryDeleteBack(dryRun: Bool) async throws {
        let root = try s3TemporaryDirectory("sync-end-race")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try S3SyncDeleteGateTests.write(root + "/tree/d/f1", "one")
        try S3SyncDeleteGateTests.write(root + "/tree/d/f2", "two")
        try S3SyncDeleteGateTests.write(root + "/tree/z", "zzz")
        let tree = root + "/tree"
        let replace: @Sendable () -> Void = {
            // `mv d x; cp -r x d`: the same names, another directory.
            _ = rename(tree + "/d", tree + "/x")
            try? FileManager.default.copyItem(atPath: tree + "/x", toPath: tree + "/d")
            try? FileManager.default.removeItem(atPath: tree + "/x")
        }
        let bucket = S3SyncDeleteGateTests.FakeBucket(listed: [("d/f1", 3), ("d/f2", 3), ("orphan", 1)]) { key in
            if key == "z" { replace() }
        }
        let (sync, destination) = try S3SyncDeleteGateTests.sync(tree, over: bucket, state: root + "/state")
        let result = try await sync.run(
            to: destination, dryRun: dryRun,
            decided: { decision in
                if dryRun, case .upload(_, "z", _) = decision { replace() }
            })
        #expect(result.walkFailures.isEmpty, "\(result.walkFailures)")
        #expect(result.job?.failures.isEmpty ?? true)
        #expect(result.toDelete == 1)
        #expect(result.viewChanges == [WalkIssue(path: tree + "/d", kind: .changedDuringWalk)])
        #expect(result.withheld == .viewChanged(count: 1))
        #expect(result.deleted == 0)
        #expect(bucket.deleteRequests.withLock { $0 } == 0)
    }
}
