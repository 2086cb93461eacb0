import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceRequests

/// Turns raw byte counts into throttled `UploadProgress` with a smoothed rate.
///
/// - Important: `update` may be called from any thread, as often as the transport likes;
///   `report` runs outside the state's lock, at most once per `interval`, plus once in
///   `finish`. An update that comes too soon after a report is not dropped: it is reported
///   when the interval has passed (the count a stalled upload reached is shown, not the one
///   before its last burst), unless `finish` came first. Reports go out one at a time, and
///   none after `finish`'s. The held-back report waits on one `ProgressTicker` shared by every
///   meter: a meter arms no timer of its own, and `finish` takes it off the ticker.
package final class ProgressMeter: Sendable {
    private struct State {
        package var lastReport = -Double.infinity
        package var rate: Double = 0
        package var sampleTime: Double = 0
        package var sampleBytes: Int64 = 0
        package var latest: Int64 = 0
        /// The count the last report gave.
        package var reported: Int64 = -1
        /// A report of `latest` is due at the end of the interval.
        package var pending = false

        /// The report of `bytesSent` at `now`, the rate smoothed over samples 0.25 s apart.
        package mutating func progress(_ bytesSent: Int64, now: Double, total: Int64?) -> UploadProgress {
            lastReport = now
            reported = bytesSent
            let dt = now - sampleTime
            if dt >= 0.25 {
                // A replay restarts the count: never let the rate go negative.
                let instant = Double(max(0, bytesSent - sampleBytes)) / dt
                rate = rate == 0 ? instant : rate * 0.6 + instant * 0.4
                sampleTime = now
                sampleBytes = bytesSent
            } else if rate == 0 && now > 0 {
                // Before the first full sample: the average since the start.
                rate = Double(bytesSent) / now
            }
            return UploadProgress(bytesSent: bytesSent, totalBytes: total, bytesPerSecond: rate, elapsed: now)
        }
    }

    private let total: Int64?
    private let interval: Double
    private let report: (@Sendable (UploadProgress) -> Void)?
    private let start = ContinuousClock.now
    private let state = Lock(State())
    /// Held while a report is made: one at a time, and none after `finish`'s. Its value is
    /// whether `finish` reported (a lock of `Void` would put its empty value at its mutex's
    /// address, which ThreadSanitizer reads as a race).
    private let reporting = Lock(false)
    private let ticker: ProgressTicker

    package init(
        total: Int64?, interval: Duration, ticker: ProgressTicker = .shared, report: (@Sendable (UploadProgress) -> Void)?
    ) {
        self.total = total
        self.interval = interval.inSeconds
        self.ticker = ticker
        self.report = report
    }

    private var elapsed: Double {
        (ContinuousClock.now - start).inSeconds
    }

    package func update(_ bytesSent: Int64) {
        guard let report else { return }
        // Most updates come within the interval with a flush already asked for: the count is
        // kept, nothing else (no second lock).
        let held = state.withLock { state in
            guard state.pending, elapsed - state.lastReport < interval else { return false }
            state.latest = bytesSent
            return true
        }
        if held { return }
        // The report is made inside the reporting lock, as `flush` makes it: a flush cannot
        // slip between this update's count and its report and give a newer count first.
        let flushAfter: Double? = reporting.withLock { finished in
            let now = elapsed
            let (progress, flushAfter): (UploadProgress?, Double?) = state.withLock { state in
                state.latest = bytesSent
                guard now - state.lastReport >= interval else {
                    guard !state.pending else { return (nil, nil) }
                    state.pending = true
                    return (nil, state.lastReport + interval - now)
                }
                return (state.progress(bytesSent, now: now, total: total), nil)
            }
            if let progress, !finished { report(progress) }
            return finished ? nil : flushAfter
        }
        if let flushAfter { ticker.flush(self, after: flushAfter) }
    }

    /// Reports the latest count if no report gave it since it came (the end of an interval
    /// in which an update was held back); nothing after `finish`.
    package func flush() {
        guard let report else { return }
        reporting.withLock { finished in
            let progress: UploadProgress? = state.withLock { state in
                state.pending = false
                guard !finished, state.latest != state.reported else { return nil }
                return state.progress(state.latest, now: elapsed, total: total)
            }
            if let progress { report(progress) }
        }
    }

    package func finish(_ bytesSent: Int64) {
        guard let report else { return }
        // A held-back report is moot now: off the ticker (the meter is not kept till its deadline).
        if state.withLock({ $0.pending }) { ticker.cancel(self) }
        reporting.withLock { finished in
            finished = true
            let now = elapsed
            report(UploadProgress(bytesSent: bytesSent, totalBytes: total, bytesPerSecond: now > 0 ? Double(bytesSent) / now : 0, elapsed: now))
        }
    }
}
