import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A destination whose first upload waits at a gate (the others return at once), counting the
/// names it was asked for; a cancel while it waits is thrown as the S3 destination throws it.
struct GatedDestination: UploadJobDestination {
    let gate: AsyncStream<Void>
    let arrived: AsyncStream<Void>.Continuation
    /// Uploads that wait at the gate (the first `waiting`).
    var waiting = 1
    let names = Lock<[String]>([])
    var jobIdentity: String { "gated" }
    func name(for file: WalkedFile) throws -> String { file.relativePath }
    func upload(_ file: WalkedFile, as name: String, restart: Bool, progress: @escaping @Sendable (Int64) -> Void) async throws -> UploadJobSent {
        let waits = names.withLock { names in
            names.append(name)
            return names.count <= waiting
        }
        arrived.yield()
        if waits { for await _ in gate { break } }
        if Task.isCancelled { throw S3Error(.cancelled, "cancelled during PutObject") }
        return UploadJobSent(answer: "\"e\"")
    }
}

/// A tree of `count` one-byte files under a fresh directory; its root.
func smallTree(_ count: Int) throws -> String {
    let root = NSTemporaryDirectory() + "sluice-job-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: root + "/tree", withIntermediateDirectories: true)
    for index in 0..<count { try Data("a".utf8).write(to: URL(fileURLWithPath: root + "/tree/\(Character(UnicodeScalar(97 + index)!))")) }
    return root
}

/// Two runs of one job at once: the second is refused before it reads, forgets or sends
/// anything, naming the first one's pid; once the first has ended, the next run goes.
@Suite(.hangGuard)
struct UploadJobLockTests {
    @Test(arguments: [false, true])
    func aSecondRunOfTheSameJobIsRefusedAtOnce(restart: Bool) async throws {
        let root = try smallTree(1)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let gate = AsyncStream<Void>.makeStream()
        let arrived = AsyncStream<Void>.makeStream()
        let destination = GatedDestination(gate: gate.stream, arrived: arrived.continuation)
        var job = UploadJob(root: root + "/tree")
        job.stateDirectory = root + "/state"
        let first = job
        let running = Task { try await first.run(to: destination) }
        var waiter = arrived.stream.makeAsyncIterator()
        _ = await waiter.next()  // the first run holds its record and is sending
        var second = job
        second.restart = restart  // a restart does not forget a record another run holds
        let path = job.journalPath(root: DirectoryWalk.absolutePath(job.root), destination: destination)
        await #expect(throws: JobJournalError(path: path, problem: .locked(.held(pid: getpid())))) {
            try await second.run(to: destination)
        }
        #expect(destination.names.withLock { $0 } == ["a"])
        gate.continuation.yield()
        let result = try await running.value
        #expect(result.uploaded == 1 && result.recordKept == nil)
        // The lock went with the run: the next one goes.
        gate.continuation.finish()
        #expect(try await job.run(to: destination).uploaded == 1)
        #expect(destination.names.withLock { $0 } == ["a", "a"])
    }
}

/// Ctrl-C (SIGINT, SIGTERM: the CLI cancels the job's task) ends a job as interrupted, not as
/// files failed: here with no more files than `concurrency`, so the walk has ended and the job
/// is draining its group when the cancel comes.
@Suite(.hangGuard)
struct UploadJobCancelTests {
    @Test func aCancelWhileTheLastFilesAreInFlightEndsTheJobAsInterrupted() async throws {
        let root = try smallTree(4)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let gate = AsyncStream<Void>.makeStream()
        let arrived = AsyncStream<Void>.makeStream()
        var destination = GatedDestination(gate: gate.stream, arrived: arrived.continuation)
        destination.waiting = 4
        var job = UploadJob(root: root + "/tree")
        job.stateDirectory = root + "/state"
        job.concurrency = 4
        let configured = job
        let gated = destination
        let walked = Lock(false)
        let walkEnded = AsyncStream<Void>.makeStream()
        let running = Task {
            try await configured.run(to: gated) { progress in
                guard progress.walkEnded else { return }
                if walked.withLock({ (seen: inout Bool) -> Bool in
                    defer { seen = true }
                    return !seen
                }) {
                    walkEnded.continuation.yield()
                }
            }
        }
        var waiter = arrived.stream.makeAsyncIterator()
        for _ in 0..<4 { _ = await waiter.next() }  // all four in flight
        // And the walk told over (it may end after the four arrived): the last files in flight.
        var ended = walkEnded.stream.makeAsyncIterator()
        _ = await ended.next()
        running.cancel()
        let result = await running.result
        guard case .failure(let error) = result else {
            Issue.record("the job ended as \(result), not interrupted")
            return
        }
        #expect(error is CancellationError, "\(error)")
        #expect(walked.withLock { $0 })
        // The record is kept for the next run, which sends the four.
        gate.continuation.finish()
        #expect(try await job.run(to: destination).uploaded == 4)
    }
}
