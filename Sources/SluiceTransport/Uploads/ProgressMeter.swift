import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams

/// Turns raw byte counts into throttled `UploadProgress` with a smoothed rate.
///
/// - Important: `update` may be called from any thread, as often as the transport likes;
///   `report` runs outside the lock, at most once per `interval`, plus once in `finish`.
package final class ProgressMeter: Sendable {
    private struct State {
        package var lastReport: Double = -1
        package var rate: Double = 0
        package var sampleTime: Double = 0
        package var sampleBytes: Int64 = 0
        package var latest: Int64 = 0
    }

    private let total: Int64?
    private let interval: Double
    private let report: (@Sendable (UploadProgress) -> Void)?
    private let start = ContinuousClock.now
    private let state = Lock(State())

    package init(total: Int64?, interval: Duration, report: (@Sendable (UploadProgress) -> Void)?) {
        self.total = total
        self.interval = interval.inSeconds
        self.report = report
    }

    private var elapsed: Double {
        (ContinuousClock.now - start).inSeconds
    }

    package func update(_ bytesSent: Int64) {
        guard let report else { return }
        let now = elapsed
        let progress: UploadProgress? = state.withLock { state in
            state.latest = bytesSent
            guard now - state.lastReport >= interval else { return nil }
            state.lastReport = now
            let dt = now - state.sampleTime
            if dt >= 0.25 {
                // A replay restarts the count: never let the rate go negative.
                let instant = Double(max(0, bytesSent - state.sampleBytes)) / dt
                state.rate = state.rate == 0 ? instant : state.rate * 0.6 + instant * 0.4
                state.sampleTime = now
                state.sampleBytes = bytesSent
            } else if state.rate == 0 && now > 0 {
                // Before the first full sample: the average since the start.
                state.rate = Double(bytesSent) / now
            }
            return UploadProgress(bytesSent: bytesSent, totalBytes: total, bytesPerSecond: state.rate, elapsed: now)
        }
        if let progress { report(progress) }
    }

    package func finish(_ bytesSent: Int64) {
        guard let report else { return }
        let now = elapsed
        report(UploadProgress(bytesSent: bytesSent, totalBytes: total, bytesPerSecond: now > 0 ? Double(bytesSent) / now : 0, elapsed: now))
    }
}
