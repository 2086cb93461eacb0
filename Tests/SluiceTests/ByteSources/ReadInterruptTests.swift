import Foundation
import Testing
@testable import Sluice

/// `ReadInterrupt.waitReadable`: a wait for a pipe's bytes that `interrupt()` ends at once,
/// and that says when the pipe stayed silent for the whole timeout (S3's stall bound on stdin).
@Suite(.timeLimit(.minutes(1)))
struct ReadInterruptTests {
    @Test func aSilentPipeTimesOutAndAWrittenOneIsReadable() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let interrupt = try ReadInterrupt()
        defer { interrupt.close() }
        let started = ContinuousClock.now
        #expect(try interrupt.waitReadable(fds[0], timeout: .milliseconds(200)) == false)
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(200) && waited < .seconds(5))
        var byte: UInt8 = 7
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try interrupt.waitReadable(fds[0], timeout: .milliseconds(200)) == true)
    }

    @Test func anInterruptEndsAWaitWithoutATimeout() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let interrupt = try ReadInterrupt()
        defer { interrupt.close() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { interrupt.interrupt() }
        #expect(throws: ReadInterrupt.Interrupted.self) { try interrupt.waitReadable(fds[0]) }
    }
}
