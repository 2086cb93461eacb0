#if os(Linux)
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A signed aws-chunked body on the engine: the loop never waits for the read-ahead (it
/// pauses the transfer and is woken), and the read-ahead ends with its request.
@Suite("aws-chunked read-ahead on the engine's loops", .serialized, .hangGuard)
struct ReadAheadEngineTests {
    /// Synthetic bytes whose reads from `firstGate` on wait until the test opens the first gate,
    /// and from `secondGate` on until it opens the second; it counts the reads in flight.
    final class GatedSource: ByteSource {
        struct State {
            var firstOpen = false
            var secondOpen = false
            var reachedFirst = false
            var inFlight = 0
        }

        let base: SyntheticByteSource
        let firstGate: Int64
        let secondGate: Int64
        let state = Lock(State())

        init(length: Int64, firstGate: Int64, secondGate: Int64) {
            base = SyntheticByteSource(length: length, seed: 17)
            self.firstGate = firstGate
            self.secondGate = secondGate
        }

        var length: Int64 { base.length }

        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
            state.withLockBroadcasting { state in
                state.inFlight += 1
                if offset >= firstGate { state.reachedFirst = true }
            }
            defer { state.withLockBroadcasting { $0.inFlight -= 1 } }
            if offset >= firstGate { state.wait { $0.firstOpen ? () : nil } }
            if offset >= secondGate { state.wait { $0.secondOpen ? () : nil } }
            return try base.read(into: buffer, at: offset)
        }

        func open(first: Bool = false, second: Bool = false) {
            state.withLockBroadcasting { state in
                if first { state.firstOpen = true }
                if second { state.secondOpen = true }
            }
        }
    }

    static let chunk = AWSChunkedEncoding.defaultChunkSize

    /// A signed aws-chunked body over `source`, with its read-ahead, and the request that sends it.
    static func signedBody(_ source: any ByteSource, to url: String) throws -> (UploadRequest, AWSChunkedBody) {
        let signer = SigV4Signer(credentials: S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret"), region: "us-east-1")
        let request = try SigV4Request(method: "PUT", url: url)
        let (signature, body) = try signer.signChunked(request, body: source, mode: .signed)
        #expect(body.readAheadMemoryBytes > 0, "the body reads ahead")
        return (try signature.uploadRequest(for: request), body)
    }

    @Test("while one transfer waits for its read-ahead, another on the same loop runs to its end")
    func loopDoesNotWaitForReadAhead() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 1))
        defer { engine.shutdown() }
        let source = GatedSource(length: Int64(32 * Self.chunk), firstGate: Int64(4 * Self.chunk), secondGate: .max)
        defer { source.open(first: true, second: true) }
        let (request, body) = try Self.signedBody(source, to: sink.url("/sink/gated"))
        let gated = Task { try await engine.send(request, body: .bytes(body)) }
        // Gate: the read-ahead is held at chunk 4, so the transfer waits for it.
        #expect(await onThread { source.state.wait(timeout: patienceSeconds) { $0.reachedFirst ? true : nil } } ?? false)
        let other = try UploadRequest(url: sink.url("/sink/other"), method: "PUT")
        let otherTask = Task { try await engine.send(other, body: .bytes(SyntheticByteSource(length: 100_000))) }
        let otherDone = await Self.result(of: otherTask, within: patienceSeconds)
        #expect(otherDone != nil, "a transfer on the loop could not run while another waited for its read-ahead")
        source.open(first: true)
        let response = try await gated.value
        #expect(response.status == 200)
        let report = try CurlSink.report(response)
        #expect(report.count == body.length)
        _ = await otherTask.result
    }

    @Test("when a request ends (cancelled here), its read-ahead has stopped and no read of its source is in flight")
    func readAheadEndsWithItsRequest() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let engine = TransferEngine(configuration: .init(loops: 1))
        defer { engine.shutdown() }
        let source = GatedSource(length: Int64(40 * Self.chunk), firstGate: Int64(4 * Self.chunk), secondGate: Int64(5 * Self.chunk))
        defer { source.open(first: true, second: true) }
        let (request, body) = try Self.signedBody(source, to: sink.url("/sink/cancelled"))
        let task = Task { try await engine.send(request, body: .bytes(body)) }
        #expect(await onThread { source.state.wait(timeout: patienceSeconds) { $0.reachedFirst ? true : nil } } ?? false)
        task.cancel()
        // Gate: the loop saw the cancel and ended the read-ahead, which is inside its read of
        // chunk 4. That read may finish now; chunk 5 and later wait for the second gate, opened
        // only once the request has ended: a read-ahead still running then would be inside it.
        let ended = await waitUntil { body.isReadAheadEnded }
        #expect(ended, "the request's end did not end its read-ahead")
        source.open(first: true)
        let result = await Self.result(of: task, within: patienceSeconds)
        let inFlight = source.state.withLock { $0.inFlight }
        let running = body.isReadingAhead
        source.open(second: true)
        switch result {
        case .failure(let error as UploadError)?: #expect(error.code == .cancelled, "\(error)")
        case nil: Issue.record("the cancelled request did not end: its loop waits for the read-ahead")
        default: Issue.record("expected .cancelled, got \(String(describing: result))")
        }
        #expect(inFlight == 0, "\(inFlight) reads of the source were in flight after the request ended")
        #expect(!running, "the read-ahead was still running after its request ended")
    }

    /// The task's result, or nil when it does not end within `seconds`.
    static func result<T: Sendable>(of task: Task<T, any Error>, within seconds: Double) async -> Result<T, any Error>? {
        let box = Lock<Result<T, any Error>?>(nil)
        Task {
            let result = await task.result
            box.withLockBroadcasting { $0 = result }
        }
        return await onThread { box.wait(timeout: seconds) { $0 } }
    }
}
#endif
