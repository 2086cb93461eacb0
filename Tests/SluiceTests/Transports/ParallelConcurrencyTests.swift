#if os(Linux)
import Foundation
import Testing
@testable import Sluice

/// What the caller asks for is what runs: a parallel upload's `concurrency` above the engine's
/// per-origin limit (16), each part prepared (signed) when it starts, not while it waits.
@Suite("Parallel upload concurrency", .serialized, .timeLimit(.minutes(1)))
struct ParallelConcurrencyTests {
    @Test("32 parts at concurrency 32 against a server that holds each answer 1.5 s: 32 in flight, none prepared long before it was sent")
    func concurrencyAboveTheEnginesHostLimit() async throws {
        #expect(TransferEngine.shared.configuration.maximumTransfersPerHost < 32)
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let source = SyntheticByteSource(length: 32 * 1000, seed: 31)
        let base = peer.url("")
        var upload = ParallelUpload(parts: UploadPart.plan(length: source.length, partSize: 1000)) { part in
            // Stands in for a signature: it ages from the moment the part is prepared.
            let prepared = HTTPHeader(name: "X-Prepared-At", value: String(Date().timeIntervalSince1970))
            let request = try UploadRequest(url: base + "/hold/\(part.number)?ms=1500", method: "PUT", headers: [prepared])
            return PartRequest(request: request, body: .bytes(try SliceByteSource(source, range: part.range)))
        }
        upload.concurrency = 32
        let results = try await TransferEngine.shared.send(upload)
        #expect(results.count == 32 && results.allSatisfy { $0.response.status == 200 })
        let stats = try await ParallelUploadTests.stats(peer)
        // Before: at most 16 in flight; the other 16 were prepared, then waited 1.5 s in the engine's queue.
        #expect(stats.peak_held == 32)
        #expect(stats.peak_lag < 1.0, "a part reached the server \(stats.peak_lag) s after it was prepared")
    }

    @Test("S3's requests are bounded by S3Options.concurrency, not held back by the engine")
    func s3RequestsBoundTheirOwnConcurrency() {
        #expect(S3Options().requestTransfer.concurrencyBoundByCaller)
        #expect(!UploadOptions().concurrencyBoundByCaller)
    }
}
#endif
