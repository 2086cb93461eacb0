import Dispatch
import Foundation
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The seed's "input stream source", ported as the seed writes it (/work/shared/seed): a
/// delegate on the output stream of a bound pair, scheduled in a run loop of its own thread,
/// with ONE fixed buffer. On each `hasSpaceAvailable` it refills the buffer from the source
/// when the buffer is drained and writes exactly once, keeping what did not fit for the next
/// event; when every byte was written it closes the stream at the next event. `errorOccurred`
/// and `endEncountered` finish it with an error. Its thread runs the run loop as the seed's
/// does, `RunLoop.current.run()`, which returns only once nothing is scheduled there: the
/// stream must keep it running until the writer closed it.
///
/// Everything but `finished` is touched only on the run-loop thread.
final class SeedWriter: NSObject, StreamDelegate, @unchecked Sendable {
    // @unchecked: the mutable fields below are confined to the run-loop thread; `outcome` is locked.
    struct EndEncountered: Error {}
    /// The run loop returned while the writer still had bytes to write: nothing kept it running.
    struct RunLoopReturnedEarly: Error { var offset: Int64 }
    /// `result()` waited longer than its limit for the writer's thread.
    struct NeverFinished: Error {}
    struct StreamFailed: Error { var underlying: (any Error)? }

    private let source: any ByteSource
    private let output: OutputStream
    private let buffer: UnsafeMutableRawBufferPointer
    private var pending = (start: 0, end: 0)
    private var offset: Int64 = 0
    private var done = false
    /// `hasSpaceAvailable` events seen, and `write` calls made (one per event).
    private(set) var spaceEvents = 0
    private(set) var writes = 0
    private let outcome = Lock<Result<Int64, any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the writer's thread: schedules `output` in its run loop, opens it, and runs the
    /// loop until it returns (the stream was closed and left it).
    init(output: OutputStream, source: any ByteSource, bufferSize: Int) {
        self.output = output
        self.source = source
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        super.init()
        let thread = Thread { [self] in
            self.output.delegate = self
            self.output.schedule(in: .current, forMode: .default)
            self.output.open()
            RunLoop.current.run()
            if !done { finish(RunLoopReturnedEarly(offset: offset)) }
            finished.signal()
        }
        thread.start()
    }

    deinit { buffer.deallocate() }

    /// Waits (on a thread of its own, at most `limit` seconds) until the writer's thread
    /// ended; its byte count or error.
    func result(limit: Double = 60) async -> Result<Int64, any Error> {
        await onThread { [self] in
            guard finished.wait(timeout: .now() + limit) == .success else { return .failure(NeverFinished()) }
            finished.signal()
            return outcome.withLock { $0! }
        }
    }

    /// Stops the writer from outside (a watchdog): it finishes with `error` at its next event
    /// (failing the pair sends it one).
    func stop(_ error: any Error) {
        outcome.withLock { if $0 == nil { $0 = .failure(error) } }
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        if done { return }
        if outcome.withLock({ $0 != nil }) { return finish(nil) }
        switch eventCode {
        case .hasSpaceAvailable:
            spaceEvents += 1
            write()
        case .errorOccurred:
            finish(StreamFailed(underlying: output.streamError))
        case .endEncountered:
            finish(EndEncountered())
        default:
            break
        }
    }

    private func write() {
        if pending.start == pending.end {
            if offset == source.length { return finish(nil) }
            let want = Int(min(Int64(buffer.count), source.length - offset))
            do {
                let count = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: offset)
                pending = (0, count)
                offset += Int64(count)
            } catch {
                return finish(error)
            }
        }
        writes += 1
        let written = output.write(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + pending.start, maxLength: pending.end - pending.start)
        if written < 0 { return finish(StreamFailed(underlying: output.streamError)) }
        pending.start += written
    }

    private func finish(_ error: (any Error)?) {
        done = true
        output.close()
        output.remove(from: .current, forMode: .default)
        outcome.withLock { outcome in
            if outcome == nil { outcome = error.map { .failure($0) } ?? .success(offset) }
        }
    }
}
