import Dispatch
import Foundation
@_spi(Floors) import SluicePrimitives

/// `InputStreamSource`'s channel over Foundation's own bound pair, through the public
/// `Stream` API only: the seed's technique. The output stream is scheduled in a run loop on a
/// thread of its own; on each `hasSpaceAvailable` the pump writes from one staging buffer,
/// only while the stream has space, keeping the offset into the staged bytes across partial
/// writes.
///
/// Apple platforms use it for the URLSession transport: there the request must read
/// Foundation's own pair. It is compiled everywhere, and on Linux `Stream.getBoundStreams`
/// hands it Sluice's pair, which is how this path is tested here.
///
/// Foundation's pair has no way to fail its reader: `abandon(with:queue:)` stops writing and
/// leaves the output open (closing it would end a short body); whoever runs the request
/// cancels it.
///
/// Memory: the pair's buffer and one staging buffer, `bufferSize` bytes each.
package final class FoundationStreamChannel: PumpChannel, @unchecked Sendable {
    // @unchecked: `staging`, `pending` and `relay` are touched only on the pump's queue (run
    // loop events hop onto it synchronously); `state` is a lock; `output` is written on the
    // pump's queue and scheduled and closed on the run loop's thread, as Foundation allows.

    package let inputStream: InputStream
    private let output: OutputStream
    private let staging: UnsafeMutableRawBufferPointer
    /// Staged bytes the output has not taken yet.
    private var pending: Range<Int> = 0..<0
    private var relay: ClosureStreamDelegate?

    private struct State: @unchecked Sendable {
        // @unchecked: RunLoop and Timer are handed from the run loop's thread to `stop()`
        // under the lock, and only used to add a timer to that run loop.
        package var failure: (any Error)?
        package var written: Int64 = 0
        package var runLoop: RunLoop?
        package var keepAlive: Timer?
        package var stopped = false
    }

    private let state = Lock(State())

    package init(bufferSize: Int) {
        var input: InputStream?
        var output: OutputStream?
        Stream.getBoundStreams(withBufferSize: bufferSize, inputStream: &input, outputStream: &output)
        guard let input, let output else { fatalError("Stream.getBoundStreams made no streams") }
        inputStream = input
        self.output = output
        staging = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
    }

    deinit {
        stop()
        staging.deallocate()
    }

    package func open(on queue: DispatchQueue, handler: @escaping @Sendable (Stream.Event) -> Void) {
        // Each event runs on the pump's queue, synchronously: a write made in response happens
        // within the event, as Foundation's streams expect.
        let relay = ClosureStreamDelegate { event in queue.sync { handler(event) } }
        self.relay = relay
        output.delegate = relay
        nonisolated(unsafe) let output = output
        let thread = Thread { [state] in
            let runLoop = RunLoop.current
            // A far timer keeps the run loop waiting rather than returning with nothing to run.
            let keepAlive = Timer(timeInterval: 86_400, repeats: true) { _ in }
            runLoop.add(keepAlive, forMode: .default)
            let stopped = state.withLock { state -> Bool in
                state.runLoop = runLoop
                state.keepAlive = keepAlive
                return state.stopped
            }
            guard !stopped else { return }
            output.schedule(in: runLoop, forMode: .default)
            output.open()
            // Returns once `stop()` removed the stream and the timer: nothing is left to run.
            while runLoop.run(mode: .default, before: .distantFuture) {}
        }
        thread.name = "sluice-stream-events"
        thread.start()
    }

    package func fill(limit: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        guard failure == nil else { return -1 }
        guard pending.isEmpty else { return 0 }
        guard output.hasSpaceAvailable else { return 0 }
        let count = max(0, min(limit, staging.count, body(UnsafeMutableRawBufferPointer(rebasing: staging[..<min(limit, staging.count)]))))
        guard count > 0 else { return 0 }
        pending = 0..<count
        return flush() == nil ? -1 : count
    }

    package func flush() -> Bool? {
        guard failure == nil else { return nil }
        while !pending.isEmpty, output.hasSpaceAvailable {
            let base = staging.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let written = output.write(base + pending.lowerBound, maxLength: pending.count)
            if written < 0 { return nil }
            if written == 0 { break }
            pending = pending.lowerBound + written..<pending.upperBound
            state.withLock { $0.written += Int64(written) }
        }
        return pending.isEmpty
    }

    package func finish() {
        stop(closing: true)
    }

    package func abandon(with error: any Error, queue: DispatchQueue) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
        #if !canImport(Darwin)
        // Here the pair is Sluice's, and FoundationNetworking reads it with blocking reads on
        // its one shared queue, which a task's cancel must wait for: fail the reader instead.
        (output as? BoundOutputStream)?.failPair(error)
        #endif
        stop()
    }

    package func cancelReader() {}

    package var failure: (any Error)? { state.withLock { $0.failure } }

    package var bytesRead: Int64 { state.withLock { $0.written } }

    package var readerStallTimeout: Duration? { nil }

    /// Unschedules the stream (closing it first when `closing`: the reader sees the end after
    /// the last byte) and ends the run loop's thread, on that thread. Idempotent.
    private func stop(closing: Bool = false) {
        let taken = state.withLock { state -> (RunLoop?, Timer?)? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return (state.runLoop, state.keepAlive)
        }
        guard let (runLoop, keepAlive) = taken else { return }
        nonisolated(unsafe) let output = output
        nonisolated(unsafe) let timer = keepAlive
        // A timer added from another thread wakes the run loop. Without a run loop the thread
        // has not started: it sees `stopped` and ends, and the stream was never opened.
        runLoop?.add(
            Timer(timeInterval: 0, repeats: false) { _ in
                if closing { output.close() }
                output.remove(from: RunLoop.current, forMode: .default)
                timer?.invalidate()
            }, forMode: .default)
    }
}
