import Foundation
import Testing

@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The meter's throttle holds an update back, never drops it: a stalled upload shows the count
/// it reached (a Ctrl-C test's gate waited on it, and a user reads it).
@Suite(.hangGuard) struct ProgressMeterTests {
    /// Reports as they come, and a stream of them to wait on.
    final class Reports: Sendable {
        let counts = Lock<[Int64]>([])
        let stream: AsyncStream<Int64>
        let continuation: AsyncStream<Int64>.Continuation

        init() { (stream, continuation) = AsyncStream<Int64>.makeStream() }

        func record(_ progress: UploadProgress) {
            counts.withLock { $0.append(progress.bytesSent) }
            continuation.yield(progress.bytesSent)
        }
    }

    @Test("an update that came too soon after a report is reported when the interval has passed")
    func aHeldBackUpdateIsReportedLater() async throws {
        let reports = Reports()
        let meter = ProgressMeter(total: 100, interval: .milliseconds(50)) { reports.record($0) }
        meter.update(10)
        meter.update(20)  // within the interval: held back, and no later update comes (a stall)
        var seen: [Int64] = []
        for await count in reports.stream {
            seen.append(count)
            if count == 20 { break }
        }
        #expect(seen == [10, 20])
    }

    @Test("nothing is reported after finish: a held-back update that finish overtook is not")
    func nothingAfterFinish() {
        let reports = Reports()
        let meter = ProgressMeter(total: 100, interval: .seconds(3600)) { reports.record($0) }
        meter.update(10)
        meter.update(20)  // held back for an hour
        meter.finish(30)
        meter.flush()  // what the timer would do at the end of the interval
        #expect(reports.counts.withLock { $0 } == [10, 30])
    }

    @Test("a count already reported is not reported again")
    func noRepeats() {
        let reports = Reports()
        let meter = ProgressMeter(total: nil, interval: .seconds(3600)) { reports.record($0) }
        meter.update(10)
        meter.flush()
        meter.update(20)
        meter.flush()
        meter.flush()
        #expect(reports.counts.withLock { $0 } == [10, 20])
    }

    @Test("a thousand meters that finish within their interval arm one shared timer, and leave nothing on it")
    func finishedMetersLeaveNoTimers() {
        let ticker = ProgressTicker()
        let reports = Reports()
        for _ in 0..<1_000 {
            let meter = ProgressMeter(total: 3, interval: .seconds(3600), ticker: ticker) { reports.record($0) }
            meter.update(1)
            meter.update(2)  // held back: asks the ticker for a flush in an hour
            meter.finish(3)
        }
        #expect(ticker.waiting == 0)
        // Each later deadline falls after the one the timer is set for: set once, not per meter.
        #expect(ticker.armings == 1)
        #expect(reports.counts.withLock { $0.count } == 2_000)
    }

    @Test("a deadline earlier than the one the shared timer is set for sets it again")
    func anEarlierDeadlineIsKept() async {
        let ticker = ProgressTicker()
        let slow = ProgressMeter(total: nil, interval: .seconds(3600), ticker: ticker) { _ in }
        slow.update(1)
        slow.update(2)  // the timer is set an hour ahead
        let reports = Reports()
        let fast = ProgressMeter(total: nil, interval: .milliseconds(20), ticker: ticker) { reports.record($0) }
        fast.update(10)
        fast.update(20)  // held back for 20 ms: reported only if the timer was set again
        for await count in reports.stream where count == 20 { break }
        #expect(reports.counts.withLock { $0 } == [10, 20])
        #expect(ticker.waiting == 1)  // the slow meter's flush, still an hour away
        slow.finish(2)
        #expect(ticker.waiting == 0)
    }
}
