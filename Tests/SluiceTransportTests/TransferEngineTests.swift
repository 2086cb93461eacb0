#if os(Linux)
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

@Suite("TransferEngine: loops, threads, connection reuse, per-host limit", .serialized, .hangGuard)
struct TransferEngineTests {
    // The two counting tests run alone in a child copy of the test process (`Isolated`):
    // threads and descriptors are process-wide, and the suites running in parallel here start
    // and end their own, so only there can the bounds be exact.

    @Test("64 concurrent uploads in flight at once leave the threads at baseline + the loops", .enabled(if: !Isolated.inChild))
    func threadsDoNotGrow() async throws {
        try await Self.expectIsolatedRunPasses("engineThreadsChild")
    }

    @Test("100 cancelled uploads from pipes with no writer leave threads and descriptors at their baseline", .enabled(if: !Isolated.inChild))
    func cancelledPipesLeaveNothing() async throws {
        try await Self.expectIsolatedRunPasses("engineCancelledPipesChild")
    }

    static func expectIsolatedRunPasses(_ name: String) async throws {
        let (status, output) = try await Isolated.run(name)
        #expect(status == 0, "the isolated check \(name) failed:\n\(output)")
        #expect(output.contains(name) && !output.contains("skipped"), "the isolated test \(name) did not run:\n\(output)")
    }

