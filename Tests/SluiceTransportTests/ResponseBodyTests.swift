import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Response bodies larger than the collect limit: streamed whole to a sink, or kept up to the
/// limit with the truncation visible. Both transports, against a loopback sink.
@Suite("Response bodies", .serialized, .hangGuard)
struct ResponseBodyTests {
    static let size = 20 * 1_048_576 + 13

    /// Hashes what the sink is handed; counts calls.
    final class HashingSink: @unchecked Sendable {
        // @unchecked: the transport calls the sink one call at a time; read after the upload.
        let digest = Digest(.sha256)
        var count: Int64 = 0
        func consume(_ bytes: UnsafeRawBufferPointer) {
            digest.update(bytes)
            count += Int64(bytes.count)
        }
    }

    private func upload(_ transport: TransportKind, _ url: String, options: UploadOptions) async throws -> UploadResponse {
        let request = try UploadRequest(url: url, method: "PUT")
        return try await Uploader(transport: transport, options: options).upload(request, body: .bytes(MemoryByteSource("hello")))
    }

    @Test("streamed: every byte reaches the sink, none is kept", arguments: TransportKind.allCases)
    func streamedWhole(transport: TransportKind) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let hashing = HashingSink()
        var options = UploadOptions()
        options.responseBody = .stream { hashing.consume($0) }
        // Through a redirect: the 307's own body must not reach the sink.
        let target = "/large?bytes=\(Self.size)&seed=5".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let response = try await upload(transport, sink.url("/redirect307?to=\(target)"), options: options)
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(!response.isBodyTruncated)
        #expect(response.bodyByteCount == Int64(Self.size))
        #expect(hashing.count == Int64(Self.size))
        #expect(hashing.digest.finalizeHex() == response.header("X-Body-SHA256"))
    }

    @Test("collected: the limit is kept and the truncation is flagged", arguments: TransportKind.allCases)
    func collectedIsTruncatedVisibly(transport: TransportKind) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        var options = UploadOptions()
        options.responseBody = .collect(limit: 1_000_003)
        let response = try await upload(transport, sink.url("/large?bytes=\(Self.size)&seed=6"), options: options)
        #expect(response.status == 200)
        #expect(response.isBodyTruncated)
        #expect(response.body.count == 1_000_003)
        #expect(response.bodyByteCount == Int64(Self.size))
        let whole = try await upload(transport, sink.url("/large?bytes=1000003&seed=6"), options: options)
        #expect(!whole.isBodyTruncated)
        #expect(whole.body == response.body)
        #expect(Digest.sha256Hex(Array(whole.body)) == whole.header("X-Body-SHA256"))
    }

    @Test("the default limit is 16 MiB and visible", arguments: TransportKind.allCases)
    func defaultLimit(transport: TransportKind) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let response = try await upload(transport, sink.url("/large?bytes=\(Self.size)&seed=7"), options: UploadOptions())
        #expect(response.isBodyTruncated)
        #expect(response.body.count == 16 << 20)
        #expect(response.bodyByteCount == Int64(Self.size))
    }

    struct Refused: Error {}

    @Test("a sink that throws ends the upload with responseSinkFailed", arguments: TransportKind.allCases)
    func throwingSink(transport: TransportKind) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        var options = UploadOptions()
        options.responseBody = .stream { _ in throw Refused() }
        let error = await #expect(throws: UploadError.self) {
            try await upload(transport, sink.url("/large?bytes=\(Self.size)&seed=8"), options: options)
        }
        #expect(error?.code == .responseSinkFailed)
        #expect(error?.underlying is Refused)
        #expect(error?.status == 200)
    }

    @Test("the receiver streams final bodies, holds 3xx/401/407 bodies until they are known final")
    func receiverHoldsIntermediateBodies() throws {
        let seen = Lock([UInt8]())
        let receiver = ResponseBodyReceiver(.stream { bytes in seen.withLock { $0 += bytes } })
        func feed(_ text: String) throws { try Array(text.utf8).withUnsafeBytes { try receiver.receive($0) } }
        receiver.begin(status: 307)
        try feed("redirect body")
        receiver.begin(status: 401)
        try feed("challenge")
        receiver.begin(status: 200)
        try feed("final ")
        #expect(seen.withLock { $0 } == Array("final ".utf8))  // streamed at once
        try feed("body")
        let done = try receiver.finish()
        #expect(seen.withLock { $0 } == Array("final body".utf8))
        #expect(done.body.isEmpty && done.byteCount == 10 && !done.isTruncated)
        // A 401 that turns out final: held, then handed over by finish.
        receiver.begin(status: 401)
        try feed("who are you?")
        #expect(seen.withLock { $0 } == Array("final body".utf8))
        _ = try receiver.finish()
        #expect(seen.withLock { $0 } == Array("final bodywho are you?".utf8))

        let collector = ResponseBodyReceiver(.collect(limit: 5))
        collector.begin(status: 200)
        try Array("0123456789".utf8).withUnsafeBytes { try collector.receive($0) }
        let kept = try collector.finish()
        #expect(kept.body == Data("01234".utf8) && kept.isTruncated && kept.byteCount == 10)
    }

    @Test("timeouts and limits out of range are invalidOption, never a trap")
    func absurdOptions() async throws {
        let absurd: [Duration] = [
            .seconds(Int64.max), .seconds(1e15), .seconds(-1), .nanoseconds(-1), .zero,
            UploadOptions.maximumTimeout * 2, UploadOptions.maximumTimeout + .nanoseconds(1),
        ]
        for timeout in absurd {
            var options = UploadOptions()
            options.stallTimeout = timeout
            #expect(throws: UploadError.self) { try options.validate() }
            options = UploadOptions()
            options.connectTimeout = timeout
            #expect(throws: UploadError.self) { try options.validate() }
            // What libcurl gets when a transport is called without validate(): never a trap.
            #expect(timeout.wholeUnits(of: .milliseconds(1)) >= 1)
            #expect(timeout.wholeUnits(of: .seconds(1)) <= 365 * 86_400)
            // Backoff delays: at most the cap, never negative, never an overflow.
            for attempt in [1, 2, 64, Int.max] {
                let delay = Duration.backoff(base: timeout, maximum: timeout, attempt: attempt)
                #expect(delay >= .zero && delay <= UploadOptions.maximumTimeout)
            }
            if timeout < .zero || timeout > UploadOptions.maximumTimeout {
                var tus = TusOptions()
                tus.maximumRetryDelay = timeout
                #expect(throws: TusError.self) { try tus.validate() }
                var s3 = S3Options()
                s3.retryDelay = timeout
                #expect(throws: S3Error.self) { try s3.validate() }
            }
        }
        var options = UploadOptions()
        options.responseBody = .collect(limit: -1)
        let error = #expect(throws: UploadError.self) { try options.validate() }
        #expect(error?.code == .invalidOption)
        options = UploadOptions()
        options.progressInterval = .seconds(-1)
        #expect(throws: UploadError.self) { try options.validate() }
        options = UploadOptions()
        options.stallTimeout = UploadOptions.maximumTimeout
        try options.validate()
    }
}
