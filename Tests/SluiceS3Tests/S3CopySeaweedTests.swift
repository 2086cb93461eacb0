import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `S3Client.copy(_:from:to:progress:)` in the library against SeaweedFS: by the store with no
/// source client or one of the same endpoint and keys, streamed with a client that names the
/// same server by another name (another store to Sluice); the result says which, and the copy
/// is the source's bytes, read back by boto3.
@Suite(.seaweed, .serialized, .hangGuard)
struct S3CopySeaweedTests {
    let peer = SeaweedPeer.current!

    /// A client of the same SeaweedFS under `localhost` instead of `127.0.0.1`.
    func otherName() throws -> S3Client {
        var configuration = peer.configuration
        var components = URLComponents(url: peer.endpoint, resolvingAgainstBaseURL: false)!
        components.host = "localhost"
        configuration.endpoint = components.url
        return S3Client(configuration: configuration, options: try peer.client(state: "s3-copy-reader").options)
    }

    @Test(arguments: [Int64(1 << 20), 11 << 20])
    func theRouteSaysWhichWayTheBytesWent(length: Int64) async throws {
        let client = try peer.client(state: "s3-copy") { $0.partSize = 5 << 20 }
        let source = try peer.location("copy-route/")
        _ = try await client.upload(S3Source.synthetic(length: length, seed: 9), to: source)
        let want = try await peer.stored(key: source.key)

        let byStore = try await client.copy(source, from: client, to: try peer.location("copy-route/store-"))
        #expect(byStore.route == .store && byStore.storeRefusal == nil && byStore.bytesSent == 0)
        let copied = try await peer.stored(key: byStore.location.key)
        #expect(copied.sha256 == want.sha256)

        let reader = try otherName()
        let same = try peer.client(state: "s3-copy-same")
        #expect(!client.sharesStore(with: reader) && client.sharesStore(with: same))
        let streamed = try await client.copy(source, from: reader, to: try peer.location("copy-route/streamed-"))
        #expect(streamed.route == .streamed && streamed.storeRefusal == nil)
        #expect(streamed.bytesSent >= length && streamed.length == length)
        #expect(streamed.partCount == (length > 5 << 20 ? 3 : nil))
        let read = try await peer.stored(key: streamed.location.key)
        #expect(read.sha256 == want.sha256)
    }

    @Test func aMissingSourceIsASourceError() async throws {
        let client = try peer.client(state: "s3-copy-missing")
        let (missing, reader, target) = (try peer.location("copy-route/none-"), try otherName(), try peer.location("copy-route/x-"))
        await #expect {
            _ = try await client.copy(missing, from: reader, to: target)
        } throws: { ($0 as? S3Error)?.code == .source }
    }

    /// A multipart copy by the store interrupted at its third part (the transport cancels it
    /// there, as a signal would) keeps its upload and record; the next run lists the two parts
    /// the store holds and copies only the other three. With a checksum asked of the store,
    /// which SeaweedFS's `ListParts` does not list, the held parts' checksums come from the
    /// parts journal beside the record.
    @Test(arguments: [nil, ChecksumAlgorithm.crc32c])
    func anInterruptedCopyByTheStoreResumesWithThePartsTheStoreHolds(checksum: ChecksumAlgorithm?) async throws {
        let configure = { (options: inout S3Options) in
            options.partSize = 5 << 20
            options.concurrency = 1
            options.storeCopyChecksum = checksum
        }
        let client = try peer.client(state: "s3-copy-resume", configure)
        let source = try peer.location("copy-resume/")
        _ = try await client.upload(S3Source.synthetic(length: (21 << 20) + 5, seed: 12), to: source)
        let want = try await peer.stored(key: source.key)
        let target = try peer.location("copy-resume/to-")
        let partCopies = Lock<[String]>([])
        let counting: @Sendable (UploadRequest) -> Void = { request in
            guard request.header("x-amz-copy-source") != nil, let query = request.url.query, query.contains("partNumber=") else { return }
            partCopies.withLock { $0.append(query) }
        }
        let failing = InterceptingTransport(inner: CurlTransport()) { request in
            counting(request)
            if request.header("x-amz-copy-source") != nil, request.url.query?.contains("partNumber=3&") == true {
                throw UploadError(.cancelled, "the test's interruption at part 3")
            }
        }
        let interrupted = S3Client(configuration: client.configuration, options: client.options, transport: failing)
        let failure = await #expect(throws: S3Error.self) { _ = try await interrupted.copy(source, to: target) }
        let uploadID = try #require(failure?.uploadID)
        #expect(S3StateStore(directory: client.options.stateDirectory).records { $0.uploadID == uploadID }.count == 1)
        #expect(partCopies.withLock { $0.count } == 3)

        partCopies.withLock { $0 = [] }
        let resuming = S3Client(
            configuration: client.configuration, options: client.options, transport: InterceptingTransport(inner: CurlTransport()) { counting($0) })
        let copied = try await resuming.copy(source, to: target)
        #expect(copied.route == .store && copied.uploadID == uploadID && copied.partCount == 5 && copied.partsSkipped == 2)
        #expect(partCopies.withLock { $0.count } == 3)
        #expect(try await peer.stored(key: target.key).sha256 == want.sha256)
        #expect(S3StateStore(directory: client.options.stateDirectory).records { _ in true }.isEmpty)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: try #require(client.options.stateDirectory))
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
