import Foundation
@_spi(Floors) import SluicePrimitives

/// Per-part bytes in flight and parts done, kept as running sums: an update costs the same
/// whatever the number of parts, and only the parts in flight are held.
///
/// - Important: `update` may come from every transport thread at once. Reports go out one at a
///   time, each made from the latest state (a thread that finds another reporting leaves its
///   change to it), so they are in order: `bytesSent` goes down only in a report that names the
///   parts restarted. The callback runs with no lock held. The state and its transitions are
///   `PartTrackerState`, a value; the lock only guards it.
package final class PartTracker: Sendable {
    private let report: (@Sendable (ParallelProgress) -> Void)?
    private let state: Lock<PartTrackerState>

    /// A tracker of a fixed list of parts (its totals are known from the start).
    package init(parts: [UploadPart], report: (@Sendable (ParallelProgress) -> Void)?) {
        self.report = report
        state = Lock(PartTrackerState(parts: parts, reports: report != nil))
    }

    /// A tracker of parts made as they go (a stream): the totals are those of the parts begun.
    package init(report: (@Sendable (ParallelProgress) -> Void)?) {
        self.report = report
        state = Lock(PartTrackerState(parts: nil, reports: report != nil))
    }

    /// Part `index` is about to be sent for the first time.
    package func begin(_ index: Int, _ part: UploadPart) { publish(.begin(index, part)) }

    /// Part `index` has sent `sent` bytes of its current attempt (see `PartTrackerState.Event.update`).
    package func update(_ index: Int, _ sent: Int64) { publish(.update(index, sent)) }

    /// Part `index` was accepted.
    package func done(_ index: Int) { publish(.done(index)) }

    /// An attempt is retried.
    package func retried() { publish(.retried) }

    /// Attempts retried so far.
    package var retries: Int { state.withLock { $0.retries } }

    /// The final report, whatever was reported before.
    package func finish() { publish(.finish) }

    /// Applies `event`; reports what the state machine says, with the lock released, for as
    /// long as it says so (another thread's changes meanwhile are this thread's to report).
    private func publish(_ event: PartTrackerState.Event) {
        var action = state.withLock { $0.event(event) }
        var rounds = 0
        while case .report(let progress) = action {
            report?(progress)
            rounds += 1
            action = state.withLock { $0.event(.reported(rounds: rounds)) }
        }
    }
}

/// `PartTracker`'s state machine: the parts in flight and the running sums, and who reports.
/// Every change is an `event` that says what to do next (`Action`); no lock, no callback.
package struct PartTrackerState: Sendable {
    /// What happened.
    package enum Event: Sendable {
        /// Part `index` is about to be sent for the first time.
        case begin(Int, UploadPart)
        /// Part `index` has sent this many bytes of its current attempt; fewer than before means
        /// it started again. Ignored for a part not begun or already done. Counted up to the
        /// part's length: a body as sent may be longer than the part (aws-chunked signatures,
        /// which URLSession counts), and progress is in bytes of the source.
        case update(Int, Int64)
        /// Part `index` was accepted (ignored when not in flight).
        case done(Int)
        /// An attempt is retried.
        case retried
        /// The final report is due, whatever was reported before.
        case finish
        /// The reporter delivered its `rounds`th report in a row.
        case reported(rounds: Int)
    }

    /// What the caller does next.
    package enum Action: Sendable, Equatable {
        case none
        /// Deliver this report, then send `.reported`.
        case report(ParallelProgress)
    }

    /// Reports one thread makes in a row before it leaves the next change to the next thread.
    package static var roundsInARow: Int { 4 }

    /// The parts begun and not done, by index, with their bytes sent in this attempt.
    package private(set) var inFlight: [Int: (part: UploadPart, sent: Int64)] = [:]
    /// The sum of `inFlight`'s bytes sent.
    package private(set) var inFlightBytes: Int64 = 0
    package private(set) var doneBytes: Int64 = 0
    package private(set) var partsDone = 0
    /// Parts known: the list's, or those a producer made so far.
    package private(set) var partsTotal: Int
    /// Bytes of the parts known.
    package private(set) var total: Int64
    /// The total is the list's, fixed; else it grows as parts begin.
    package let fixed: Bool
    package private(set) var retries = 0
    /// Parts that went back to byte 0 since the last report.
    package private(set) var restarted: [UploadPart] = []
    /// Whether anyone listens (without, nothing is reported).
    package let reports: Bool
    /// A thread is delivering a report.
    package private(set) var reporting = false
    /// The state changed since the report being delivered.
    package private(set) var changed = false

    /// The state of a fixed list of parts, or (nil) of parts made as they go.
    package init(parts: [UploadPart]?, reports: Bool) {
        partsTotal = parts?.count ?? 0
        total = parts?.reduce(0) { $0 + $1.length } ?? 0
        fixed = parts != nil
        self.reports = reports
    }

    package mutating func event(_ event: Event) -> Action {
        switch event {
        case .begin(let index, let part):
            inFlight[index] = (part, 0)
            if !fixed {
                partsTotal += 1
                total += part.length
            }
            return .none
        case .retried:
            retries += 1
            return .none
        case .update(let index, let sent):
            if let flight = inFlight[index] {
                let sent = min(sent, flight.part.length)
                if sent != flight.sent {
                    if sent < flight.sent, !restarted.contains(flight.part) { restarted.append(flight.part) }
                    inFlightBytes += sent - flight.sent
                    inFlight[index] = (flight.part, sent)
                }
            }
            return changedAction()
        case .done(let index):
            if let flight = inFlight.removeValue(forKey: index) {
                inFlightBytes -= flight.sent
                doneBytes += flight.part.length
                partsDone += 1
            }
            return changedAction()
        case .finish:
            return changedAction()
        case .reported(let rounds):
            guard changed, rounds < Self.roundsInARow else {
                reporting = false
                return .none
            }
            return .report(takeReport())
        }
    }

    /// After a change: report it now, or leave it to the thread reporting.
    private mutating func changedAction() -> Action {
        guard reports else { return .none }
        changed = true
        guard !reporting else { return .none }
        reporting = true
        return .report(takeReport())
    }

    private mutating func takeReport() -> ParallelProgress {
        defer {
            changed = false
            restarted = []
        }
        return ParallelProgress(
            bytesSent: doneBytes + inFlightBytes, totalBytes: total, partsDone: partsDone, partsTotal: partsTotal,
            retries: retries, partsRestarted: restarted)
    }
}
