#if os(Linux)
import Foundation
import Testing
@testable import Sluice

@Suite("curl producers: cancelled stdin ends its thread, a quiet source is named, errors classified by CURLcode",
       .serialized, .timeLimit(.minutes(1)))
struct CurlProducerTests {
    @Test("100 cancelled uploads from pipes with no writer leave threads and descriptors at their baseline")
    func cancelledPipesLeaveNothing() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let baselineThreads = threadCount()
        let baselineDescriptors = openFileDescriptorCount()
        let engine = TransferEngine(configuration: .init(loops: 2, maximumTransfersPerHost: 128))
        let count = 100
        var pipes: [(Int32, Int32)] = []
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            pipes.append((fds[0], fds[1]))
        }
        let request = try UploadRequest(url: sink.url("/sink"), method: "POST")
        var tasks: [Task<UploadResponse, any Error>] = []
        for (readEnd, _) in pipes {
            let body = UploadBody.sequential(FileDescriptorStream(fd: readEnd, name: "pipe"))
            tasks.append(Task { try await engine.send(request, body: body) })
        }
        // Gate: every producer thread is up (blocked on its pipe, which nobody writes).
        let started = await waitUntil { threadCount() >= baselineThreads + count }
        #expect(started, "producer threads: \(threadCount() - baselineThreads) above baseline")
        for task in tasks { task.cancel() }
        for task in tasks {
            let result = await task.result
            if case .failure(let error as UploadError) = result { #expect(error.code == .cancelled) } else {
                Issue.record("expected .cancelled, got \(result)")
            }
        }
        engine.shutdown()
        // Checked while the pipes are still open with nobody writing: a producer still blocked
        // in its read would stay there.
        // Parallel suites start and end threads and descriptors of their own: a margin far
        // below the 100 a leak per upload would leave.
        let threadsBack = await waitUntil(seconds: 5) { threadCount() <= baselineThreads + 10 }
        #expect(threadsBack, "threads: \(threadCount() - baselineThreads) above baseline after 100 cancelled uploads")
        let descriptorsBack = await waitUntil(seconds: 5) { openFileDescriptorCount() <= baselineDescriptors + 2 * count + 10 }
        #expect(descriptorsBack, "descriptors: \(openFileDescriptorCount() - baselineDescriptors - 2 * count) above baseline and the test's pipes")
        for (readEnd, writeEnd) in pipes {
            close(readEnd)
            close(writeEnd)
        }
    }

    @Test("a producer that goes quiet is named as the cause of the stall timeout, not the server")
    func quietSourceNamed() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = StallingSource(prefix: 100_000)
        defer { source.release() }
        var options = UploadOptions()
        options.stallTimeout = 1
        let request = try UploadRequest(url: sink.url("/sink"), method: "POST")
        let error = await #expect(throws: UploadError.self) {
            try await CurlTransport().send(request, body: .sequential(source), options: options) { _ in }
        }
        #expect(error?.code == .timedOut)
        #expect(error?.message.hasPrefix("the source produced nothing for 1 s") == true, "\(error?.message ?? "")")
    }

    @Test("transient or not is decided by CURLcode: option rejections and TLS are not retried")
    func classifiedByCode() async throws {
        func transport(_ code: Int32) -> UploadError { UploadError(.transport, "x", underlying: CurlError(code: code)) }
        #expect(transport(SLUICE_CURLE_RECV_ERROR_VALUE).isTransient)
        #expect(transport(16).isTransient) // HTTP2
        #expect(!transport(48).isTransient) // UNKNOWN_OPTION
        #expect(!transport(43).isTransient) // BAD_FUNCTION_ARGUMENT
        #expect(!UploadError(.transport, "no code").isTransient)
        #expect(!UploadError(.tls, "x", underlying: CurlError(code: 60)).isTransient)
        #expect(CurlError(code: 60).isTLS && CurlError(code: 35).isTLS && !CurlError(code: 56).isTLS)
        // A real rejection by libcurl carries its code.
        let port = try CurlTransportTests.closedPort()
        let request = try UploadRequest(url: "http://127.0.0.1:\(port)/x", method: "PUT")
        let refused = await #expect(throws: UploadError.self) {
            try await CurlTransport().send(request, body: .bytes(SyntheticByteSource(length: 1)), options: UploadOptions()) { _ in }
        }
        #expect((refused?.underlying as? CurlError)?.code == 7)
        #expect(refused?.isTransient == true)
    }
}

private let SLUICE_CURLE_RECV_ERROR_VALUE: Int32 = 56

/// Polls `condition` every 20 ms for up to `seconds`; whether it became true.
func waitUntil(seconds: Double = 20, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
#endif
