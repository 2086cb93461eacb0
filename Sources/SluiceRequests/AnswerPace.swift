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
/// An answer that may keep its connection alive with whitespace (`keepAlive`: S3's
/// `CompleteMultipartUpload` answers 200 at once and then sends spaces, a byte every few
/// seconds, while it joins the parts, for minutes, before its XML) is judged differently until
/// its first byte that is not whitespace: its pace is not judged, only that bytes keep coming
/// (no silence of a whole stall timeout: `silent`) and that the document begins within
/// `keepAlive`; from that byte on, the rule above applies as to any answer. Over libcurl, whose
/// own stall check (under 1 byte a second for a stall timeout) would end such a wait, the
/// transport turns that check off for the request and asks `checkSilence` instead.
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
        /// Nothing was sent or received for `window` (a keep-alive answer's own stall check).
        case silent(window: Duration)
        /// A keep-alive answer sent only whitespace for `limit`.
        case noDocument(limit: Duration)

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
            case .noDocument(let limit):
                return "timed out: the answer from \(host) held its document back behind whitespace for \(limit.wholeUnits(of: .seconds(1))) s"
            case .silent(let window):
                return "timed out talking to \(host): nothing sent or received for \(max(1, window.wholeUnits(of: .seconds(1)))) s (stall timeout)"
            }
        }
    }

    private let stallTimeout: Duration
    /// The longest answer: `stallTimeoutsPerAnswer` stall timeouts.
    private let limit: Duration
    /// How long a keep-alive answer may send whitespace before its document; nil for none.
    package let keepAlive: Duration?
    /// The first instant given: every time below is a `Duration` from it. (An instant is of a
    /// type whose layout is the runtime's to know, so each comparison, sum or optional of two
    /// was a call through its witnesses: the pace is asked at each of libcurl's progress
    /// calls, several a request, a run of small files' 1 %.)
    private var origin: ContinuousClock.Instant?
    private var began: Duration?
    private var windowStart: Duration?
    private var windowBytes: Int64 = 0
    /// The first time `check` can find a violation at, nil until worked out again: before it,
    /// `check` compares two durations and does no arithmetic.
    private var quietUntil: Duration?
    /// A keep-alive answer whose body so far is whitespace only (and an XML declaration).
    private var awaitingDocument: Bool
    /// Where a keep-alive answer's body is in its leading XML declaration (`<?xml …?>`, which
    /// S3 may send before its spaces): 0 outside, 1 after `<`, 2 inside, 3 after its `?`.
    private var declaration = 0
    /// Bytes of the answer so far (head and body).
    private var total: Int64 = 0
    /// Bytes sent and received when `checkSilence` last saw them change, and when.
    private var activity: (count: Int64, at: Duration)?

    /// - Parameters:
    ///   - stallTimeout: The request's stall timeout.
    ///   - keepAlive: How long the answer may keep its connection alive with whitespace before
    ///     its document (`UploadOptions.answerKeepAlive`); nil: every byte is judged.
    package init(stallTimeout: Duration, keepAlive: Duration? = nil) {
        self.stallTimeout = min(max(stallTimeout, .milliseconds(1)), UploadOptions.maximumTimeout)
        limit = self.stallTimeout * Self.stallTimeoutsPerAnswer
        self.keepAlive = keepAlive
        awaitingDocument = keepAlive != nil
    }

    /// Whether the answer has begun.
    package var hasBegun: Bool { began != nil }

    /// `instant` as a duration from `origin` (which it becomes, the first time).
    private mutating func time(_ instant: ContinuousClock.Instant) -> Duration {
        guard let origin else {
            origin = instant
            return .zero
        }
        return instant - origin
    }

    /// The answer begins (once; later calls change nothing).
    package mutating func begin(at instant: ContinuousClock.Instant) {
        guard began == nil else { return }
        let now = time(instant)
        began = now
        windowStart = now
        windowBytes = 0
        quietUntil = nil
    }

    /// `count` bytes of the answer arrived (its head, or a body whose bytes need no look).
    package mutating func received(_ count: Int) {
        windowBytes += Int64(count)
        total += Int64(count)
    }

    /// Bytes of the answer's body arrived: a keep-alive answer's first byte that is not
    /// whitespace begins its document, and the pace rule from then on.
    package mutating func receivedBody(_ bytes: UnsafeRawBufferPointer, at instant: ContinuousClock.Instant) {
        received(bytes.count)
        guard awaitingDocument, !bytes.allSatisfy({ awaitsDocument(after: $0) }) else { return }
        awaitingDocument = false
        let now = time(instant)
        began = now
        windowStart = now
        windowBytes = Int64(bytes.count)
        quietUntil = nil
    }

    /// A keep-alive answer's own stall check, for a transport whose check is off: nil while
    /// bytes go either way (`sent`: the request's bytes sent so far), else `.silent` once a
    /// stall timeout passed with none. Always nil without `keepAlive`.
    package mutating func checkSilence(sent: Int64, at instant: ContinuousClock.Instant) -> Violation? {
        guard keepAlive != nil else { return nil }
        let now = time(instant)
        let count = sent + total
        guard let last = activity, last.count == count else {
            activity = (count, now)
            return nil
        }
        return now - last.at >= stallTimeout ? .silent(window: now - last.at) : nil
    }

    /// Whether the answer still waits for its document after `byte`: whitespace, or a byte of
    /// a leading XML declaration.
    private mutating func awaitsDocument(after byte: UInt8) -> Bool {
        switch (declaration, byte) {
        case (0, 0x20), (0, 0x09), (0, 0x0A), (0, 0x0D): return true
        case (0, UInt8(ascii: "<")): declaration = 1
        case (1, UInt8(ascii: "?")): declaration = 2
        case (2, UInt8(ascii: "?")), (3, UInt8(ascii: "?")): declaration = 3
        case (3, UInt8(ascii: ">")): declaration = 0
        case (2, _), (3, _): declaration = 2
        default: return false
        }
        return true
    }

    /// Whether the answer broke the rule by `instant`; a window that kept the pace starts the next.
    package mutating func check(at instant: ContinuousClock.Instant) -> Violation? {
        guard let began, let windowStart else { return nil }
        let now = time(instant)
        if let quietUntil, now < quietUntil { return nil }
        if awaitingDocument, let keepAlive {
            // Whitespace so far: only the wait for the document is bounded (silence is
            // `checkSilence`'s, or the transport's, to end).
            quietUntil = began + keepAlive
            return now - began >= keepAlive ? .noDocument(limit: keepAlive) : nil
        }
        quietUntil = min(began + limit, windowStart + stallTimeout)
        if now - began >= limit { return .tooLong(limit: limit) }
        let window = now - windowStart
        guard window >= stallTimeout else { return nil }
        let needed = Int64((Double(Self.minimumBytesPerSecond) * window.inSeconds).rounded(.down))
        // Nothing at all is a stall: the stall timeout's own check ends it and says so.
        guard windowBytes > 0 else { return nil }
        if windowBytes < needed { return .tooSlow(bytes: windowBytes, window: window) }
        self.windowStart = now
        windowBytes = 0
        quietUntil = nil
        return nil
    }
}
