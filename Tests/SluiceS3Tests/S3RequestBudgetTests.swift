#if os(Linux)
import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `S3Options.requestBudget` holds what it says: a request attempt holds a permit while it is
/// sent, and none through a retry's backoff.
@Suite(.hangGuard)
struct S3RequestBudgetTests {
    /// A `PutObject` answered 503 waits out a backoff far longer than the test may run: the
    /// budget's one permit is free meanwhile (before: held through the backoff).
    @Test func aPutObjectHoldsNoPermitThroughItsBackoff() async throws {
        let peer = try CurlSink(script: "parts_server.py")
        defer { peer.stop() }
        let budget = RequestBudget(limit: 1)
        var options = S3Options()
        options.requestBudget = budget
        options.retryDelay = .seconds(600)
        options.maximumRetryDelay = .seconds(600)
        options.stateDirectory = try s3TemporaryDirectory("s3-budget")
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"),
            endpoint: URL(string: peer.url(""))!)
        let client = S3Client(configuration: configuration, options: options, transport: .curl)
        // parts_server answers the first request for a /flaky/ path 503.
        let location = try S3Location(bucket: "flaky", key: "object")
        let putting = Task { try await client.upload(S3Source.synthetic(length: 1000, seed: 1), to: location) }
        // Until the server has answered the first attempt (a condition, polled).
        while try await peer.stats().attempts["/flaky/object"] != 1 {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await budget.acquire()
        budget.release()
        putting.cancel()
        let result = await putting.result
        guard case .failure(let error) = result else {
            Issue.record("the PutObject ended as \(result), not in its backoff")
            return
        }
        #expect((error as? S3Error)?.code == .cancelled, "\(error)")
        #expect(try await peer.stats().attempts["/flaky/object"] == 1)
    }
}
#endif
