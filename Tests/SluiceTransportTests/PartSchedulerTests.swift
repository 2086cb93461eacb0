#if os(Linux)
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The part scheduler over both transports: the same retry, concurrency, budget, progress and
/// failure semantics on URLSession (the only transport on Apple platforms) as on libcurl.
/// `Tests/Peers/parts_server.py` answers each part with the SHA-256 of its body as its ETag
/// (`ParallelUploadTests.verify` checks them).
@Suite("Part scheduler over every transport", .serialized, .hangGuard)
struct PartSchedulerTests {
    static func upload(_ source: any ByteSource, partSize: Int64, _ path: @escaping @Sendable (UploadPart) -> String) -> ParallelUpload {
        var upload = ParallelUpload(source: source, partSize: partSize) { part in try UploadRequest(url: path(part), method: "PUT") }
        upload.retryDelay = .milliseconds(10)
        return upload
    }

    @Test(
        "a part reset mid-body and a part answered 503 are each retried alone from their start; progress never goes down unannounced",
        arguments: [TransportKind.curl, .urlsession])
    func failedPartsRetriedAlone(transport: TransportKind) async throws {
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let base = peer.url("")
        let source = SyntheticByteSource(length: 6 << 20 | 4321, seed: 61)
        var upload = Self.upload(source, partSize: 1 << 20) { part in
            switch part.number {
            case 2: base + "/reset/2"
            case 5: base + "/flaky/5"
            default: base + "/part/\(part.number)"
            }
        }
        upload.concurrency = 3
        let recorder = PartProgressTests.Recorder()
        let results = try await upload.send(over: transport.makeTransport()) { recorder.record($0) }
        #expect(results.map(\.part.number) == Array(1...7))
        try ParallelUploadTests.verify(results, source)
        #expect(results.map(\.attempts) == [1, 2, 1, 1, 2, 1, 1])
        let stats = try await peer.stats()
        #expect(stats.attempts["/reset/2"] == 2 && stats.attempts["/flaky/5"] == 2)
        #expect(stats.attempts.filter { !["/reset/2", "/flaky/5"].contains($0.key) }.values.allSatisfy { $0 == 1 })
        let state = recorder.state.withLock { $0 }
        #expect(state.unannouncedDrops.isEmpty, "progress went down unannounced: \(state.unannouncedDrops.prefix(5))")
        #expect(state.reports.last?.bytesSent == source.length && state.reports.last?.partsDone == 7)
        #expect(state.reports.last?.retries == 2)
    }

    @Test(
        "a part's body as sent may be longer than the part (aws-chunked on URLSession counts its signatures): progress counts at most the part, and does not drop when it is done")
    func progressCountsBytesOfTheSource() {
        let recorder = PartProgressTests.Recorder()
        let tracker = PartTracker(report: { recorder.record($0) })
        tracker.begin(0, UploadPart(number: 1, offset: 0, length: 100))
        tracker.update(0, 60)
        tracker.update(0, 114)
        tracker.done(0)
        tracker.finish()
        let state = recorder.state.withLock { $0 }
        #expect(state.reports.map(\.bytesSent) == [60, 100, 100, 100])
        #expect(state.unannouncedDrops.isEmpty)
        #expect(state.reports.last?.totalBytes == 100 && state.reports.last?.partsTotal == 1)
    }

    @Test(
        "concurrency is what runs, exactly: 32 of 32 parts held at once, and 5 when 5 are asked for",
        arguments: [TransportKind.curl, .urlsession], [32, 5])
    func concurrencyHonouredExactly(transport: TransportKind, concurrency: Int) async throws {
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let base = peer.url("")
        let source = SyntheticByteSource(length: 32 * 1000, seed: 62)
        // A barrier, not a clock: the server holds every answer until `concurrency` requests are
        // held at once (so that many ran together), and a held count goes down before its answer
        // leaves (so a part started only after one ended never counts twice).
        var upload = Self.upload(source, partSize: 1000) { base + "/hold/\($0.number)?until=\(concurrency)" }
        upload.concurrency = concurrency
        let results = try await upload.send(over: transport.makeTransport())
        #expect(results.count == 32 && results.allSatisfy { $0.response.status == 200 })
        try ParallelUploadTests.verify(results, source)
        #expect(try await peer.stats().peak_held == concurrency)
    }

