import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A stand-in S3 that answers the multipart calls with canned XML and records which part
/// buffers it was handed, and how many parts were in flight at once. A fake only to look
/// inside the stream pool; the real server tests are `S3ClientSeaweedTests` and Tests/e2e.
final class CannedS3: UploadTransport {
    struct Seen {
        var buffers = Set<ObjectIdentifier>()
        var inFlight = 0
        var peakInFlight = 0
        var parts: [Int: Int64] = [:]
        /// Parts sent as signed aws-chunked.
        var chunkedParts = Set<Int>()
        /// The most read-ahead memory any part's signed body held.
        var readAheadBytes = 0
    }
    // Sluice's `Lock` (pthread): ThreadSanitizer sees its ordering; it reported two accesses
    // under Synchronization's `Mutex` as a race.
    let seen = Lock(Seen())

    func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        let query = request.url.query ?? ""
        func answer(_ status: Int, _ xml: String = "", headers: [HTTPHeader] = []) -> UploadResponse {
            UploadResponse(status: status, headers: headers, body: Data(xml.utf8), bytesSent: body.length.value ?? 0, url: request.url)
        }
        if request.method == "POST", query.hasPrefix("uploads") {
            return answer(200, "<InitiateMultipartUploadResult><UploadId>U</UploadId></InitiateMultipartUploadResult>")
        }
        if request.method == "POST" {
            let count = seen.withLock { $0.parts.count }
            return answer(200, "<CompleteMultipartUploadResult><ETag>\"e-\(count)\"</ETag></CompleteMultipartUploadResult>")
        }
        let chunked: AWSChunkedBody?
        if case .random(let source, _) = body.storage { chunked = source as? AWSChunkedBody } else { chunked = nil }
        guard request.method == "PUT", case .random(let source, _) = body.storage,
            let buffer = (chunked?.source ?? source) as? S3PartBuffer,
            let number = query.split(separator: "&").first(where: { $0.hasPrefix("partNumber=") }).flatMap({ Int($0.dropFirst(11)) })
        else {
            return answer(400, "<Error><Code>Unexpected</Code></Error>")
        }
        seen.withLock { seen in
            seen.buffers.insert(ObjectIdentifier(buffer))
            seen.inFlight += 1
            seen.peakInFlight = max(seen.peakInFlight, seen.inFlight)
            seen.parts[number] = buffer.length
            if chunked != nil { seen.chunkedParts.insert(number) }
            seen.readAheadBytes = max(seen.readAheadBytes, chunked?.readAheadMemoryBytes ?? 0)
        }
        // Read the whole body, as a connection would, then let other parts overlap.
        if let chunked { _ = try chunked.trailerChecksum() } else { _ = try source.bytes(in: 0..<source.length) }
        try await Task.sleep(for: .milliseconds(Int.random(in: 1...20)))
        seen.withLock { $0.inFlight -= 1 }
        return answer(200, headers: [HTTPHeader(name: "ETag", value: "\"p\(number)\"")])
    }
}

struct S3StreamPoolTests {
    @Test(.hangGuard, arguments: [1, 3, 8])
    func aStreamUsesAtMostConcurrencyBuffers(concurrency: Int) async throws {
        let server = CannedS3()
        var options = S3Options()
        options.partSize = 5 << 20
        options.concurrency = concurrency
        options.streamStepParts = 4
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"),
                endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: server)
        // 5 MiB × 4, then 10 MiB × 4, then the rest: 22 parts' worth is too slow for a unit
        // test; 12 parts cover a size step and the pool's reuse.
        let length: Int64 = 4 * (5 << 20) + 4 * (10 << 20) + 3 * (20 << 20) + 12345
        let result = try await client.uploadStream(SyntheticStream(length: length, seed: 3), to: S3Location(parsing: "s3://bucket/k"))
        let seen = server.seen.withLock { $0 }
        #expect(result.partCount == 12 && result.length == length)
        #expect(seen.parts.count == 12)
        #expect(seen.parts[1] == 5 << 20 && seen.parts[5] == 10 << 20 && seen.parts[9] == 20 << 20 && seen.parts[12] == 12345)
        #expect(seen.peakInFlight <= concurrency)
        // The next part is read only into a buffer a finished part gave back (read while every
        // slot was busy, it took one more: concurrency + 1, and the peak RSS over the bound).
        #expect(seen.buffers.count <= concurrency, "\(seen.buffers.count) buffers for concurrency \(concurrency)")
        // The parts are signed aws-chunked (http): hashed in place, no read-ahead copy on top
        // of the pool. The last, under `S3Client.headerSignedBodyLimit`, is signed in the header.
        #expect(seen.readAheadBytes == 0)
        #expect(seen.chunkedParts == Set(1...11))
    }
}
