import Foundation
import Testing

@testable import Sluice
import SluiceTestSupport

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
}
