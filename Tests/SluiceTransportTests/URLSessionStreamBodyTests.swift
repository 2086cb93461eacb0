import Dispatch
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The URLSession transport's `.stream` bodies (issue 8 §5): the caller's stream is pumped
/// through an `InputStreamSource` on Sluice's own queue, counted, and never handed to URLSession.
@Suite(.hangGuard) struct InputStreamSourceStreamBodyTests {
    @Test func aShortStreamNeverEndsInSuccess() async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let request = try UploadRequest(url: receiver.url + "short", method: "PUT")
        // Declares 200,000 bytes, yields 150,000: the server would answer 2xx to what it got.
        let body = UploadBody.stream(length: .known(200_000)) { InputStream(data: Data(repeating: 7, count: 150_000)) }
        do {
            let response = try await URLSessionTransport().send(request, body: body, options: UploadOptions()) { _ in }
            Issue.record("a short stream ended in \(response.status) after \(response.bytesSent) bytes")
        } catch let error as UploadError {
            #expect(error.code == .sourceFailed, "\(error)")
        }
    }

    @Test func aStreamOfUnknownLengthArrivesWholeAndCounted() async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let source = SyntheticByteSource(length: 3_000_017, seed: 12)
        let bytes = try source.bytes(in: 0..<source.length)
        let request = try UploadRequest(url: receiver.url + "whole", method: "PUT")
        let body = UploadBody.stream(length: .unknown) { InputStream(data: Data(bytes)) }
        var options = UploadOptions()
        options.bufferSize = 4096
        let response = try await URLSessionTransport().send(request, body: body, options: options) { _ in }
        #expect(response.isSuccess)
        #expect(response.bytesSent == source.length)
        #expect(await onThread { receiver.waitForUploads(1, timeout: patience) })
        let received = try #require(receiver.completed.first)
        #expect(received.bytes == source.length)
        #expect(received.sha256 == (await onThread { try? Digest.sha256(of: source) }))
    }

    /// A caller's stream that blocks in `read` blocks only Sluice's pumping queue. URLSession
    /// reads the pair, whose read a cancel wakes at once: the blocked upload ends promptly and
    /// an upload started meanwhile (URLSession on Linux drives every task from one shared
    /// queue) goes through.
    @Test func aBlockingStreamIsCancelledAndReleasesURLSession() async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let (stuck, gate) = try await Self.startBlockedUpload(to: receiver, stallTimeout: .seconds(60))
        defer { gate.signal() }
        let other = Self.startSmallUpload(to: receiver)
        stuck.cancel()
        switch await taskResult(of: stuck) {
        case nil:
            Issue.record("cancelling an upload whose body stream blocks did not end it within the test's patience")
        case .success(let response)?:
            Issue.record("a cancelled upload succeeded: \(response.status)")
        case .failure(let error)?:
            #expect((error as? UploadError)?.code == .cancelled, "\(error)")
        }
        let otherResult = await taskResult(of: other)
        #expect((try? otherResult?.get())?.bytesSent == 300_000, "the other upload: \(String(describing: otherResult))")
    }

    /// Nobody cancels: the pair's reader gives up after the stall timeout with an error that
    /// names the real cause, so URLSession's queue is held no longer than that.
    @Test func aBlockingStreamEndsInAStallTimeoutNamingTheSource() async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        // Blocked from its first read: with bytes still in the ring, a busy machine can keep
        // URLSession's shared queue from reading them for the whole request timeout, and then
        // the server side is rightly named instead of the source.
        let (stuck, gate) = try await Self.startBlockedUpload(to: receiver, stallTimeout: .seconds(1), prefix: 0)
        defer { gate.signal() }
        let other = Self.startSmallUpload(to: receiver)
        switch await taskResult(of: stuck) {
        case nil:
            Issue.record("an upload whose body stream blocks did not time out within the test's patience (stall timeout 1 s)")
        case .success(let response)?:
            Issue.record("a stalled upload succeeded: \(response.status)")
        case .failure(let error)?:
            let uploadError = error as? UploadError
            #expect(uploadError?.code == .timedOut, "\(error)")
            #expect("\(error)".contains("body source produced nothing for 1 s"), "\(error)")
        }
        let otherResult = await taskResult(of: other)
        #expect((try? otherResult?.get())?.bytesSent == 300_000, "the other upload: \(String(describing: otherResult))")
    }

    /// Starts an upload whose `.stream` body yields `prefix` bytes (more than the pair's ring
    /// holds by default) and then blocks in `read` until the returned gate is signalled;
    /// returns once it is blocked there.
    private static func startBlockedUpload(
        to receiver: LoopbackReceiver, stallTimeout: Duration, prefix: Int = 100_000
    ) async throws -> (Task<UploadResponse, any Error>, DispatchSemaphore) {
        let blocked = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let body = UploadBody.stream(length: .unknown) { GatedInputStream(prefix: prefix, blocked: blocked, gate: gate) }
        var options = UploadOptions()
        options.stallTimeout = stallTimeout
        let request = try UploadRequest(url: receiver.url + "stuck", method: "PUT")
        let task = Task { try await URLSessionTransport().send(request, body: body, options: options) { _ in } }
        // Gate: the caller's stream is now blocked inside `read`.
        let reached = await onThread { blocked.wait(timeout: .afterPatience) }
        #expect(reached == .success, "the body stream was never read to its blocking point")
        return (task, gate)
    }

    private static func startSmallUpload(to receiver: LoopbackReceiver) -> Task<UploadResponse, any Error> {
        Task {
            try await URLSessionTransport().send(
                try UploadRequest(url: receiver.url + "other", method: "PUT"),
                body: .bytes(MemoryByteSource([UInt8](repeating: 1, count: 300_000))), options: UploadOptions()
            ) { _ in }
        }
    }
}

/// An input stream that yields `prefix` bytes, then blocks in `read` (after signalling
/// `blocked`) until `gate` is signalled, then ends.
private final class GatedInputStream: InputStream {
    // Read from one thread at a time; the semaphores are thread-safe.
    private var remaining: Int
    private let blocked: DispatchSemaphore
    private let gate: DispatchSemaphore
    private var status: Stream.Status = .notOpen

    init(prefix: Int, blocked: DispatchSemaphore, gate: DispatchSemaphore) {
        self.remaining = prefix
        self.blocked = blocked
        self.gate = gate
        super.init(data: Data())
    }

    override func open() { status = .open }
    override func close() { status = .closed }
    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { nil }
    override var hasBytesAvailable: Bool { true }
    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool { false }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        if remaining > 0 {
            let count = min(len, remaining)
            buffer.update(repeating: 3, count: count)
            remaining -= count
            return count
        }
        blocked.signal()
        gate.wait()
        gate.signal()
        return 0
    }
}
