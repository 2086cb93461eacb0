import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A small tmpfs of its own (64 KiB), mounted for one test and unmounted after: a disk that
/// really fills. Mounting needs root (CAP_SYS_ADMIN); elsewhere `mount` is nil.
struct SmallDisk {
    let path: String

    /// A fresh 64 KiB tmpfs, or nil when this process may not mount one.
    static func mount() -> SmallDisk? {
        let path = NSTemporaryDirectory() + "sluice-disk-\(UUID().uuidString.prefix(8))"
        guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) != nil,
            run("/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", path)
        else {
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
        return SmallDisk(path: path)
    }

    /// Whether a tmpfs can be mounted here (asked once).
    static let available: Bool = {
        guard let disk = mount() else { return false }
        disk.unmount()
        return true
    }()

    /// Fills the disk but for `pages` free 4 KiB pages.
    func fill(leaving pages: Int) throws {
        let reserve = path + "/reserve"
        try Data(count: pages * 4096).write(to: URL(fileURLWithPath: reserve))
        let descriptor = open(path + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(descriptor) }
        let page = [UInt8](repeating: 0, count: 4096)
        while page.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        #expect(errno == ENOSPC)
        unlink(reserve)
    }

    func unmount() {
        _ = Self.run("/bin/umount", path)
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func run(_ arguments: String...) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

/// A destination that stores every file at once (a counted `PutObject`), naming them in order.
struct StoringDestination: UploadJobDestination {
    let names = Lock<[String]>([])
    var jobIdentity: String { "storing" }
    func name(for file: WalkedFile) throws -> String { file.relativePath }
    func upload(_ file: WalkedFile, as name: String, restart: Bool, progress: @escaping @Sendable (Int64) -> Void) async throws -> UploadJobSent {
        names.withLock { $0.append(name) }
        return UploadJobSent(answer: "\"e\"")
    }
}

/// The state directory's disk full under a job: the record stops taking lines once the page
/// its lines fill is full. The job stops starting files, counts every file it stored as sent
/// (none failed), and names the record as the problem.
@Suite(.hangGuard, .enabled(if: SmallDisk.available, "mounting a tmpfs needs root"))
struct UploadJobFullDiskTests {
    @Test func aRecordThatCannotBeWrittenStopsTheJobWithoutFailingStoredFiles() async throws {
        let disk = try #require(SmallDisk.mount())
        defer { disk.unmount() }
        let root = NSTemporaryDirectory() + "sluice-job-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/tree", withIntermediateDirectories: true)
        let count = 200
        for index in 0..<count { try Data("a".utf8).write(to: URL(fileURLWithPath: root + "/tree/file-\(index)")) }
        // The record's lock file and its header take a page each; its lines fill the second.
        try disk.fill(leaving: 2)
        let destination = StoringDestination()
        var job = UploadJob(root: root + "/tree")
        job.stateDirectory = disk.path + "/state"
        job.concurrency = 1
        let result = try await job.run(to: destination)
        let stored = destination.names.withLock { $0 }
        #expect(result.failures.count == 0, "\(result.failures.prefix(2))")
        #expect(result.uploaded == stored.count)
        #expect(stored.count > 1 && stored.count < count, "\(stored.count) of \(count) started")
        let error = try #require(result.recordFailure as? JobJournalError)
        guard case .system("write", ENOSPC) = error.problem else {
            Issue.record("\(error)")
            return
        }
        #expect(result.recordKept != nil)
    }
}
