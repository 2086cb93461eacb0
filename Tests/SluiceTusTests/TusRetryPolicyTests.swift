import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// tus under the one `RetryPolicy`: progress is the highest offset ever confirmed rising, and
/// failures in all are capped (`Tests/Peers/tus_lying_offsets.py`: every PATCH 409, HEAD lies).
@Suite(.serialized, .hangGuard)
struct TusRetryPolicyTests {
    struct Stats: Decodable {
        var patches: Int
        var heads: Int
    }

    func start(offsets: [Int64], cycle: Bool) throws -> (TusPeerProcess, URL) {
        let process = try TusPeerProcess(
            ["python3", peersDirectory + "/tus_lying_offsets.py", "--offsets", offsets.map(String.init).joined(separator: ",")]
                + (cycle ? ["--cycle"] : []),
            portPattern: #"PORT (\d+)"#)
        return (process, URL(string: "http://127.0.0.1:\(process.port)/files/")!)
    }

    func stats(_ endpoint: URL) async throws -> Stats {
        let request = try UploadRequest(url: URL(string: "/stats", relativeTo: endpoint)!.absoluteURL, method: "GET")
        let response = try await CurlTransport().send(request, body: .bytes(MemoryByteSource([UInt8]())), options: UploadOptions()) { _ in }
        return try JSONDecoder().decode(Stats.self, from: response.body)
    }

    /// The upload's outcome, or nil when it was still retrying after `limit` requests (then
    /// cancelled): a count, not a time, so a busy machine cannot change the verdict.
    func outcome(_ options: TusOptions, source: TusSource, to endpoint: URL, limit: Int) async -> Result<TusUploadResult, any Error>? {
        let transport = InterceptingTransport.limited(CurlTransport(), to: limit)
        let result = await Task { try await TusClient(transport: transport, options: options).upload(source, to: endpoint) }.result
        if case .failure(let error as TusError) = result, error.code == .cancelled { return nil }
        return result
    }

    func options() throws -> TusOptions {
        var options = TusOptions()
        options.stateDirectory = try tusTemporaryDirectory("tus-state")
        options.retryDelay = .zero
        options.maximumRetryDelay = .zero
        return options
    }

    @Test("offsets that go back and forth (0, 64 KiB, 0, ...) with every PATCH 409: fails after the retries in a row")
    func offsetsGoingBackwardsEnd() async throws {
        // Before: every rise from 0 to 1 MiB counted as progress and reset the count: still
        // retrying after 100 s with default options, sending the same MiB again and again.
        let (peer, endpoint) = try start(offsets: [0, 64 << 10], cycle: true)
        defer { peer.stop() }
        let source = TusSource(SyntheticByteSource(length: 256 << 10, seed: 3), identity: "synthetic:lying")
        let result = await outcome(try options(), source: source, to: endpoint, limit: 1_000)
        guard case .failure(let error as TusError)? = result else {
            Issue.record("expected .retriesExhausted, got \(result.map { "\($0)" } ?? "still retrying after 1,000 requests")")
            return
        }
        #expect(error.code == .retriesExhausted)
        #expect("\(error)".contains("in a row"), "\(error)")
        #expect("\(error)".contains("the highest offset it confirmed: 65536"), "\(error)")
        let stats = try await stats(endpoint)
        // Two failures before the one rise to 64 KiB, then 5 retries in a row and the last failure.
        #expect(stats.patches <= TusOptions().retries + 3, "\(stats.patches) PATCHes")
    }

    @Test("offsets that rise by one byte after each fall: the failures in all are capped")
    func failuresInAllAreCapped() async throws {
        // 0, 1, 0, 2, 0, 3, ...: each new high is progress, so only the cap on failures in all ends it.
        let offsets = (1...400).flatMap { [Int64(0), Int64($0)] }
        let (peer, endpoint) = try start(offsets: offsets, cycle: false)
        defer { peer.stop() }
        var options = try options()
        options.maximumRetries = 20
        let source = TusSource(SyntheticByteSource(length: 64 << 10, seed: 4), identity: "synthetic:creeping")
        let result = await outcome(options, source: source, to: endpoint, limit: 1_000)
        guard case .failure(let error as TusError)? = result else {
            Issue.record("expected .retriesExhausted, got \(result.map { "\($0)" } ?? "still retrying after 1,000 requests")")
            return
        }
        #expect(error.code == .retriesExhausted)
        #expect("\(error)".contains("21 times in all"), "\(error)")
        #expect(try await stats(endpoint).patches == 21)
    }
}
