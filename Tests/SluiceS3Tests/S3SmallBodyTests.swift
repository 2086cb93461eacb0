import Foundation
import Synchronization
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A body sent in one request while its source changes, against SeaweedFS (which checks the
/// signed SHA-256 of every body). Below `S3Client.headerSignedBodyLimit` the body is read once
/// into the buffer that is hashed and sent; above it, the server's refusal of bytes that
/// changed after they were hashed is reported as the change it is, not as `BadDigest`.
@Suite(
    .seaweed, .serialized,
    .hangGuard)
struct S3SmallBodyTests {
    let peer = SeaweedPeer.current!

    func client(transport: any UploadTransport = CurlTransport(), _ configure: (inout S3Options) -> Void = { _ in }) throws -> S3Client {
        try peer.client(state: "s3-small-state", transport: transport) {
            $0.retries = 0; configure(&$0)
        }
    }

    func location() throws -> S3Location { try peer.location("small/", suffix: ".bin") }

    @Test("a small body whose bytes differ at each read is read once: what was hashed is what was stored")
    func aSmallBodyIsReadOnce() async throws {
        let source = ChangingByteSource(length: 30_001)
        let target = try location()
        // Before: a hash pass and a send pass, and SeaweedFS refused the second pass's bytes.
        let result = try await client().upload(
            S3Source(source, identity: "changing", fingerprint: S3SourceFingerprint(size: source.length)), to: target)
        #expect(result.length == source.length)
        #expect(source.passes.withLock { $0 } == 1)
        let stored = try await peer.stored(key: target.key)
        #expect(stored.sha256 == (try Digest.sha256(of: MemoryByteSource([UInt8](repeating: 1, count: 30_001)))))
    }

    @Test("a longer body rewritten after it was hashed: the server's refusal is reported as the change")
    func aRefusalCausedByAChangeSaysSo() async throws {
        let path = try s3TemporaryDirectory("s3-small-source") + "/body.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x61, count: 100_000)))
        let file = try FileByteSource(path: path)
        defer { file.close() }
        /// Rewrites the file (until its change time moves) as the PUT leaves: after the hash pass.
        final class RewritingTransport: UploadTransport {
            let curl = CurlTransport()
            let path: String
            let file: FileByteSource
            init(path: String, file: FileByteSource) { (self.path, self.file) = (path, file) }
            func send(
                _ request: UploadRequest, body: UploadBody, options: UploadOptions, progress: @escaping @Sendable (Int64) -> Void
            ) async throws -> UploadResponse {
                if request.method == "PUT" {
                    repeat { rewriteFile(path, [0x62]) } while (try file.currentSizeAndChangeTime().change) == file.timesInNanoseconds.change
                }
                return try await curl.send(request, body: body, options: options, progress: progress)
            }
        }
        let client = try client(transport: RewritingTransport(path: path, file: file)) { $0.payloadSigning = .sha256 }
        let error = await #expect(throws: S3Error.self) {
            try await client.upload(S3Source(file, identity: "file:\(path)", fingerprint: S3SourceFingerprint(file: file)), to: try location())
        }
        #expect(error?.code == .sourceChanged, "\(String(describing: error))")
        #expect(
            error?.message.hasPrefix("the source changed while it was sent (its modification time changed)") == true,
            "\(String(describing: error))")
    }
}
