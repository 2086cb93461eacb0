import Foundation
@_spi(Floors) import SluicePrimitives

/// One timer for the held-back reports of every `ProgressMeter` of the process: a meter whose
/// update came too soon after a report asks for a `flush` at the end of its interval, and the
/// ticker runs each one due. A job of thousands of small files arms it once per interval, not
/// once per file (one `asyncAfter` a file cost about 7 % of `s3 cp -r`'s CPU: its `finish`
/// came first and made the report moot).
///
/// - Important: At most one Dispatch timer source, resumed for the ticker's whole life and
///   set again for the earliest deadline asked for; a meter that finishes first is taken off
///   (`cancel`). The ticker holds a meter until its flush ran or it was taken off. Flushes run
///   on the ticker's serial queue, outside its lock.
package final class ProgressTicker: Sendable {
    /// The ticker every meter uses unless given another (tests give their own).
    package static let shared = ProgressTicker()

    private struct State {
        /// The meters asking for a flush, and when.
        var due: [ObjectIdentifier: (deadline: DispatchTime, meter: ProgressMeter)] = [:]
        /// The deadline the timer is set for; nil when it is set for no time.
        var armed: DispatchTime?
        /// Times the timer was set for a deadline (for tests: bounded by the intervals, not the meters).
        var armings = 0

        /// Adds `meter`; the deadline to set the timer for when it is earlier than the one set.
        mutating func add(_ meter: ProgressMeter, at deadline: DispatchTime) -> DispatchTime? {
            due[ObjectIdentifier(meter)] = (deadline, meter)
            if let armed, armed <= deadline { return nil }
            armed = deadline
            armings += 1
            return deadline
        }

        /// The meters due at `now`, taken off, and the next deadline (nil: none).
        mutating func fire(now: DispatchTime) -> (meters: [ProgressMeter], next: DispatchTime?) {
            var meters: [ProgressMeter] = []
            var next: DispatchTime?
            for (key, entry) in due {
                if entry.deadline <= now {
                    meters.append(entry.meter)
                    due[key] = nil
                } else if next.map({ entry.deadline < $0 }) ?? true {
                    next = entry.deadline
                }
            }
            armed = next
            if next != nil { armings += 1 }
            return (meters, next)
        }
    }

    private let state = Lock(State())
    private let queue = DispatchQueue(label: "sluice.progress-ticker")
    /// Set (`schedule`) only under `state`'s lock; Dispatch sources are safe to set from any thread.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer

    package init() {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .distantFuture)
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.resume()
    }

    deinit {
        timer.setEventHandler {}
        timer.cancel()
    }

    /// Calls `meter.flush()` once `seconds` have passed, unless `cancel(meter)` comes first.
    package func flush(_ meter: ProgressMeter, after seconds: Double) {
        let deadline = DispatchTime.now() + max(0, seconds)
        state.withLock { state in
            // Set under the lock: two meters setting it at once must not leave the later deadline.
            if let earlier = state.add(meter, at: deadline) { timer.schedule(deadline: earlier, leeway: .milliseconds(1)) }
        }
    }

    /// Takes `meter` off: its flush is not run (it finished).
    package func cancel(_ meter: ProgressMeter) {
        _ = state.withLock { $0.due.removeValue(forKey: ObjectIdentifier(meter)) }
    }

    /// Meters waiting for a flush (for tests).
    package var waiting: Int { state.withLock { $0.due.count } }

    /// Times the timer was set for a deadline since the ticker was made (for tests).
    package var armings: Int { state.withLock { $0.armings } }

    private func fire() {
        let meters = state.withLock { state in
            let (meters, next) = state.fire(now: .now())
            timer.schedule(deadline: next ?? .distantFuture, leeway: .milliseconds(1))
            return meters
        }
        for meter in meters { meter.flush() }
    }
}
