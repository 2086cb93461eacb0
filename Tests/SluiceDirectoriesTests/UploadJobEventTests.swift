import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// What a job tells of each file (`UploadJobEvent`): every file stored once, after its record
/// took it; a dry run tells every file it would send, asks the destination nothing and keeps no
/// record.
struct UploadJobEventTests {
    /// A tree of `count` files (one below a directory) under a fresh directory; its path.
    func tree(_ count: Int) throws -> String {
        let root = NSTemporaryDirectory() + "sluice-events-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/tree/sub", withIntermediateDirectories: true)
        for index in 0..<count {
            try Data("file \(index)".utf8).write(to: URL(fileURLWithPath: root + (index == 0 ? "/tree/sub/f0" : "/tree/f\(index)")))
        }
        return root
    }

    @Test func everyFileStoredIsToldOnce() async throws {
        let root = try tree(20)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var job = UploadJob(root: root + "/tree")
        job.stateDirectory = root + "/state"
        let destination = StoringDestination()
        let told = Lock<[String]>([])
        let result = try await job.run(
            to: destination,
            events: { event in
                guard case .sent(let file, let name) = event else {
                    Issue.record("\(event) in a real run")
                    return
                }
                #expect(file.path == root + "/tree/" + file.relativePath)
                told.withLock { $0.append(name) }
            })
        #expect(result.uploaded == 20)
        #expect(told.withLock { $0.sorted() } == destination.names.withLock { $0.sorted() })
        #expect(told.withLock { Set($0).count } == 20)
    }

    @Test func aDryRunTellsWhatItWouldSendAndTouchesNothing() async throws {
        let root = try tree(20)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var job = UploadJob(root: root + "/tree")
        job.stateDirectory = root + "/state"
        job.dryRun = true
        job.filter = PathFilter([.exclude(GlobPattern("f1*"))])
        let destination = StoringDestination()
        let told = Lock<[String]>([])
        let result = try await job.run(
            to: destination,
            events: { event in
                guard case .wouldSend(_, let name) = event else {
                    Issue.record("\(event) in a dry run")
                    return
                }
                told.withLock { $0.append(name) }
            })
        // f1 and f10 ... f19 excluded: 20 - 11.
        #expect(result.uploaded == 9 && result.failures.isEmpty && result.recordKept == nil)
        #expect(told.withLock { $0.sorted() } == (["sub/f0"] + (2...9).map { "f\($0)" }).sorted())
        #expect(destination.names.withLock { $0 }.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: root + "/state"))
    }
}
