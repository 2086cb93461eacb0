import Foundation
import SluiceRequests

/// When a failed request is tried again, and how long to wait first: the one policy every
/// protocol uses (the part scheduler's parts, `S3Client`'s requests, `TusClient`'s PATCHes).
///
/// A protocol gives the verdict (is this failure transient?), using the shared rules below for
/// what every protocol agrees on; the policy decides what happens next. Backoff doubles from
/// `baseDelay` up to `maximumDelay`, each delay drawn from its upper half ("equal jitter"), so
/// parts that failed together do not come back together.
public struct RetryPolicy: Sendable, Equatable {
    /// Failed attempts in a row (since the last progress) tried again; past it the work fails.
    public var retries: Int
    /// Failed attempts tried again in all, progress or not; nil for no limit beyond `retries`.
    public var maximumRetries: Int?
    /// First backoff delay; doubled for every failure in a row.
    public var baseDelay: Duration
    /// Longest backoff delay (and at most `UploadOptions.maximumTimeout`).
    public var maximumDelay: Duration
    /// Whether each delay is drawn from `delay/2 ... delay` instead of being exactly `delay`.
    public var jitter: Bool
    /// No new attempt starts once this long has passed since the first failure; nil for none.
    public var maximumRetryTime: Duration?

    /// A policy with these bounds; the defaults are the command line's.
    public init(
        retries: Int = 5, maximumRetries: Int? = nil, baseDelay: Duration = .milliseconds(250),
        maximumDelay: Duration = .seconds(8), jitter: Bool = true, maximumRetryTime: Duration? = nil
    ) {
        self.retries = retries
        self.maximumRetries = maximumRetries
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.jitter = jitter
        self.maximumRetryTime = maximumRetryTime
    }

    /// The wait before retry number `attempt` (1 for the first retry in a row).
    public func delay(attempt: Int) -> Duration {
        let full = Duration.backoff(base: baseDelay, maximum: maximumDelay, attempt: attempt)
        guard jitter, full > .zero else { return full }
        return full / 2 + full / 2 * Double.random(in: 0...1)
    }

    // MARK: What every protocol counts as transient

    /// Statuses a new attempt may cure: 408 Request Timeout, 429 Too Many Requests, any 5xx.
    public static func isTransient(status: Int) -> Bool {
        status == 408 || status == 429 || (500..<600).contains(status)
    }

    /// Transport failures a new attempt may cure: the connection, not the request, read from
    /// the error's typed code alone (each transport maps its own codes to them: libcurl's in
    /// `CurlError.uploadErrorCode`). Any other `.transport` failure (an option libcurl rejects),
    /// TLS and the rest are not retried.
    public static func isTransient(_ error: UploadError) -> Bool {
        switch error.code {
        case .connectionFailed, .connectionReset, .noResponse, .timedOut: return true
        default: return false
        }
    }
}

extension UploadError {
    /// `RetryPolicy.isTransient(self)`.
    package var isTransient: Bool { RetryPolicy.isTransient(self) }
}

/// One piece of work's attempts under a `RetryPolicy`: failures in a row, failures in all,
/// and the time since the first failure.
///
/// - Important: A value owned by one task (a part's loop, a request's loop, a tus upload).
package struct RetryBudget: Sendable {
    /// Why no further attempt is allowed.
    package enum Exhausted: Error, Equatable, CustomStringConvertible {
        case inARow(Int)
        case inAll(Int)
        case time(Duration)

        package var description: String {
            switch self {
            case .inARow(let count): return count == 1 ? "once" : "\(count) times in a row"
            case .inAll(let count): return count == 1 ? "once" : "\(count) times in all"
            case .time(let limit): return "for longer than \(limit) of retries"
            }
        }
    }

    package let policy: RetryPolicy
    /// Failures since the last progress.
    package private(set) var consecutive = 0
    /// Failures in all (each one retried or final).
    package private(set) var failures = 0
    private var firstFailure: ContinuousClock.Instant?

    package init(_ policy: RetryPolicy) { self.policy = policy }

    /// The work moved forward: the count of failures in a row starts again.
    package mutating func progressed() { consecutive = 0 }

    /// Counts a transient failure.
    ///
    /// - Returns: The delay before the next attempt, or why there is none.
    package mutating func failed() -> Result<Duration, Exhausted> {
        consecutive += 1
        failures += 1
        let now = ContinuousClock.now
        if firstFailure == nil { firstFailure = now }
        var exhausted: Exhausted?
        if consecutive > policy.retries {
            exhausted = .inARow(consecutive)
        } else if let limit = policy.maximumRetries, failures > limit {
            exhausted = .inAll(failures)
        } else if let limit = policy.maximumRetryTime, let first = firstFailure, now - first >= limit {
            exhausted = .time(limit)
        }
        if let exhausted { return .failure(exhausted) }
        return .success(policy.delay(attempt: consecutive))
    }
}
