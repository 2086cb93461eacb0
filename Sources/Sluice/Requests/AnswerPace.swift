/// The pace every answer keeps, derived from the stall timeout, as curl's `--speed-limit`/
/// `--speed-time` and `--max-time` bound a transfer: the one rule both transports apply.
///
/// The answer begins when the request's body is all sent (at once for a request without one)
/// or when the server's final answer begins before that. From then on its bytes (head and
/// body) must arrive at `minimumBytesPerSecond` or faster over every stall timeout, and the
/// whole answer within `answersPerStallTimeout` stall timeouts. A server that says nothing at
/// all is ended by the stall timeout (not judged here); a server that trickles its answer (5 bytes
/// a second kept every command alive for days, 2.4 per attempt for a 1 MiB S3 answer) by this.
///
/// - Important: A value type for one attempt, driven by its transport's thread; it reads no
///   clock: callers pass the time, so it is tested on a clock of the test's own.
package struct AnswerPace: Sendable {
    /// The slowest useful answer: bytes per second, averaged over each stall timeout.
    package static let minimumBytesPerSecond: Int64 = 1_024
    /// The longest answer, in stall timeouts from its beginning.
    package static let stallTimeoutsPerAnswer = 4

    /// Why an answer was ended, with the numbers.
    package enum Violation: Sendable, Equatable {
        /// `bytes` arrived in the last `window` (less than the minimum rate over it).
        case tooSlow(bytes: Int64, window: Duration)
        /// The answer was still arriving after `limit`.
        case tooLong(limit: Duration)

        /// One clause naming the host, e.g. "timed out: the answer from 127.0.0.1:80 came too slowly: ...".
        package func describe(host: String) -> String {
            switch self {
            case .tooSlow(let bytes, let window):
                let seconds = max(1, window.wholeUnits(of: .seconds(1)))
                return "timed out: the answer from \(host) came too slowly: \(bytes) bytes in \(seconds) s (stall timeout), "
                    + "under \(AnswerPace.minimumBytesPerSecond) bytes/s"
            case .tooLong(let limit):
                return "timed out: the answer from \(host) took longer than \(limit.wholeUnits(of: .seconds(1))) s "
                    + "(\(AnswerPace.stallTimeoutsPerAnswer) x the stall timeout)"
            }
        }
    }

    private let stallTimeout: Duration
    private var began: ContinuousClock.Instant?
    private var windowStart: ContinuousClock.Instant?
    private var windowBytes: Int64 = 0

    package init(stallTimeout: Duration) {
        self.stallTimeout = min(max(stallTimeout, .milliseconds(1)), UploadOptions.maximumTimeout)
    }

    /// Whether the answer has begun.
    package var hasBegun: Bool { began != nil }

    /// The answer begins (once; later calls change nothing).
    package mutating func begin(at now: ContinuousClock.Instant) {
        guard began == nil else { return }
        began = now
        windowStart = now
        windowBytes = 0
    }

    /// `count` bytes of the answer arrived.
    package mutating func received(_ count: Int) {
        windowBytes += Int64(count)
    }

    /// Whether the answer broke the rule by `now`; a window that kept the pace starts the next.
    package mutating func check(at now: ContinuousClock.Instant) -> Violation? {
        guard let began, let windowStart else { return nil }
        let limit = stallTimeout * Self.stallTimeoutsPerAnswer
        if now - began >= limit { return .tooLong(limit: limit) }
        let window = now - windowStart
        guard window >= stallTimeout else { return nil }
        let needed = Int64((Double(Self.minimumBytesPerSecond) * window.inSeconds).rounded(.down))
        // Nothing at all is a stall: the stall timeout's own check ends it and says so.
        guard windowBytes > 0 else { return nil }
        if windowBytes < needed { return .tooSlow(bytes: windowBytes, window: window) }
        self.windowStart = now
        windowBytes = 0
        return nil
    }
}
