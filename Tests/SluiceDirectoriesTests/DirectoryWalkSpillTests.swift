import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A directory larger than the walk's bound is sorted on disk and read back in key order (issue
/// 37.7); a spill that fails is an issue of the walk and holds every delete back.
@Suite(.serialized)
struct DirectoryWalkSpillTests {
    /// Makes temporary files as the sorter does, counting them: proof that a walk spilled.
    final class CountingFiles: Sendable {
        let made = Mutex(0)
        var maker: SpoolFile.Maker {
            { () throws(SpoolError) -> SpoolFile in
                self.made.withLock { $0 += 1 }
                return try SpoolFile()
            }
        }
    }

    /// A directory of `count` files whose names sort differently by bytes than a file system
    /// does (`n-1`, `n.1`, `n/` for a directory), with a subdirectory, a broken symlink and a
    /// FIFO among them: each kind of entry goes through the sorter's records.
    static func makeTree(_ root: String, count: Int) throws {
        for index in 0..<count {
            try S3SyncDeleteGateTests.write(root + "/big/f\((index * 7919) % count)", String(repeating: "x", count: index % 5))
        }
        for name in ["n-1", "n.1", "n/inner", "n/zz", "m"] { try S3SyncDeleteGateTests.write(root + "/big/" + name, name) }
        try FileManager.default.createSymbolicLink(atPath: root + "/big/broken", withDestinationPath: root + "/nothing")
        #expect(mkfifo(root + "/big/fifo", 0o600) == 0)
        try S3SyncDeleteGateTests.write(root + "/zz", "after")
    }

    static func entries(_ root: String, order: KeyOrder, spill: DirectoryWalk.Spill) throws -> [WalkEntry] {
        Array(try DirectoryWalk(root: root, order: order, spill: spill))
    }

    static func key(_ entry: WalkEntry, root: String) -> String {
        switch entry {
        case .file(let file): return file.relativePath
        case .issue(let issue): return String(issue.path.dropFirst(root.count + 1))
        }
    }

    /// A bound of 5 entries in runs of 200 bytes (several runs, merged) against the whole
    /// directory in memory: the same entries, with the same sizes, times and issues, in the
    /// same order, and that order is `order`'s.
    @Test(arguments: [KeyOrder.s3, .hierarchical])
    func aDirectoryLargerThanTheBoundIsWalkedInKeyOrderFromDisk(order: KeyOrder) throws {
        let root = try s3TemporaryDirectory("walk-spill")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.makeTree(root, count: 301)
        let files = CountingFiles()
        let spilled = try Self.entries(root, order: order, spill: DirectoryWalk.Spill(entriesInMemory: 5, runBytes: 200, makeFile: files.maker))
        let held = try Self.entries(root, order: order, spill: DirectoryWalk.Spill())
        #expect(files.made.withLock { $0 } >= 1, "the walk did not spill")
        #expect(spilled == held)
        #expect(spilled.count == 301 + 4 + 2 + 1 + 1)
        let keys = spilled.map { Self.key($0, root: root) }
        #expect(zip(keys, keys.dropFirst()).allSatisfy { order.precedes(Array($0.0.utf8), Array($0.1.utf8)) }, "\(keys.prefix(20))")
        let kinds = Dictionary(
            uniqueKeysWithValues: spilled.compactMap { entry -> (String, WalkIssue.Kind)? in
                if case .issue(let issue) = entry { return (Self.key(entry, root: root), issue.kind) }
                return nil
            })
        #expect(kinds == ["big/broken": .brokenSymlink, "big/fifo": .specialFile(kind: "FIFO")])
        // S3's order puts `n-1` and `n.1` before `n/`; a file system's puts `n/` first.
        let n = keys.filter { $0.hasPrefix("big/n") }
        #expect(n == (order == .s3 ? ["big/n-1", "big/n.1", "big/n/inner", "big/n/zz"] : ["big/n/inner", "big/n/zz", "big/n-1", "big/n.1"]))
    }

    /// Every kind of entry survives the sorter's record: what `encodedKind` writes, `decodeKind` reads.
    @Test func everyKindOfEntryIsReadBackAsWritten() {
        let kinds: [DirectoryWalk.Listed.Kind] = [
            .directory(device: 1 << 40, inode: 7),
            .file(size: 1 << 33, modified: -5, changed: Int64.max, device: 3, inode: UInt64.max),
            .issue(.specialFile(kind: "FIFO")), .issue(.symlinkNotFollowed), .issue(.symlinkLoop), .issue(.brokenSymlink),
            .issue(.nameNotUTF8), .issue(.notFound), .issue(.notADirectory), .issue(.permissionDenied),
            .issue(.system(operation: "lstat", errno: EIO)), .issue(.changedDuringWalk),
        ]
        var bytes: [UInt8] = []
        for kind in kinds {
            DirectoryWalk.Listed(sortKey: [0x61], kind: kind).encodedKind(into: &bytes)
            let back = DirectoryWalk.Listed.decodeKind(bytes)
            #expect(back.map { "\($0)" } == "\(kind)")
        }
        #expect(DirectoryWalk.Listed.decodeKind([1, 2, 3]) == nil)
    }

