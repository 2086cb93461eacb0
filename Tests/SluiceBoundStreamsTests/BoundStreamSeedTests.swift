import Dispatch
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The seed's own usage of the pair (issue 8 §1): output scheduled in a run loop, exactly one
/// `write` per `hasSpaceAvailable`, from a fixed buffer smaller than, equal to or larger than
/// the pair's capacity.
@Suite(.hangGuard) struct BoundStreamSeedTests {
    /// The watchdog found the pair stuck; `state` is the pair's state machine at that moment.
    struct Stalled: Error, CustomStringConvertible {
        var state: String
        var description: String { "stuck: \(state)" }
    }

    @Test(arguments: [
        (65536, 65536), (65536, 4096), (65536, 65535), (65536, 65537), (65536, 200_000),
        (1000, 1000), (1000, 999), (1000, 1001), (1000, 3000), (1000, 7),
    ])
    func oneWritePerSpaceEventDeliversEveryByte(capacity: Int, writeBuffer: Int) async throws {
        let length: Int64 = capacity >= 65536 ? 4 << 20 : 300_007
        let source = SyntheticByteSource(length: length, seed: UInt64(capacity &* 31 &+ writeBuffer))
        let pair = BoundStreamPair(capacity: capacity)
        let writer = SeedWriter(output: pair.outputStream, source: source, bufferSize: writeBuffer)
        let outcome = await drainWithWatchdog(pair, writer: writer)
        #expect(
            outcome.error == nil,
            "capacity \(capacity), one write of up to \(writeBuffer) per event: stalled after \(outcome.bytes.count) of \(length) bytes: \(String(describing: outcome.error))")
        #expect(outcome.bytes.count == Int(length))
        #expect(outcome.bytes == (try source.bytes(in: 0..<length)))
        #expect(try await writer.result().get() == length)
    }

    /// The body is exactly one ring: the writer fills it with one write, and must hear again
    /// (to close) once the reader drained it.
    @Test(arguments: [65536, 1000])
    func aBodyOfExactlyOneRingEnds(capacity: Int) async throws {
        let source = SyntheticByteSource(length: Int64(capacity), seed: 3)
        let pair = BoundStreamPair(capacity: capacity)
        let writer = SeedWriter(output: pair.outputStream, source: source, bufferSize: capacity)
        let outcome = await drainWithWatchdog(pair, writer: writer)
        #expect(outcome.error == nil, "capacity \(capacity): the end never came after \(outcome.bytes.count) bytes: \(String(describing: outcome.error))")
        #expect(outcome.bytes == (try source.bytes(in: 0..<Int64(capacity))))
    }

    /// Reads `pair` to its end. When the reader takes no byte for `stuckAfter` seconds while
    /// the writer has not finished (a lost wakeup, not a slow machine: any progress resets the
    /// clock), fails the pair so the test fails with the pair's state instead of hanging.
    private func drainWithWatchdog(
        _ pair: BoundStreamPair, writer: SeedWriter, stuckAfter: Double = 15
    ) async -> (bytes: [UInt8], error: (any Error)?) {
        let drained = DispatchSemaphore(value: 0)
        let watchdog = Thread {
            var last = pair.bytesRead
            var quietSince = DispatchTime.now()
            while drained.wait(timeout: .now() + 0.25) == .timedOut {
                let now = pair.bytesRead
                if now != last {
                    last = now
                    quietSince = .now()
                } else if DispatchTime.now().uptimeNanoseconds - quietSince.uptimeNanoseconds > UInt64(stuckAfter * 1e9) {
                    let stalled = Stalled(
                        state: pair.core.lock.withLock { "\($0.state), \($0.ring.freeSpace) of \($0.ring.capacity) free, \($0.totalWritten) written, \($0.totalRead) read" })
                    writer.stop(stalled)
                    pair.fail(stalled)
                    return
                }
            }
        }
        watchdog.start()
        let outcome = await onThread { drain(pair.inputStream) }
        drained.signal()
        return outcome
    }
}

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The seed's program as an Apple developer writes it, unchanged: `Stream.getBoundStreams`
/// (Sluice's extension on Linux), the seed's one-write-per-event delegate in a run loop, and
/// plain `URLSession` sending the input stream as `httpBodyStream`.
@Suite(.hangGuard) struct BoundStreamSeedURLSessionTests {
    /// 64 MiB through the seed's 64 KiB buffer; less through the small ones, whose one event
    /// per thousand bytes holds FoundationNetworking's one shared queue (every URLSession test
    /// of the process waits behind each read) for minutes on a busy machine at 64 MiB.
    @Test(arguments: zip([65536, 4096, 1000], [Int64(64 << 20), 16 << 20, 4 << 20]))
    func theSeedsProgramUploadsByteExact(bufferSize: Int, length: Int64) async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let source = SyntheticByteSource(length: length, seed: UInt64(bufferSize))
        var input: InputStream?
        var output: OutputStream?
        Stream.getBoundStreams(withBufferSize: bufferSize, inputStream: &input, outputStream: &output)
        let writer = SeedWriter(output: try #require(output), source: source, bufferSize: bufferSize)
        var request = URLRequest(url: try #require(URL(string: receiver.url + "seed-\(bufferSize)")))
        request.httpMethod = "PUT"
        request.httpBodyStream = input
        request.timeoutInterval = 60
        let status = try await Self.send(request)
        #expect(status == 200 || status == 201 || status == 204, "status \(status)")
        #expect(try await writer.result().get() == length)
        #expect(await onThread { receiver.waitForUploads(1, timeout: patience) })
        let received = try #require(receiver.completed.first)
        #expect(received.bytes == length)
        #expect(received.sha256 == (await onThread { try? Digest.sha256(of: source) }))
    }

    /// Sends `request` with `URLSession.shared.dataTask`; the response's status. The task is
    /// made and resumed on a dispatch thread: on Linux both wait for URLSession's shared queue,
    /// which must not hold one of Swift's two cooperative threads.
    private static func send(_ request: URLRequest) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                URLSession.shared.dataTask(with: request) { _, response, error in
                    if let error { return continuation.resume(throwing: error) }
                    continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? -1)
                }.resume()
            }
        }
    }
}
