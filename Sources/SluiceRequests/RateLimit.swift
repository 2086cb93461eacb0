@_spi(Floors) import SluicePrimitives

/// One cap on bytes per second, shared by every request that draws from it: a token bucket
/// (rclone's `--bwlimit`, curl's `--limit-rate`, but across all connections of a job).
///
/// A sender asks for up to the bytes it could send now (`take(upTo:)`) and gets what the
/// bucket holds, or, when it holds too little, how long to wait before asking again. The
/// bucket refills at `bytesPerSecond` and holds at most `burst` bytes: a tenth of a second's
/// worth. So over any window of `t` seconds at most `burst + bytesPerSecond × t` bytes go out:
/// within 1 % of the cap over 10 s.
///
/// - Important: Thread-safe; every loop thread and task may draw from one instance.
public final class RateLimit: Sendable {
    /// The cap.
    public let bytesPerSecond: Int64
    /// The most bytes the bucket holds after an idle spell.
    public let burst: Int64
    /// The least a sender is woken for, so a slow cap does not wake senders for a byte each.
    public let minimumGrant: Int64
    /// The most one grant carries (a quarter of the burst), so one sender cannot empty the
    /// bucket while the others wait.
    public let maximumGrant: Int64

    /// Caps above this are no cap at all (a terabyte per second).
    public static let maximumBytesPerSecond: Int64 = 1 << 40

    package struct Bucket {
        package var tokens: Double
        package var refilled: ContinuousClock.Instant
        /// Bytes granted less bytes given back, since the start.
        package var taken: Int64 = 0
    }

    private let bucket: Lock<Bucket>

    /// A cap of `bytesPerSecond`.
    ///
    /// - Throws: `UploadError` with code `.invalidOption` for a cap below 1 byte per second or
    ///   above `maximumBytesPerSecond`.
    public init(bytesPerSecond: Int64, now: ContinuousClock.Instant = .now) throws(UploadError) {
        guard bytesPerSecond >= 1, bytesPerSecond <= Self.maximumBytesPerSecond else {
            throw UploadError(.invalidOption, "a rate limit of \(bytesPerSecond) bytes per second is outside 1 ... \(Self.maximumBytesPerSecond)")
        }
        self.bytesPerSecond = bytesPerSecond
        // A hundredth of a second's bytes, at most 1 MiB: a few hundred wake-ups a second at any cap.
        minimumGrant = min(1 << 20, max(1, bytesPerSecond / 100))
        burst = max(minimumGrant, bytesPerSecond / 10)
        maximumGrant = max(minimumGrant, burst / 4)
        // Start full: a new job may send its first tenth of a second at once.
        bucket = Lock(Bucket(tokens: Double(burst), refilled: now))
    }

    /// What a sender may do now.
    public enum Grant: Sendable, Equatable {
        /// Send this many bytes (at least 1, at most what was asked).
        case send(Int)
        /// Send nothing; ask again after this long.
        case wait(Duration)
    }

    /// Takes up to `wanted` bytes from the bucket.
    ///
    /// - Parameters:
    ///   - wanted: What the sender could send now (at least 1).
    ///   - now: The time (tests pass their own clock).
    /// - Returns: `.send(n)`, `1 ≤ n ≤ min(wanted, maximumGrant)`, or `.wait(d)` until at least
    ///   `min(wanted, minimumGrant)` bytes are there.
    public func take(upTo wanted: Int, now: ContinuousClock.Instant = .now) -> Grant {
        precondition(wanted >= 1)
        let rate = Double(bytesPerSecond)
        return bucket.withLock { bucket in
            let elapsed = now - bucket.refilled
            if elapsed > .zero {
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                bucket.tokens = min(Double(burst), bucket.tokens + seconds * rate)
                bucket.refilled = now
            }
            let least = Double(min(Int64(wanted), minimumGrant))
            guard bucket.tokens >= least else {
                let seconds = (least - bucket.tokens) / rate
                return .wait(.nanoseconds(max(1, Int64((seconds * 1e9).rounded(.up)))))
            }
            let granted = Int(min(Int64(wanted), Int64(bucket.tokens), maximumGrant))
            bucket.tokens -= Double(granted)
            bucket.taken += Int64(granted)
            return .send(granted)
        }
    }

    /// Returns bytes taken but not sent (a short read, the end of a body).
    public func giveBack(_ count: Int) {
        guard count > 0 else { return }
        bucket.withLock {
            $0.tokens = min(Double(burst), $0.tokens + Double(count))
            $0.taken -= Int64(count)
        }
    }

    /// Bytes granted less bytes given back since this cap was made: what its senders were let send.
    package var bytesTaken: Int64 { bucket.withLock { $0.taken } }

    /// Takes `count` bytes, grant by grant, waiting as a sender over the cap waits, for a body
    /// that goes out whole once taken (URLSession's sized bodies, handed over as data, which
    /// no pump paces): the cap holds over the job, each such body going as one burst after its wait.
    ///
    /// - Parameter count: The body's length.
    /// - Throws: `CancellationError` when the task is cancelled while it waits; what was taken
    ///   is given back.
    package func takeWhole(_ count: Int64) async throws(CancellationError) {
        var taken: Int64 = 0
        while taken < count {
            switch take(upTo: Int(min(count - taken, Int64(Int.max)))) {
            case .send(let granted):
                taken += Int64(granted)
            case .wait(let delay):
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    giveBack(Int(taken))
                    throw CancellationError()
                }
            }
        }
    }
}
