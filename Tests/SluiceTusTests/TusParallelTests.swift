#if os(Linux)
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// tus on the transfer engine: one connection per upload; parallel partial uploads joined by
/// the concatenation extension (tuspyserver lists and implements it).
@Suite(.serialized, .hangGuard)
struct TusParallelTests {
    func options(state: String, chunk: Int64) -> TusOptions {
        var options = TusOptions()
        options.stateDirectory = state
        options.chunkSize = chunk
        options.retryDelay = .milliseconds(50)
        options.maximumRetryDelay = .milliseconds(500)
        options.transfer.progressInterval = .zero
        return options
    }

    @Test("every request of one chunked upload (OPTIONS, POST with the first chunk, 11 PATCHes) goes over one connection")
    func oneConnectionPerUpload() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let engine = TransferEngine(configuration: .init(loops: 2))
        defer { engine.shutdown() }
        let state = try tusTemporaryDirectory("tus-one-connection")
        let source = SyntheticByteSource(length: 12 << 20, seed: 31)
        let client = TusClient(transport: CurlTransport(engine: engine), options: options(state: state, chunk: 1 << 20))
        let result = try await client.upload(TusSource(source, identity: "synthetic:one-connection:\(UUID())"), to: peer.endpoint)
        #expect(result.dataRequests >= 12)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == (try Digest.sha256(of: source)))
        #expect(engine.statistics.finished == result.dataRequests + 1, "OPTIONS plus the data requests")
        #expect(engine.statistics.connectionsOpened == 1, "connections: \(engine.statistics.connectionsOpened)")
    }

    @Test("--parallel 4: four partial uploads joined by Upload-Concat: final, byte-exact; the partial records are dropped")
    func parallelConcatenation() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let state = try tusTemporaryDirectory("tus-parallel")
        let source = SyntheticByteSource(length: (20 << 20) + 12_345, seed: 32)
        var options = options(state: state, chunk: 2 << 20)
        options.parallelUploads = 4
        let last = Lock<Int64>(0)
        let result = try await TusClient(options: options).upload(
            TusSource(source, identity: "synthetic:parallel:\(UUID())"), to: peer.endpoint
        ) { progress in
            last.withLock { $0 = max($0, progress.bytesSent) }
        }
        #expect(result.length == source.length)
        #expect(result.bytesResent == 0)
        #expect(result.dataRequests >= 12)
        #expect(last.withLock { $0 } == source.length)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == (try Digest.sha256(of: source)))
        let status = try await TusClient(options: options).status(of: result.uploadURL)
        #expect(status.offset == source.length)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".json") }.isEmpty)
    }

    @Test("a cancelled parallel upload resumes each partial upload at its server offset")
    func parallelResumes() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let state = try tusTemporaryDirectory("tus-parallel-resume")
        let source = TusSource(SyntheticByteSource(length: 48 << 20, seed: 33), identity: "synthetic:parallel-resume:\(UUID())")
        var options = options(state: state, chunk: 1 << 20)
        options.parallelUploads = 4
        let client = TusClient(options: options)
        let (reached, signal) = AsyncStream<Void>.makeStream()
        let task = Task {
            try await client.upload(source, to: peer.endpoint) { progress in
                if progress.bytesSent >= 16 << 20 { signal.yield() }
            }
        }
        for await _ in reached { break }
        task.cancel()
        let cancelled = await task.result
        if case .success = cancelled { Issue.record("the upload finished before its cancel") }
        let records = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".json") }
        #expect(records.count == 4, "one record per partial upload: \(records)")
        for name in records {
            let record = try JSONDecoder().decode(TusRecord.self, from: Data(contentsOf: URL(fileURLWithPath: state + "/" + name)))
            try peer.waitUntilIdle(try #require(URL(string: record.uploadURL)))
        }
        let result = try await client.upload(source, to: peer.endpoint)
        #expect(result.resumedFrom > 0)
        #expect(result.resumedFrom < source.bytes.length)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == (try Digest.sha256(of: source.bytes)))
    }
}
#endif
