import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// The one retry policy: what is transient, how long to wait, when to stop.
struct RetryPolicyTests {
    @Test func transientStatuses() {
        #expect([408, 429, 500, 503, 599].allSatisfy(RetryPolicy.isTransient(status:)))
        #expect(![200, 301, 400, 401, 403, 404, 409, 412, 413, 423, 600].contains(where: RetryPolicy.isTransient(status:)))
        #expect(RetryPolicy.isTransient(UploadError(.connectionReset, "reset")))
        // libcurl's codes reach the policy as typed codes: every transient one is retried, TLS
        // and an option libcurl rejects are not; the policy never reads a CURLcode.
        for code in CurlError.transientCodes {
            #expect(RetryPolicy.isTransient(UploadError(CurlError(code: code).uploadErrorCode, "x", underlying: CurlError(code: code))), "\(code)")
        }
        #expect(!RetryPolicy.isTransient(UploadError(CurlError(code: 60).uploadErrorCode, "tls", underlying: CurlError(code: 60))))
        #expect(!RetryPolicy.isTransient(UploadError(CurlError(code: 48).uploadErrorCode, "option", underlying: CurlError(code: 48))))
        #expect(!RetryPolicy.isTransient(UploadError(.transport, "recv", underlying: CurlError(code: 56))), "a code, not what lies under it")
        #expect(!RetryPolicy.isTransient(UploadError(.httpStatus, "503", status: 503)), "a status is the protocol's verdict")
        // S3 keeps its own codes on top of the shared statuses.
        #expect(S3ServerError(code: "SlowDown", message: "").isRetryable(status: 400))
        #expect(S3ServerError(code: "AccessDenied", message: "").isRetryable(status: 429))
        #expect(!S3ServerError(code: "AccessDenied", message: "").isRetryable(status: 403))
    }

    @Test func backoffWithJitterStaysInTheUpperHalf() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maximumDelay: .seconds(1))
        for attempt in 1...8 {
            let full = Duration.backoff(base: .milliseconds(100), maximum: .seconds(1), attempt: attempt)
            for _ in 0..<50 {
                let delay = policy.delay(attempt: attempt)
                #expect(delay >= full / 2 && delay <= full, "attempt \(attempt): \(delay) of \(full)")
            }
        }
        var exact = policy
        exact.jitter = false
        #expect(exact.delay(attempt: 3) == .milliseconds(400))
        #expect(RetryPolicy(baseDelay: .zero).delay(attempt: 5) == .zero)
    }

    @Test func failuresInARowStartAgainWithProgress() {
        var budget = RetryBudget(RetryPolicy(retries: 2, jitter: false))
        #expect((try? budget.failed().get()) != nil)
        #expect((try? budget.failed().get()) != nil)
        budget.progressed()
        #expect((try? budget.failed().get()) != nil)
        #expect((try? budget.failed().get()) != nil)
        #expect(budget.failed() == .failure(.inARow(3)))
        #expect(budget.failures == 5)
    }

    @Test func failuresInAllAreCappedWhateverTheProgress() {
        var budget = RetryBudget(RetryPolicy(retries: 2, maximumRetries: 3))
        for _ in 0..<3 {
            #expect((try? budget.failed().get()) != nil)
            budget.progressed()
        }
        #expect(budget.failed() == .failure(.inAll(4)))
    }

    @Test func retryTimeIsCapped() {
        var budget = RetryBudget(RetryPolicy(retries: 100, maximumRetryTime: .zero))
        #expect(budget.failed() == .failure(.time(.zero)))
    }
}
