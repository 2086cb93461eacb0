import Foundation

/// Per-part bytes in flight and parts done, kept as running sums: an update costs the same
/// whatever the number of parts, and only the parts in flight are held.
///
/// - Important: `update` may come from every transport thread at once. Reports go out one at a
///   time, each made from the latest state (a thread that finds another reporting leaves its
///   change to it), so they are in order: `bytesSent` goes down only in a report that names the
///   parts restarted. The callback runs with no lock held.
final class PartTracker: Sendable {
    private struct State {
        /// The parts begun and not done, by index, with their bytes sent in this attempt.
        var inFlight: [Int: (part: UploadPart, sent: Int64)] = [:]
        /// The sum of `inFlight`'s bytes sent.
        var inFlightBytes: Int64 = 0
        var doneBytes: Int64 = 0
        var partsDone = 0
        /// Parts known: the list's, or those a producer made so far.
        var partsTotal: Int
        /// Bytes of the parts known.
        var total: Int64
        /// The total is the list's, fixed; else it grows as parts begin.
        let fixed: Bool
        var retries = 0
        /// Parts that went back to byte 0 since the last report.
        var restarted: [UploadPart] = []
        /// A thread is calling the report callback.
        var reporting = false
        /// The state changed since the report being made.
        var changed = false
    }

    private let report: (@Sendable (ParallelProgress) -> Void)?
    private let state: Lock<State>

    /// A tracker of a fixed list of parts (its totals are known from the start).
    init(parts: [UploadPart], report: (@Sendable (ParallelProgress) -> Void)?) {
        self.report = report
        state = Lock(State(partsTotal: parts.count, total: parts.reduce(0) { $0 + $1.length }, fixed: true))
    }

    /// A tracker of parts made as they go (a stream): the totals are those of the parts begun.
    init(report: (@Sendable (ParallelProgress) -> Void)?) {
        self.report = report
        state = Lock(State(partsTotal: 0, total: 0, fixed: false))
    }

    /// Part `index` is about to be sent for the first time.
    func begin(_ index: Int, _ part: UploadPart) {
        state.withLock { state in
            state.inFlight[index] = (part, 0)
            if !state.fixed {
                state.partsTotal += 1
                state.total += part.length
            }
        }
    }

    /// Part `index` has sent `sent` bytes of its current attempt; fewer than before means it
    /// started again. Ignored for a part not begun or already done. Counted up to the part's
    /// length: a body as sent may be longer than the part (aws-chunked signatures, which
    /// URLSession counts), and progress is in bytes of the source.
    func update(_ index: Int, _ sent: Int64) {
        publish { state in
            guard let flight = state.inFlight[index] else { return }
            let sent = min(sent, flight.part.length)
            guard sent != flight.sent else { return }
            if sent < flight.sent, !state.restarted.contains(flight.part) { state.restarted.append(flight.part) }
            state.inFlightBytes += sent - flight.sent
            state.inFlight[index] = (flight.part, sent)
        }
    }

    func done(_ index: Int) {
        publish { state in
            guard let flight = state.inFlight.removeValue(forKey: index) else { return }
            state.inFlightBytes -= flight.sent
            state.doneBytes += flight.part.length
            state.partsDone += 1
        }
    }

    func retried() { state.withLock { $0.retries += 1 } }

    /// Attempts retried so far.
    var retries: Int { state.withLock { $0.retries } }

    /// The final report, whatever was reported before.
    func finish() {
        publish { $0.changed = true }
    }

    /// Applies `change`, then reports unless another thread is reporting: that one reports the
    /// change after its current report (at most a few rounds, then the next publisher does).
    private func publish(_ change: (inout State) -> Void) {
        var next = state.withLock { state -> ParallelProgress? in
            change(&state)
            guard report != nil else { return nil }
            state.changed = true
            guard !state.reporting else { return nil }
            state.reporting = true
            return takeReport(&state)
        }
        var rounds = 0
        while let progress = next {
            report?(progress)
            rounds += 1
            next = state.withLock { state -> ParallelProgress? in
                guard state.changed, rounds < 4 else {
                    state.reporting = false
                    return nil
                }
                return takeReport(&state)
            }
        }
    }

    private func takeReport(_ state: inout State) -> ParallelProgress {
        defer {
            state.changed = false
            state.restarted = []
        }
        return ParallelProgress(
            bytesSent: state.doneBytes + state.inFlightBytes, totalBytes: state.total, partsDone: state.partsDone,
            partsTotal: state.partsTotal, retries: state.retries, partsRestarted: state.restarted)
    }
}
