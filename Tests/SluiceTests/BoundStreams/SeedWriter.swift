import Dispatch
import Foundation
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver

/// The seed's "input stream source", ported as the seed writes it (/work/shared/seed): a
/// delegate on the output stream of a bound pair, scheduled in a run loop of its own thread,
/// with ONE fixed buffer. On each `hasSpaceAvailable` it refills the buffer from the source
/// when the buffer is drained and writes exactly once, keeping what did not fit for the next
/// event; when every byte was written it closes the stream at the next event. `errorOccurred`
/// and `endEncountered` finish it with an error.
///
/// Everything but `finished` is touched only on the run-loop thread.
final class SeedWriter: NSObject, StreamDelegate, @unchecked Sendable {
    // @unchecked: the mutable fields below are confined to the run-loop thread; `outcome` is locked.
    struct EndEncountered: Error {}
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
    /// loop until the writer finished.
    init(output: OutputStream, source: any ByteSource, bufferSize: Int) {
        self.output = output
        self.source = source
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        super.init()
        let thread = Thread { [self] in
            self.output.delegate = self
            self.output.schedule(in: .current, forMode: .default)
            self.output.open()
            while !done && outcome.withLock({ $0 == nil }) {
                _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
            }
            if !done { finish(nil) }
            finished.signal()
        }
        thread.start()
    }

    deinit { buffer.deallocate() }

    /// Waits (on a thread of its own) until the writer finished; its byte count or error.
    func result() async -> Result<Int64, any Error> {
        await onThread { [self] in
            finished.wait()
            finished.signal()
            return outcome.withLock { $0! }
        }
    }

    /// Stops the writer from outside (a watchdog): it finishes with `error` if still running.
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
