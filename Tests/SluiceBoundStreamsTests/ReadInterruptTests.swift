import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `ReadInterrupt.waitReadable`: a wait for a pipe's bytes that `interrupt()` ends at once,
/// and that says when the pipe stayed silent for the whole timeout (S3's stall bound on stdin).
@Suite(.hangGuard)
struct ReadInterruptTests {
    /// Runs `body` with a pipe's (read, write) ends and an interrupt, all closed after it.
    func withPipe(_ body: (Int32, Int32, ReadInterrupt) throws -> Void) throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let interrupt = try ReadInterrupt()
        defer { interrupt.close() }
        try body(fds[0], fds[1], interrupt)
    }

    @Test func aSilentPipeTimesOutAndAWrittenOneIsReadable() throws {
        try withPipe { reader, writer, interrupt throws in
            let started = ContinuousClock.now
            #expect(throws: BoundStreamPair.ProducerStalled.self) { try interrupt.waitReadable(reader, stallTimeout: .milliseconds(200)) }
            // Not before the timeout (a lower bound: a busy machine only makes the wait longer).
            #expect(ContinuousClock.now - started >= .milliseconds(200))
            var byte: UInt8 = 7
            #expect(write(writer, &byte, 1) == 1)
            #expect(throws: Never.self) { try interrupt.waitReadable(reader, stallTimeout: .milliseconds(200)) }
        }
    }

    @Test func anInterruptEndsAWaitWithoutATimeout() throws {
        try withPipe { reader, _, interrupt throws in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { interrupt.interrupt() }
            #expect(throws: ReadInterrupt.Interrupted.self) { try interrupt.waitReadable(reader) }
        }
    }
}
