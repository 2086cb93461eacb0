import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `StallGuardedStream`: a source silent for the stall timeout fails its read with
/// `ProducerStalled`, through the source's own way out (a FIFO's `close()`). The timer is the
/// test's own: it fires when the test says, so each case is an order of events, not a time.
@Suite(.hangGuard)
struct StallGuardedStreamTests {
    /// Timers the guarded stream armed, fired by the test; each records whether it was cancelled.
    final class ManualTimers: Sendable {
        struct Armed: Sendable {
            var delay: Duration
            var fire: @Sendable () -> Void
            var cancelled = false
        }
        let armed = Lock<[Armed]>([])

        var timer: StallGuardedStream.Timer {
            { [armed] delay, fire in
                let index = armed.withLockBroadcasting {
                    $0.append(Armed(delay: delay, fire: fire)); return $0.count - 1
                }
                return { armed.withLock { $0[index].cancelled = true } }
            }
        }

        /// Waits until `count` timers were armed (bounded), then fires the one at `index`.
        func fire(_ index: Int) {
            let fire = armed.wait(timeout: patienceSeconds) { $0.count > index ? $0[index].fire : nil }
            fire?()
        }
    }

    @Test func aFIFOWithoutAWriterStallsWhenItsTimerFires() async throws {
        let path = NSTemporaryDirectory() + "sluice-stall-\(UUID().uuidString.prefix(8))"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let fifo = try FileStreamSource(path: path)
        let timers = ManualTimers()
        let guarded = StallGuardedStream(fifo, timeout: .milliseconds(300), interrupt: fifo.close, timer: timers.timer)
        let reading = Task.detached {
            var buffer = [UInt8](repeating: 0, count: 16)
            return Result { try buffer.withUnsafeMutableBytes { try guarded.read(into: $0) } }
        }
        // The read armed its timer with the stall timeout and waits; firing it ends the read.
        timers.fire(0)
        let result = await reading.value
        #expect(throws: BoundStreamPair.ProducerStalled.self) { try result.get() }
        #expect(timers.armed.withLock { $0.map(\.delay) } == [.milliseconds(300)])
        #expect(timers.armed.withLock { $0[0].cancelled }, "the read's timer is cancelled when the read returns")
    }

    @Test func aTimerFiredAfterItsReadReturnedChangesNothing() throws {
        let timers = ManualTimers()
        let interrupted = Lock(0)
        let guarded = StallGuardedStream(
            SyntheticStream(length: 5, seed: 1), timeout: .milliseconds(50),
            interrupt: { interrupted.withLock { $0 += 1 } }, timer: timers.timer)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try guarded.read(into: $0) } == 5)
        // The first read's timer fires late, after its read returned: no interrupt, no stall.
        timers.fire(0)
        #expect(interrupted.withLock { $0 } == 0)
        #expect(try buffer.withUnsafeMutableBytes { try guarded.read(into: $0) } == 0)
        // So does the second read's, fired after it returned.
        timers.fire(1)
        #expect(interrupted.withLock { $0 } == 0)
        #expect(timers.armed.withLock { $0.allSatisfy(\.cancelled) })
    }
}
