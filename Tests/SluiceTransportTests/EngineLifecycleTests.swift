#if os(Linux)
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The engine's edges: shutdown (twice, while parts are in flight, awaited), work after it,
/// and engines that are dropped without one. The counting tests run alone in a child copy of
/// the test process (`Isolated`): threads and descriptors are process-wide.
@Suite("TransferEngine lifecycle: shutdown, work after it, dropped engines", .serialized, .hangGuard)
struct EngineLifecycleTests {
    @Test("shutdown twice returns both times; a request after it fails at once naming the shutdown")
    func shutdownTwice() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 2))
        let request = try UploadRequest(url: sink.url("/sink"), method: "PUT")
        #expect(try await engine.send(request, body: .bytes(SyntheticByteSource(length: 100_000))).status == 200)
        #expect(await Self.returns(within: patienceSeconds) { engine.shutdown() }, "the first shutdown did not return")
        #expect(await Self.returns(within: patienceSeconds) { engine.shutdown() }, "the second shutdown did not return")
        await engine.shutdownGracefully()
        await #expect(throws: UploadError.self) {
            try await engine.send(request, body: .bytes(SyntheticByteSource(length: 10)))
        }
        do {
            _ = try await engine.send(request, body: .bytes(SyntheticByteSource(length: 10)))
        } catch let error as UploadError {
            #expect(error.message.contains("shut down"), "\(error)")
        }
    }

    @Test(
        "a loop stopped twice, then handed a transfer and poked: the transfer fails at once, nothing touches a freed handle",
        .enabled(if: !Isolated.inChild))
    func stoppedLoop() async throws {
        // In a child: before the fix this reached a freed multi handle (a crash) or hung.
        try await Self.expectIsolatedRunPasses("stoppedLoopChild")
    }

    @Test(.enabled(if: Isolated.isChild("stoppedLoopChild")))
    func stoppedLoopChild() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 1))
        let loop = engine.loops[0]
        #expect(await Self.returns(within: patienceSeconds) { loop.stop() })
        #expect(await Self.returns(within: patienceSeconds) { loop.stop() })
        // The engine itself was not shut down: the scheduler hands the transfer to the stopped
        // loop (`start`), and cancelling the task pokes it.
        let request = try UploadRequest(url: sink.url("/sink"), method: "PUT")
        let result = Lock<Result<UploadResponse, any Error>?>(nil)
        let task = Task {
            let outcome: Result<UploadResponse, any Error>
            do { outcome = .success(try await engine.send(request, body: .bytes(SyntheticByteSource(length: 10)))) } catch {
                outcome = .failure(error)
            }
            result.withLockBroadcasting { $0 = outcome }
        }
        let first = await onThread { result.wait(timeout: patienceSeconds) { $0 } }
        task.cancel()
        switch first {
        case .failure(let error as UploadError)?: #expect(error.message.contains("shut down"), "\(error)")
        case nil: Issue.record("the transfer handed to a stopped loop was never completed")
        default: Issue.record("expected a shutdown error, got \(String(describing: first))")
        }
        #expect(await Self.returns(within: patienceSeconds) { engine.shutdown() })
    }

    @Test(
        "200 engines created, used and dropped without shutdown leave no thread or descriptor",
        .enabled(if: !Isolated.inChild))
    func droppedEngines() async throws {
        try await Self.expectIsolatedRunPasses("droppedEnginesChild")
    }

    @Test(.enabled(if: Isolated.isChild("droppedEnginesChild")))
    func droppedEnginesChild() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let request = try UploadRequest(url: sink.url("/sink"), method: "PUT")
        // Warm-up: what the process opens once (libcurl's and the runtime's own).
        try await Self.useAndDrop(request)
        let threads = sluiceThreadCount()
        let descriptors = Self.socketsAndPipes().count
        for _ in 0..<200 { try await Self.useAndDrop(request) }
        let threadsBack = await waitUntil { sluiceThreadCount() <= threads }
        #expect(threadsBack, "Sluice threads: \(sluiceThreadCount() - threads) above baseline after 200 dropped engines")
        // Sockets and pipes (connections, wake-up pipes): the runtime's own timerfds come and go.
        let descriptorsBack = await waitUntil { Self.socketsAndPipes().count <= descriptors }
        #expect(descriptorsBack, "sockets and pipes: \(Self.socketsAndPipes().count - descriptors) above baseline after 200 dropped engines")
    }

    static func useAndDrop(_ request: UploadRequest) async throws {
        let engine = TransferEngine(configuration: .init(loops: 1))
        let response = try await engine.send(request, body: .bytes(SyntheticByteSource(length: 70_000)))
        #expect(response.status == 200)
    }

    @Test(
        "shutdown while 8 parts are in flight: the upload fails at once naming the shutdown; no thread, descriptor or waiter is left",
        .enabled(if: !Isolated.inChild))
    func shutdownWithPartsInFlight() async throws {
        try await Self.expectIsolatedRunPasses("shutdownInFlightChild")
    }

    @Test(.enabled(if: Isolated.isChild("shutdownInFlightChild")))
    func shutdownInFlightChild() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let warmup = TransferEngine(configuration: .init(loops: 2))
        _ = try await warmup.send(try UploadRequest(url: sink.url("/sink"), method: "PUT"), body: .bytes(SyntheticByteSource(length: 10)))
        await warmup.shutdownGracefully()
        let threads = sluiceThreadCount()
        let descriptors = Self.socketsAndPipes().count

        let engine = TransferEngine(configuration: .init(loops: 2))
        let source = SyntheticByteSource(length: 8 * 100_000, seed: 3)
        let slow = sink.url("/hold")
        var upload = ParallelUpload(source: source, partSize: 100_000) { _ in try UploadRequest(url: slow, method: "PUT") }
        upload.concurrency = 8
        upload.retries = 3
        upload.retryDelay = .zero
        // Gate: every part's whole body is out, and all 8 wait for the server's answer.
        let sent = Lock<Int64>(0)
        let task = Task { try await engine.send(upload) { progress in sent.withLock { $0 = max($0, progress.bytesSent) } } }
        let allOut = await waitUntil { sent.withLock { $0 } == source.length }
        #expect(allOut, "the 8 parts were not all sent")
        // /hold never answers: only the shutdown can end the parts (the error says which).
        await engine.shutdownGracefully()
        let result = await task.result
        switch result {
        case .failure(let error as UploadError): #expect(error.message.contains("shut down"), "\(error)")
        default: Issue.record("expected the shutdown's error, got \(result)")
        }
        let threadsBack = await waitUntil { sluiceThreadCount() <= threads }
        #expect(threadsBack, "Sluice threads: \(sluiceThreadCount() - threads) above baseline")
        // Sockets and pipes: the runtime's own timerfds come and go with its timers.
        let descriptorsBack = await waitUntil { Self.socketsAndPipes().count <= descriptors }
        #expect(descriptorsBack, "sockets and pipes: \(Self.socketsAndPipes().count - descriptors) above baseline")
    }

    /// The open descriptors that are sockets or pipes (connections, wake-up pipes), as "fd=target".
    static func socketsAndPipes() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { fd in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
            return target.hasPrefix("socket:") || target.hasPrefix("pipe:") ? "\(fd)=\(target)" : nil
        }
    }

    // MARK: Helpers

    static func expectIsolatedRunPasses(_ name: String) async throws {
        let (status, output) = try await Isolated.run(name)
        #expect(status == 0, "the isolated check \(name) failed:\n\(output)")
        #expect(output.contains(name) && !output.contains("skipped"), "the isolated test \(name) did not run:\n\(output)")
    }

    /// Whether `body` returns within `seconds` (run on a thread of its own, left behind if it hangs).
    static func returns(within seconds: Double, _ body: @escaping @Sendable () -> Void) async -> Bool {
        await onThread {
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                body()
                done.signal()
            }
            return done.wait(timeout: .now() + seconds) == .success
        }
    }
}
#endif