    @Test(.enabled(if: Isolated.isChild("engineThreadsChild")))
    func engineThreadsChild() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let baseline = sluiceThreadCount()
        let baselineAll = threadCount()
        let engine = TransferEngine(configuration: .init(loops: 2, maximumTransfersPerHost: 64))
        defer { engine.shutdown() }
        let count = 64
        let length: Int64 = 256 << 10
        let peak = Lock((all: 0, loops: 0))
        let peakAll = Lock(0)
        let request = try UploadRequest(url: sink.url("/gather?n=\(count)"), method: "PUT")
        let reports = try await withThrowingTaskGroup(of: CurlSink.Report.self) { group in
            for index in 0..<count {
                group.addTask {
                    let source = SyntheticByteSource(length: length, seed: UInt64(index))
                    let response = try await engine.send(request, body: .bytes(source)) { sent in
                        // Sampled once per upload, when its whole body is out: the last sample
                        // is taken while all 64 wait for the server at once.
                        if sent == length {
                            let threads = (all: sluiceThreadCount(), loops: sluiceThreadCount(prefix: "sluice-loop-"))
                            peak.withLock { $0 = (max($0.all, threads.all), max($0.loops, threads.loops)) }
                            let all = threadCount()
                            peakAll.withLock { $0 = max($0, all) }
                        }
                    }
                    return try CurlSink.report(response)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reports.count == count)
        #expect(reports.allSatisfy { $0.count == length })
        #expect(Set(reports.compactMap(\.peer)).count == count, "64 connections at once: the server held them all")
        // Sluice's own threads (named sluice-*): the two loops, and none per upload.
        let grown = peak.withLock { $0.all } - baseline
        #expect(peak.withLock { $0.loops } >= 2, "the loops' threads are seen by name")
        #expect(grown <= 2, "Sluice threads grew by \(grown) for \(count) concurrent uploads on 2 loops")
        // The whole process: the loops plus the test's own task pool, far from one per upload.
        let grownAll = peakAll.withLock { $0 } - baselineAll
        #expect(grownAll <= 2 + 8, "process threads grew by \(grownAll) for \(count) concurrent uploads")
    }

    @Test(.enabled(if: Isolated.isChild("engineCancelledPipesChild")))
    func engineCancelledPipesChild() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let request = try UploadRequest(url: sink.url("/sink"), method: "POST")
        // Warm-up: what the process opens once, on first use (libcurl's and the runtime's own).
        let warmup = TransferEngine(configuration: .init(loops: 2))
        _ = try await warmup.send(request, body: .bytes(SyntheticByteSource(length: 1000)))
        var warmupPipe: [Int32] = [0, 0]
        #expect(pipe(&warmupPipe) == 0)
        let warmupBody = UploadBody.sequential(FileDescriptorStream(fd: warmupPipe[0], name: "pipe"))
        let warmupTask = Task { try await warmup.send(request, body: warmupBody) }
        _ = await waitUntil { warmup.statistics.connectionsOpened >= 2 }
        warmupTask.cancel()
        _ = await warmupTask.result
        warmup.shutdown()
        close(warmupPipe[0])
        close(warmupPipe[1])
        let baselineThreads = sluiceThreadCount()
        let baselineDescriptors = openFileDescriptorCount()
        let engine = TransferEngine(configuration: .init(loops: 2, maximumTransfersPerHost: 128))
        let count = 100
        var pipes: [(Int32, Int32)] = []
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            pipes.append((fds[0], fds[1]))
        }
        var tasks: [Task<UploadResponse, any Error>] = []
        for (readEnd, _) in pipes {
            let body = UploadBody.sequential(FileDescriptorStream(fd: readEnd, name: "pipe"))
            tasks.append(Task { try await engine.send(request, body: body) })
        }
        // Gate: every upload is in flight (its connection open), waiting on its pipe, which
        // nobody writes.
        let started = await waitUntil { openFileDescriptorCount() >= baselineDescriptors + 3 * count }
        #expect(started, "descriptors: \(openFileDescriptorCount() - baselineDescriptors) above baseline, \(3 * count) expected")
        for task in tasks { task.cancel() }
        for task in tasks {
            let result = await task.result
            if case .failure(let error as UploadError) = result {
                #expect(error.code == .cancelled)
            } else {
                Issue.record("expected .cancelled, got \(result)")
            }
        }
        engine.shutdown()
        // Checked while the pipes are still open with nobody writing: a producer still blocked
        // in its read would stay there.
        // Alone in this process: back to the baseline exactly, with only the test's own pipes open.
        let threadsBack = await waitUntil { sluiceThreadCount() <= baselineThreads }
        #expect(threadsBack, "Sluice threads: \(sluiceThreadCount() - baselineThreads) above baseline after 100 cancelled uploads")
        let descriptorsBack = await waitUntil { openFileDescriptorCount() <= baselineDescriptors + 2 * count }
        #expect(descriptorsBack, "descriptors: \(openFileDescriptorCount() - baselineDescriptors - 2 * count) above baseline and the test's pipes")
        for (readEnd, writeEnd) in pipes {
            close(readEnd)
            close(writeEnd)
        }
    }

    @Test("requests one after another reuse one connection")
    func connectionReused() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 2))
        defer { engine.shutdown() }
        var peers: Set<Int> = []
        for (index, method) in ["POST", "PATCH", "HEAD", "PATCH", "OPTIONS", "PUT", "DELETE", "PATCH"].enumerated() {
            let request = try UploadRequest(url: sink.url("/sink/\(index)"), method: method)
            let body = UploadBody.bytes(SyntheticByteSource(length: method == "PATCH" ? 300_000 : 0, seed: UInt64(index)))
            let response = try await engine.send(request, body: body)
            #expect(response.status == 200)
            if method != "HEAD" { peers.insert(try #require(try CurlSink.report(response).peer)) }
        }
        #expect(peers.count == 1, "connections seen by the server: \(peers)")
        #expect(engine.statistics.connectionsOpened == 1)
        #expect(engine.statistics.finished == 8)
    }

    @Test("no more than maximumTransfersPerHost requests to one origin at once; the rest wait and succeed")
    func perHostLimit() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 2, maximumTransfersPerHost: 3))
        defer { engine.shutdown() }
        let request = try UploadRequest(url: sink.url("/sink"), method: "PUT")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<12 {
                group.addTask {
                    try await engine.send(request, body: .bytes(SyntheticByteSource(length: 2 << 20, seed: UInt64(index)))).status
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(engine.statistics.peakPerHost == 3)
        #expect(engine.statistics.finished == 12)
        #expect(engine.statistics.connectionsOpened <= 3)
    }

    @Test("a request cancelled while it waits for its turn ends at once with .cancelled")
    func cancelWhileQueued() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 1, maximumTransfersPerHost: 1))
        defer { engine.shutdown() }
        let sent = DispatchSemaphore(value: 0)
        let slow = try UploadRequest(url: sink.url("/hold"), method: "PUT")
        let holder = Task {
            try await engine.send(slow, body: .bytes(SyntheticByteSource(length: 1000))) { if $0 == 1000 { sent.signal() } }
        }
        await onThread { sent.wait() }
        let next = try UploadRequest(url: sink.url("/sink"), method: "PUT")
        let queued = Task { try await engine.send(next, body: .bytes(SyntheticByteSource(length: 10))) }
        queued.cancel()
        let result = await queued.result
        if case .failure(let error as UploadError) = result { #expect(error.code == .cancelled) } else { Issue.record("expected .cancelled, got \(result)") }
        holder.cancel()
        _ = await holder.result
    }
}
/// Threads of this process named `sluice-*` (engine loops, producers).
func sluiceThreadCount(prefix: String = "sluice-") -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "").hasPrefix(prefix)
    }.count
}
#endif