    @Test(
        "two uploads sharing a budget of 3 requests: 3 in flight at most, together, and the budget was used to its limit",
        arguments: [TransportKind.curl, .urlsession])
    func budgetShared(transport: TransportKind) async throws {
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let base = peer.url("")
        let budget = RequestBudget(limit: 3)
        let sources = [SyntheticByteSource(length: 8 * 1000, seed: 63), SyntheticByteSource(length: 8 * 1000, seed: 64)]
        let transport = transport.makeTransport()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, source) in sources.enumerated() {
                // Held until three are (a barrier): the budget was used to its limit, never past it.
                var upload = Self.upload(source, partSize: 1000) { base + "/hold/\(index)-\($0.number)?until=3" }
                upload.concurrency = 4
                upload.budget = budget
                group.addTask { try ParallelUploadTests.verify(try await upload.send(over: transport), source) }
            }
            try await group.waitForAll()
        }
        let stats = try await peer.stats()
        #expect(stats.requests == 16)
        #expect(stats.peak_held == 3)
        #expect(budget.mostInFlight == 3)
    }

    @Test(
        "a part that fails for good: one line naming it once; the typed PartFailure carries the attempts and the protocol's own error",
        arguments: [TransportKind.curl, .urlsession])
    func typedFailure(transport: TransportKind) async throws {
        struct ServerSaid: Error, Equatable { var code: String }
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let base = peer.url("")
        let source = SyntheticByteSource(length: 4 << 20, seed: 65)
        // The other parts are held until 1,000 requests are (never, within the test): the failure
        // can only come out if they are cancelled, not waited for.
        var upload = Self.upload(source, partSize: 1 << 20) { base + ($0.number == 2 ? "/fail/2" : "/hold/\($0.number)?until=1000") }
        upload.retries = 1
        upload.verdict = { part, response in
            response.status == 500 ? .retry("the server answered 500", cause: ServerSaid(code: "InternalError")) : .accept
        }
        let error = await #expect(throws: UploadError.self) { try await upload.send(over: transport.makeTransport()) }
        #expect(error?.message == "part 2 (bytes 1048576-2097151) failed after 2 attempts (status 500): the server answered 500")
        #expect(error?.status == 500)
        let failure = try #require(error?.underlying as? PartFailure)
        #expect(failure.part.number == 2 && failure.attempts == 2 && failure.retriesExhausted)
        #expect(failure.cause as? ServerSaid == ServerSaid(code: "InternalError"))
        let stats = try await peer.stats()
        #expect(stats.attempts["/fail/2"] == 2)
        // Only the two 500s were answered: the held parts were cancelled, not waited for.
        #expect(stats.requests == 2, "the parts held by the server were waited for")
    }

    @Test(
        "what an accepted part made travels in its result: the attempt's own verdict is asked, not the upload's, and its accepted value is the result's made",
        arguments: [TransportKind.curl, .urlsession])
    func acceptedPartCarriesWhatItMade(transport: TransportKind) async throws {
        struct Made: Sendable, Equatable {
            var part: Int
            var attempt: Int
            var eTag: String
        }
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let base = peer.url("")
        let source = SyntheticByteSource(length: 5 << 20 | 777, seed: 67)
        let attempts = Lock<[Int: Int]>([:])
        // The upload's verdict is never asked: each attempt carries its own.
        let unasked: @Sendable (UploadPart, UploadResponse) -> PartVerdictOf<Made> = { _, _ in
            .fail("the upload's verdict was asked instead of the attempt's")
        }
        var upload = ParallelUploadOf(parts: UploadPart.plan(length: source.length, partSize: 1 << 20), verdict: unasked) { part in
            // Part 3 is answered 503 once: its second attempt's own verdict is the one asked.
            let attempt = attempts.withLock { counts -> Int in
                counts[part.number, default: 0] += 1
                return counts[part.number, default: 0]
            }
            let path = part.number == 3 ? "/flaky/3" : "/part/\(part.number)"
            return PartRequestOf<Made>(
                request: try UploadRequest(url: base + path, method: "PUT"), body: .bytes(try SliceByteSource(source, range: part.range)),
                verdict: { response in
                    guard (200..<300).contains(response.status) else { return .retry("the server answered \(response.status)") }
                    return .accepted(Made(part: part.number, attempt: attempt, eTag: response.header("ETag") ?? ""))
                })
        }
        upload.retryDelay = .milliseconds(10)
        let results = try await upload.send(over: transport.makeTransport())
        try ParallelUploadTests.verify(results, source)
        let made = results.map(\.made)
        #expect(made.map(\.part) == Array(1...6))
        #expect(made.map(\.attempt) == [1, 1, 2, 1, 1, 1])
        #expect(zip(made, results).allSatisfy { $0.eTag == $1.response.header("ETag") && !$0.eTag.isEmpty })
    }
}
#endif
