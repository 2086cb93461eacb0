import Foundation
import Testing
@testable import Sluice
@testable import SluiceTransport
import SluiceTestSupport

/// `PartTrackerState`, the part tracker's state machine, one transition at a time: what each
/// event does to the sums and which action it asks for.
struct PartTrackerStateTests {
    let one = UploadPart(number: 1, offset: 0, length: 100)
    let two = UploadPart(number: 2, offset: 100, length: 50)

    func report(_ action: PartTrackerState.Action) -> ParallelProgress? {
        if case .report(let progress) = action { progress } else { nil }
    }

    /// The delivery of a report ends: nothing changed meanwhile, so the reporter steps down.
    func delivered(_ state: inout PartTrackerState) {
        #expect(state.event(.reported(rounds: 1)) == .none)
        #expect(!state.reporting)
    }

    @Test func aFixedListKnowsItsTotalsAndBeginChangesThemNot() {
        var state = PartTrackerState(parts: [one, two], reports: true)
        #expect(state.partsTotal == 2 && state.total == 150)
        #expect(state.event(.begin(0, one)) == .none)
        #expect(state.partsTotal == 2 && state.total == 150 && state.inFlight.count == 1)
    }

    @Test func aStreamsTotalsGrowAsPartsBegin() {
        var state = PartTrackerState(parts: nil, reports: true)
        #expect(state.partsTotal == 0 && state.total == 0)
        #expect(state.event(.begin(0, one)) == .none)
        #expect(state.event(.begin(1, two)) == .none)
        #expect(state.partsTotal == 2 && state.total == 150)
    }

    @Test func anUpdateIsReportedCountedUpToThePartsLength() {
        var state = PartTrackerState(parts: [one, two], reports: true)
        _ = state.event(.begin(0, one))
        #expect(report(state.event(.update(0, 60)))?.bytesSent == 60)
        #expect(state.reporting)
        delivered(&state)
        #expect(report(state.event(.update(0, 114)))?.bytesSent == 100)
        #expect(state.inFlightBytes == 100)
    }

    @Test func anUpdateDownNamesThePartRestartedOnce() {
        var state = PartTrackerState(parts: [one], reports: true)
        _ = state.event(.begin(0, one))
        _ = state.event(.update(0, 80))
        delivered(&state)
        let restarted = report(state.event(.update(0, 0)))
        #expect(restarted?.bytesSent == 0 && restarted?.partsRestarted == [one])
        delivered(&state)
        #expect(report(state.event(.update(0, 10)))?.partsRestarted == [])
    }

    @Test func anUpdateOfAPartNotInFlightChangesNoSum() {
        var state = PartTrackerState(parts: [one], reports: true)
        #expect(report(state.event(.update(7, 40)))?.bytesSent == 0)
        #expect(state.inFlightBytes == 0)
    }

    @Test func doneMovesThePartsBytesOnceAndOnlyOnce() {
        var state = PartTrackerState(parts: [one, two], reports: true)
        _ = state.event(.begin(0, one))
        _ = state.event(.update(0, 30))
        delivered(&state)
        let done = report(state.event(.done(0)))
        #expect(done?.bytesSent == 100 && done?.partsDone == 1 && state.inFlightBytes == 0)
        delivered(&state)
        #expect(report(state.event(.done(0)))?.partsDone == 1)
        #expect(state.doneBytes == 100)
    }

    @Test func aRetryIsCountedAndNotReported() {
        var state = PartTrackerState(parts: [one], reports: true)
        #expect(state.event(.retried) == .none)
        #expect(state.retries == 1 && !state.changed)
    }

    @Test func finishReportsWhatIsThere() {
        var state = PartTrackerState(parts: [one], reports: true)
        let last = report(state.event(.finish))
        #expect(last == ParallelProgress(bytesSent: 0, totalBytes: 100, partsDone: 0, partsTotal: 1, retries: 0, partsRestarted: []))
    }

    /// While one thread delivers a report, a change is left to it: it reports again, in order,
    /// up to `roundsInARow` reports; then it steps down and the next change reports at once.
    @Test func aChangeWhileReportingIsLeftToTheReporter() {
        var state = PartTrackerState(parts: [one], reports: true)
        _ = state.event(.begin(0, one))
        #expect(report(state.event(.update(0, 10)))?.bytesSent == 10)
        #expect(state.event(.update(0, 20)) == .none)
        #expect(state.changed)
        #expect(report(state.event(.reported(rounds: 1)))?.bytesSent == 20)
        #expect(state.event(.update(0, 30)) == .none)
        #expect(state.event(.reported(rounds: PartTrackerState.roundsInARow)) == .none)
        #expect(!state.reporting && state.changed)
        #expect(report(state.event(.update(0, 40)))?.bytesSent == 40)
    }

    @Test func withoutAListenerNothingIsReported() {
        var state = PartTrackerState(parts: [one], reports: false)
        _ = state.event(.begin(0, one))
        #expect(state.event(.update(0, 10)) == .none)
        #expect(state.event(.done(0)) == .none)
        #expect(state.event(.finish) == .none)
        #expect(state.doneBytes == 100 && !state.reporting)
    }
}