    /// A spill file that cannot be written (`/dev/full`: ENOSPC) or read back (write-only:
    /// EBADF): the directory is an issue of the walk, named with the cause.
    @Test(arguments: [("/dev/full", O_RDWR, ENOSPC), ("/dev/null", O_WRONLY, EBADF)])
    func aSpillFileThatFailsIsAnIssueOfTheWalk(device: String, mode: Int32, code: Int32) throws {
        let root = try s3TemporaryDirectory("walk-spill-fails")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.makeTree(root, count: 40)
        let spill = DirectoryWalk.Spill(entriesInMemory: 5, makeFile: Self.failingFile(device, mode))
        let entries = try Self.entries(root, order: .s3, spill: spill)
        let issues = entries.compactMap { entry -> WalkIssue? in
            if case .issue(let issue) = entry, !issue.isDeliberate, issue.kind != .brokenSymlink { return issue }
            return nil
        }
        #expect(issues.count == 1, "\(issues)")
        #expect(issues.first?.path == root + "/big")
        guard case .system(let operation, let errno) = issues.first?.kind else {
            Issue.record("not a system issue: \(issues)")
            return
        }
        #expect(errno == code)
        #expect(operation.hasPrefix("sorting its entries in a temporary file"))
        // The walk goes on past the directory it could not sort.
        #expect(entries.last.map { Self.key($0, root: root) } == "zz")
    }

    static func failingFile(_ device: String, _ mode: Int32) -> SpoolFile.Maker {
        { () throws(SpoolError) -> SpoolFile in
            let descriptor = open(device, mode | O_CLOEXEC)
            guard descriptor >= 0 else { throw SpoolError(operation: "open \(device)", errno: errno) }
            return SpoolFile(adopting: descriptor)
        }
    }

    /// A sync whose walk cannot spill a directory (writes fail with ENOSPC, as on a full
    /// tmpfs) deletes nothing, in a real run and a dry run: the objects of that directory's
    /// files would look like objects with no file.
    @Test(arguments: [false, true])
    func aSpillThatFailsHoldsEveryDeleteBack(dryRun: Bool) async throws {
        let root = try s3TemporaryDirectory("sync-spill-fails")
        defer { try? FileManager.default.removeItem(atPath: root) }
        for index in 0..<12 { try S3SyncDeleteGateTests.write(root + "/tree/d/f\(index)", "file \(index)") }
        let bucket = S3SyncDeleteGateTests.FakeBucket(listed: ((0..<12).map { ("d/f\($0)", 6) } + [("orphan", 1)]).sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) })
        var (sync, destination) = try S3SyncDeleteGateTests.sync(root + "/tree", over: bucket, state: root + "/state")
        sync.job.directorySpill = DirectoryWalk.Spill(entriesInMemory: 4, makeFile: Self.failingFile("/dev/full", O_RDWR))
        let decisions = Mutex<[SyncDecision]>([])
        let result = try await sync.run(to: destination, dryRun: dryRun, decided: { d in decisions.withLock { $0.append(d) } })
        #expect(result.walkFailures.count == 1, "\(result.walkFailures)")
        #expect(result.toDelete == 13)
        #expect(result.withheld == .walkFailed(count: 1))
        #expect(result.deleted == 0)
        #expect(bucket.deleteRequests.withLock { $0 } == 0)
        #expect(!decisions.withLock { $0 }.contains { if case .delete = $0 { return true } else { return false } })
    }

    /// A sync of one directory larger than the bound: every file compared once, in order, the
    /// counts adding up, and the object with no file deleted (the spill is no false alarm).
    @Test func aSpilledDirectorySyncsAndTheCountsAddUp() async throws {
        let root = try s3TemporaryDirectory("sync-spilled")
        defer { try? FileManager.default.removeItem(atPath: root) }
        for index in 0..<60 { try S3SyncDeleteGateTests.write(root + "/tree/d/f\(index)", "file \(index)") }
        // Half the files have an object of another size (sent); an object with no file.
        let bucket = S3SyncDeleteGateTests.FakeBucket(
            listed: ((0..<60).filter { $0 % 2 == 0 }.map { ("d/f\($0)", 1) }
                + [("d/orphan", 1)]).sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) })
        var (sync, destination) = try S3SyncDeleteGateTests.sync(root + "/tree", over: bucket, state: root + "/state")
        let files = CountingFiles()
        sync.job.directorySpill = DirectoryWalk.Spill(entriesInMemory: 7, runBytes: 300, makeFile: files.maker)
        let result = try await sync.run(to: destination, dryRun: false, decided: { _ in })
        #expect(files.made.withLock { $0 } >= 1)
        #expect(result.walkFailures.isEmpty)
        #expect(result.job?.uploaded == 60)
        #expect((result.job?.uploaded ?? 0) + result.unchanged + (result.job?.failures.count ?? 0) == 60)
        #expect(bucket.puts.withLock { $0 } == (0..<60).map { "d/f\($0)" }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(result.toDelete == 1)
        #expect(result.withheld == nil)
        #expect(result.deleted == 1)
    }
}
