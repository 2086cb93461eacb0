import Foundation
import Testing
@testable import Sluice

/// `StallGuardedStream`: a source silent for the stall timeout fails its read with
/// `ProducerStalled`, through the source's own way out (a FIFO's `close()`).
@Suite(.timeLimit(.minutes(1)))
struct StallGuardedStreamTests {
    @Test func aFIFOWithoutAWriterStallsAfterTheTimeout() throws {
        let path = NSTemporaryDirectory() + "sluice-stall-\(UUID().uuidString.prefix(8))"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let fifo = try FileStreamSource(path: path)
        let guarded = StallGuardedStream(fifo, timeout: .milliseconds(300), interrupt: fifo.close)
        var buffer = [UInt8](repeating: 0, count: 16)
        let started = ContinuousClock.now
        #expect(throws: BoundStreamPair.ProducerStalled.self) {
            _ = try buffer.withUnsafeMutableBytes { try guarded.read(into: $0) }
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(300) && waited < .seconds(5))
    }

    @Test func readsThatReturnInTimeAreUntouched() throws {
        let guarded = StallGuardedStream(SyntheticStream(length: 5, seed: 1), timeout: .milliseconds(50), interrupt: {})
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try guarded.read(into: $0) } == 5)
        Thread.sleep(forTimeInterval: 0.1)   // the timer of that read must not fire later
        #expect(try buffer.withUnsafeMutableBytes { try guarded.read(into: $0) } == 0)
    }

}
