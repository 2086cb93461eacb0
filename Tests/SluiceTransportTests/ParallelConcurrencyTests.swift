#if os(Linux)
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// What the caller asks for is what runs: a parallel upload's `concurrency` above the engine's
/// per-origin limit (16), each part prepared (signed) when it starts, not while it waits.
@Suite("Parallel upload concurrency", .serialized, .hangGuard)
struct ParallelConcurrencyTests {
    @Test("32 parts at concurrency 32 against a server that answers none until it holds all 32: 32 in flight at once")
    func concurrencyAboveTheEnginesHostLimit() async throws {
        #expect(TransferEngine.shared.configuration.maximumTransfersPerHost < 32)
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let source = SyntheticByteSource(length: 32 * 1000, seed: 31)
        let base = peer.url("")
        var upload = ParallelUpload(parts: UploadPart.plan(length: source.length, partSize: 1000)) { part in
            // A barrier, not a time: the server answers once 32 are held at once (or gives up
            // after 60 s, and the count below fails). Before: at most 16 in flight; the other 16
            // were prepared (signed), then waited in the engine's queue, so none got in.
            let request = try UploadRequest(url: base + "/hold/\(part.number)?until=32", method: "PUT")
            return PartRequest(request: request, body: .bytes(try SliceByteSource(source, range: part.range)))
        }
        upload.concurrency = 32
        let results = try await TransferEngine.shared.send(upload)
        #expect(results.count == 32 && results.allSatisfy { $0.response.status == 200 })
        let stats = try await peer.stats()
        #expect(stats.peak_held == 32)
    }

    @Test("S3's requests are bounded by S3Options.concurrency, not held back by the engine")
    func s3RequestsBoundTheirOwnConcurrency() {
        #expect(S3Options().requestTransfer.concurrencyBoundByCaller)
        #expect(!UploadOptions().concurrencyBoundByCaller)
    }
}
#endif
