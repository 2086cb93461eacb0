import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceDirectories
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `s3 sync --delete` deletes only what the run proved absent: any error of any kind (a walk
/// that saw a directory moved, a file gone before it was sent, a record that could not be
/// written) holds every delete back (issue 37, items 1 and 2). The races are driven at gates:
/// the fake server's answer to a `PutObject`, the walk's next entry.
@Suite(.serialized)
struct S3SyncDeleteGateTests {
    /// A bucket that lists `listed` (key, size), stores every `PutObject` (calling `onPut` with
    /// its key first), and records the keys `DeleteObjects` names.
    final class FakeBucket: UploadTransport {
        let listed: [(String, Int64)]
        let onPut: @Sendable (String) -> Void
        let puts = Mutex<[String]>([])
        let stored = Mutex<[(String, Int64)]>([])
        let deleteRequests = Mutex(0)
        /// Whether the listing shows what was stored, in a file system's order.
        let listsStored: Bool

        init(listed: [(String, Int64)], listsStored: Bool = false, onPut: @escaping @Sendable (String) -> Void = { _ in }) {
            self.listed = listed
            self.listsStored = listsStored
            self.onPut = onPut
        }

        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions,
            progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            if case .random(let source, _) = body.storage { _ = try source.forEachChunk { _ in } }
            let query = request.url.query ?? ""
            var headers: [HTTPHeader] = []
            var document = ""
            switch request.method {
            case "GET":
                document = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                var objects = listed
                if listsStored {
                    // A store that lists what it holds, in a file system's order (SeaweedFS).
                    for (key, size) in stored.withLock({ $0 }) where !objects.contains(where: { $0.0 == key }) { objects.append((key, size)) }
                    objects.sort { KeyOrder.hierarchical.precedes(Array($0.0.utf8), Array($1.0.utf8)) }
                }
                for (key, size) in objects {
                    document += "<Contents><Key>\(key)</Key><Size>\(size)</Size><LastModified>2020-01-01T00:00:00Z</LastModified><ETag>\"e\"</ETag></Contents>"
                }
                document += "</ListBucketResult>"
            case "POST" where query.hasPrefix("delete"):
                deleteRequests.withLock { $0 += 1 }
                document = "<DeleteResult></DeleteResult>"
            case "PUT":
                let key = String(request.url.path.dropFirst("/bucket/".count))
                onPut(key)
                puts.withLock { $0.append(key) }
                stored.withLock { $0.append((key, body.length.value ?? 0)) }
                headers = [HTTPHeader(name: "ETag", value: "\"e\"")]
            default: break
            }
            return UploadResponse(status: 200, headers: headers, body: Data(document.utf8), bytesSent: body.length.value ?? 0, url: request.url)
        }
    }

    static func sync(_ root: String, over bucket: FakeBucket, state: String) throws -> (S3Sync, S3JobDestination) {
        var options = S3Options()
        options.retries = 0
        options.stateDirectory = state
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"), endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: bucket)
        var job = UploadJob(root: root)
        job.stateDirectory = state
        job.concurrency = 1
        var sync = S3Sync(job: job)
        sync.deletes = true
        return (sync, S3JobDestination(client: client, location: try S3Location(parsing: "s3://bucket/")))
    }

    static func write(_ path: String, _ text: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// `mv d x; mv x d` while the files are sent: `d/f2` is gone when its turn comes (the gate:
    /// the answer to `d/f1`'s PutObject moves `d` away). Before: `d/f2` failed, and the object
    /// with no file was deleted all the same.
    @Test func aFileGoneBeforeItWasSentHoldsEveryDeleteBack() async throws {
        let root = try s3TemporaryDirectory("sync-gate")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.write(root + "/tree/d/f1", "one")
        try Self.write(root + "/tree/d/f2", "two")
        let bucket = FakeBucket(listed: [("d/f1", 9), ("d/f2", 9), ("orphan", 1)]) { key in
            if key == "d/f1" { _ = rename(root + "/tree/d", root + "/tree/x") }
        }
        let (sync, destination) = try Self.sync(root + "/tree", over: bucket, state: root + "/state")
        let result = try await sync.run(to: destination, dryRun: false, decided: { _ in })
        #expect(result.job?.failures.count == 1, "\(String(describing: result.job?.failures))")
        #expect(result.toDelete == 1)
        #expect(result.withheld == .filesFailed(count: 1))
        #expect(result.deleted == 0)
        #expect(bucket.deleteRequests.withLock { $0 } == 0)
    }

    /// The walk's view held: a directory moved away while the walk was in it (the gate: between
    /// two of its entries) is an issue of the walk, not a silent change of its files' names.
    @Test func aDirectoryMovedWhileItIsWalkedIsAnIssue() throws {
        let root = try s3TemporaryDirectory("walk-moved")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.write(root + "/d/a", "a")
        try Self.write(root + "/d/b", "b")
        try Self.write(root + "/z", "z")
        var walk = try DirectoryWalk(root: root)
        var seen: [String] = []
        var issues: [WalkIssue] = []
        while let entry = walk.next() {
            switch entry {
            case .file(let file):
                seen.append(file.relativePath)
                // `mv d x` after the walk read d's first entry, and `mv x d` before it left d:
                // a directory with another inode under the same name is not the one listed.
                if file.relativePath == "d/a" {
                    #expect(rename(root + "/d", root + "/x") == 0)
                    try FileManager.default.createDirectory(atPath: root + "/d", withIntermediateDirectories: false)
                }
            case .issue(let issue): issues.append(issue)
            }
        }
        #expect(seen == ["d/a", "d/b", "z"])
        #expect(issues == [WalkIssue(path: root + "/d", kind: .changedDuringWalk)])
    }

    /// An unchanged tree gives no issue (the check is not a false alarm).
    @Test func anUnchangedTreeGivesNoIssue() throws {
        let root = try s3TemporaryDirectory("walk-still")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.write(root + "/d/e/a", "a")
        try Self.write(root + "/z", "z")
        let entries = Array(try DirectoryWalk(root: root))
        #expect(entries.count == 2)
        #expect(entries.allSatisfy { if case .file = $0 { return true } else { return false } })
    }

    /// The job's record on a disk that fills mid-run (a 16 KiB tmpfs: root only): the job stops
    /// starting files, and the listing's rest, whose files exist, must not be deleted. Before:
    /// every object after the stop was deleted as having no file.
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs")) func aRecordThatCannotBeWrittenHoldsEveryDeleteBack() async throws {
        let root = try s3TemporaryDirectory("sync-full")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let state = root + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=16k", "tmpfs", state]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0, "mount -t tmpfs failed")
        defer {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [state]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        // 400 files whose objects differ (sent), and one object with no file.
        var listed: [(String, Int64)] = []
        for index in 0..<400 {
            let name = String(format: "f%03d", index)
            try Self.write(root + "/tree/" + name, "content of \(name)")
            listed.append((name, 1))
        }
        listed.append(("zz-orphan", 1))
        let bucket = FakeBucket(listed: listed)
        let (sync, destination) = try Self.sync(root + "/tree", over: bucket, state: state)
        let result = try await sync.run(to: destination, dryRun: false, decided: { _ in })
        #expect(result.job?.recordFailure != nil)
        #expect(bucket.puts.withLock { $0.count } < 400)
        #expect(result.withheld == .recordFailed)
        #expect(result.deleted == 0)
        #expect(bucket.deleteRequests.withLock { $0 } == 0)
    }

    /// The state directory inside the synced tree is never part of the tree (issue 37.10):
    /// before, every run sent its own records and locks.
    @Test(arguments: [false, true])
    func theStateDirectoryInsideTheTreeIsNeverSent(throughASymlink: Bool) async throws {
        let root = try s3TemporaryDirectory("sync-state-inside")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.write(root + "/tree/f", "f")
        try Self.write(root + "/tree/.state/s3/record.json", "{}")
        try Self.write(root + "/tree/.state/jobs/old.journal", "")
        var state = root + "/tree/.state/jobs"
        if throughASymlink {
            try FileManager.default.createSymbolicLink(atPath: root + "/state-link", withDestinationPath: root + "/tree/.state")
            state = root + "/state-link/jobs"
        }
        let bucket = FakeBucket(listed: [])
        var (sync, destination) = try Self.sync(root + "/tree", over: bucket, state: state)
        sync.job.privateDirectories = [(state as NSString).deletingLastPathComponent]
        let result = try await sync.run(to: destination, dryRun: false, decided: { _ in })
        #expect(bucket.puts.withLock { $0 } == ["f"])
        #expect(result.job?.failures.isEmpty == true)
    }

    /// A file that cannot be opened is named once in its line.
    @Test func aFileThatCannotBeOpenedIsNamedOnce() {
        let failure = UploadJobFailure(path: "/d/f2", name: "f2", error: ByteSourceError.permissionDenied(path: "/d/f2"))
        #expect(failure.description == "/d/f2: permission denied")
        let other = UploadJobFailure(path: "/d/f3", name: "f3", error: S3Error(.server, "PutObject failed: 403"))
        #expect(other.description == "/d/f3: PutObject failed: 403")
    }

    /// The counts add up whatever order the server lists in (issue 37.9): a listing in a file
    /// system's order (`b/c` before `b-c`, as SeaweedFS lists) is found out mid-walk, after the
    /// first pass sent the files before it; the second pass finds those in the job's record.
    /// Before: they were in no count ("1 file sent, 2 unchanged" of 5 files).
    @Test func theCountsAddUpWhateverOrderTheServerListsIn() async throws {
        let root = try s3TemporaryDirectory("sync-order")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let names = ["a1", "a2", "b-c", "b/c", "z1"]
        for name in names { try Self.write(root + "/tree/" + name, "1") }
        // `b/c` and `b-c` are there, listed in a file system's order; the others are missing.
        let bucket = FakeBucket(listed: [("b/c", 1), ("b-c", 1)])
        var (sync, destination) = try Self.sync(root + "/tree", over: bucket, state: root + "/state")
        sync.comparison = .sizeOnly
        let result = try await sync.run(to: destination, dryRun: false, decided: { _ in })
        #expect(result.order == .hierarchical)
        let job = try #require(result.job)
        let puts = bucket.puts.withLock { $0 }
        #expect(puts.filter { $0 == "a1" }.count == 1, "\(puts)")
        #expect(
            job.uploaded + result.unchanged + job.failures.count == names.count,
            "\(job.uploaded) sent, \(result.unchanged) unchanged, \(job.failures.count) failed; \(puts)")
    }
}
