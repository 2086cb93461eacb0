import Dispatch
import Foundation
import Synchronization
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests

/// The seed's "input stream source": exposes a plain, unopened `InputStream` (for
/// `URLRequest.httpBodyStream`) whose bytes it pumps from any byte source through a
/// `BoundStreamPair`, event by event.
///
/// On each `hasSpaceAvailable` it reads from the source at the tracked offset straight into
/// the ring's free space (no staging buffer: the bytes are copied once into the ring and once
/// out of it, by the reader), until the ring is full; the next event continues. When every
/// byte is written it closes the output stream, so the reader sees the end after the last
/// byte. A source error, or a source that ends before its length, becomes the input stream's
/// error (`read` returns -1, `streamError` is a `SourceFailure`) — never a short body.
///
/// Memory: the pair's ring, `bufferSize` bytes, for any body size.
///
/// - Important: Events run on one serial dispatch queue, one at a time. `cancel()` may be
///   called from any thread, any number of times. The source finishes exactly once: `result`
///   resolves and `onFinish` handlers run once, with `.success(bytes)` or `.failure(error)`.
///   The object keeps itself alive until it finishes.
public final class InputStreamSource: @unchecked Sendable {
    // @unchecked: all mutable state is inside `state` (a lock); the rest is immutable. The
    // pump runs only in event handlers, one at a time on `queue`.

    /// A source failure, with where it happened.
    public struct SourceFailure: Error, Sendable, CustomStringConvertible {
        /// The absolute source offset of the read that failed.
        public var offset: Int64
        /// The underlying error (`ByteSourceError.endedEarly` for a short source).
        public var underlying: any Error
        public var description: String { "source failed at byte \(offset): \(underlying)" }
    }

    /// The reader closed its end before the whole body was written.
    public struct ReaderClosedEarly: Error, Sendable, CustomStringConvertible {
        /// Body bytes written into the pair before the reader closed it.
        public var bytesWritten: Int64
        public var description: String { "the reader closed the stream after \(bytesWritten) bytes" }
    }

    /// Where the bytes come from.
    package enum Filler: Sendable {
        case random(any ByteSource, range: Range<Int64>)
        case sequential(any SequentialByteSource)
    }

    /// The stream to hand to the request. Unopened; the request opens it.
    public let inputStream: InputStream
    /// The ring's size in bytes.
    public let bufferSize: Int

    private let filler: Filler
    private let channel: any PumpChannel
    private let queue: DispatchQueue

    private struct State {
        package var started = false
        /// The next source offset to read (random) or bytes read so far (sequential).
        package var sourceOffset: Int64
        package var bytesWritten: Int64 = 0
        package var result: Result<Int64, any Error>?
        /// The handlers have run and `result` may be handed to waiters.
        package var announced = false
        package var waiters: [Int: CheckedContinuation<Result<Int64, any Error>, Never>] = [:]
        /// Waiters cancelled before they registered.
        package var cancelledWaiters: Set<Int> = []
        package var nextWaiter = 0
        package var handlers: [@Sendable (Result<Int64, any Error>) -> Void] = []
        package var keepAlive: InputStreamSource?
    }

    private let state: Lock<State>
    /// The pump is inside a read of the source (set around each read, on the pump's queue).
    private let insideSourceRead = Atomic<Bool>(false)

    /// Makes a source for `source[range]`, by default the whole source.
    ///
    /// - Parameters:
    ///   - source: Random-access bytes.
    ///   - range: The bytes to send; `offset..<source.length` resumes at `offset`.
    ///   - bufferSize: The size of the pair's ring, in bytes.
    ///   - queue: The serial queue events run on; a private one when nil.
    ///   - readerStallTimeout: See `BoundStreamPair.init(capacity:readerStallTimeout:)`.
    public convenience init(
        source: any ByteSource, range: Range<Int64>? = nil, bufferSize: Int = 64 * 1024, queue: DispatchQueue? = nil,
        readerStallTimeout: Duration? = nil
    ) {
        let range = range ?? 0..<source.length
        precondition(range.lowerBound >= 0 && range.upperBound <= source.length, "range outside the source")
        self.init(filler: .random(source, range: range), bufferSize: bufferSize, queue: queue, readerStallTimeout: readerStallTimeout)
    }

    /// Makes a one-shot source that pumps a sequential source (stdin, a pipe).
    ///
    /// When `source.length` is known, a source that ends before it is an error.
    public convenience init(
        sequential source: any SequentialByteSource, bufferSize: Int = 64 * 1024, queue: DispatchQueue? = nil,
        readerStallTimeout: Duration? = nil
    ) {
        self.init(filler: .sequential(source), bufferSize: bufferSize, queue: queue, readerStallTimeout: readerStallTimeout)
    }

    /// Which bound pair the source writes into.
    package enum Streams: Sendable {
        /// Sluice's `BoundStreamPair`: filled straight from the source, with a reader stall timeout.
        case sluicePair
        /// Foundation's `Stream.getBoundStreams`, through its public API (`FoundationStreamChannel`).
        case foundation

        /// Foundation's own pair where it has one (Apple platforms), Sluice's elsewhere.
        package static var platformDefault: Streams {
            #if canImport(Darwin)
            return .foundation
            #else
            return .sluicePair
            #endif
        }
    }

    package let streams: Streams
    /// A cap the pump draws from before each write (`UploadOptions.rateLimit`); over it, the
    /// pump waits on its queue and writes again when the bucket has refilled.
    package let rateLimit: RateLimit?

    package init(
        filler: Filler, bufferSize: Int, queue: DispatchQueue?, readerStallTimeout: Duration? = nil,
        streams: Streams = .platformDefault, rateLimit: RateLimit? = nil
    ) {
        precondition(bufferSize > 0, "bufferSize must be positive")
        self.filler = filler
        self.bufferSize = bufferSize
        self.streams = streams
        self.rateLimit = rateLimit
        switch streams {
        case .sluicePair: channel = BoundStreamPair(capacity: bufferSize, readerStallTimeout: readerStallTimeout)
        case .foundation: channel = FoundationStreamChannel(bufferSize: bufferSize)
        }
        self.inputStream = channel.inputStream
        self.queue = queue ?? DispatchQueue(label: "sluice.InputStreamSource")
        var start: Int64 = 0
        if case .random(_, let range) = filler { start = range.lowerBound }
        self.state = Lock(State(sourceOffset: start))
    }

    /// Whether a fresh stream can be made for a replay.
    public var isReplayable: Bool {
        if case .random = filler { return true }
        return false
    }

    /// The number of bytes this source will send, when known.
    public var length: BodyLength {
        switch filler {
        case .random(_, let range): return .known(Int64(range.count))
        case .sequential(let source): return source.length
        }
    }

    /// Body bytes the reader has taken so far.
    ///
    /// Over Foundation's pair (Apple platforms), the bytes handed to the pair: the reader has
    /// taken them all once it saw the end.
    public var bytesRead: Int64 { channel.bytesRead }

    /// The error the pair failed with (a cancel, a source failure, `ProducerStalled`), as soon
    /// as it failed, even while the pumping queue is still blocked in a source's read.
    public var pairFailure: (any Error)? { channel.failure }

    /// Whether the source is what holds the body up right now: every byte it gave was read,
    /// and the pump is waiting inside a read of the source.
    public var isWaitingOnSource: Bool {
        insideSourceRead.load(ordering: .relaxed) && bytesWritten == bytesRead
    }

    /// Body bytes written into the pair so far.
    public var bytesWritten: Int64 { state.withLock { $0.bytesWritten } }

    /// Starts pumping: opens the output side, whose first space event starts the writes.
    ///
    /// Calling it again does nothing. The request may open the input stream before or after.
    public func start() {
        let first = state.withLock { state -> Bool in
            guard !state.started, state.result == nil else { return false }
            state.started = true
            state.keepAlive = self
            return true
        }
        guard first else { return }
        channel.open(on: queue) { [weak self] event in self?.handle(event) }
    }

    /// Cancels: the reader's pending and next reads return -1 with `CancellationError`,
    /// and the source finishes with that error. Safe from any thread, any number of times.
    public func cancel() {
        fail(CancellationError())
        // Also after a successful finish: a reader still draining the ring stops too.
        channel.cancelReader()
    }

    /// A fresh source over the same bytes, for a replay from its first byte (or `offset`).
    ///
    /// - Returns: A new, unstarted source; nil when this one is sequential.
    /// - Throws: `UploadError` with code `.invalidOption` when `offset` is outside this
    ///   source's range.
    public func makeReplay(from offset: Int64? = nil) throws(UploadError) -> InputStreamSource? {
        guard case .random(let source, let range) = filler else { return nil }
        let start = offset ?? range.lowerBound
        guard start >= range.lowerBound, start <= range.upperBound else {
            throw UploadError(.invalidOption, "replay offset \(start) is outside the body's bytes \(range.lowerBound)...\(range.upperBound)")
        }
        return InputStreamSource(
            filler: .random(source, range: start..<range.upperBound), bufferSize: bufferSize,
            queue: nil, readerStallTimeout: channel.readerStallTimeout, streams: streams, rateLimit: rateLimit)
    }

    /// Registers `handler` to run once when the source finishes (at once if it has).
    public func onFinish(_ handler: @escaping @Sendable (Result<Int64, any Error>) -> Void) {
        let done = state.withLock { state -> Result<Int64, any Error>? in
            if let result = state.result { return result }
            state.handlers.append(handler)
            return nil
        }
        if let done { handler(done) }
    }

    /// Waits until the source finished: every byte written and the output closed, or a failure.
    ///
    /// Cancellable: cancelling the awaiting task cancels the source (as `cancel()`: the pump
    /// stops, the reader's next read returns -1) and the wait resumes at once with
    /// `.failure(CancellationError())`, even while the pump is blocked inside a read of a
    /// sequential source; it never waits for the stream's end. A source that already finished
    /// gives its result.
    public var result: Result<Int64, any Error> {
        get async {
            let id = state.withLock { state -> Int in
                defer { state.nextWaiter += 1 }
                return state.nextWaiter
            }
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let done = state.withLock { state -> Result<Int64, any Error>? in
                        // Only once the handlers have run: whoever awaits sees them done.
                        if state.announced, let result = state.result { return result }
                        if state.cancelledWaiters.remove(id) != nil { return .failure(CancellationError()) }
                        state.waiters[id] = continuation
                        return nil
                    }
                    if let done { continuation.resume(returning: done) }
                }
            } onCancel: {
                // Stops the pump; its failure reaches every waiter once the handlers ran.
                cancel()
                let waiter = state.withLock { state in
                    guard let waiter = state.waiters.removeValue(forKey: id) else {
                        // Not registered yet (or already resumed): registration sees this.
                        if !state.announced { state.cancelledWaiters.insert(id) }
                        return nil as CheckedContinuation<Result<Int64, any Error>, Never>?
                    }
                    return waiter
                }
                waiter?.resume(returning: .failure(CancellationError()))
            }
        }
    }

    // MARK: - Events (on `queue`)

    private func handle(_ event: Stream.Event) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch event {
        case .hasSpaceAvailable:
            pump()
        case .errorOccurred:
            fail(channel.failure ?? CancellationError())
        case .endEncountered:
            fail(ReaderClosedEarly(bytesWritten: bytesWritten))
        default:
            break
        }
    }

    /// Fills the pair's free space straight from the source (no staging buffer: one copy
    /// from the source into the ring, the reader's copy out of it); stops when the ring is
    /// full (the next space event continues) or at the end.
    private func pump() {
        while true {
            if state.withLock({ $0.result != nil }) { return }
            // Bytes taken from the source but not yet written (Foundation's pair) go first.
            switch channel.flush() {
            case true?: break
            case false?: return
            case nil:
                fail(channel.failure ?? ReaderClosedEarly(bytesWritten: bytesWritten))
                return
            }
            let offset = state.withLock { $0.sourceOffset }
            let want: Int
            switch remaining(at: offset) {
            case .end:
                // A sequential source of known length must end there: one byte more is enough
                // to see one that holds more (never a body cut at the declared length).
                if case .sequential = filler, let failure = probePastTheEnd(at: offset) {
                    fail(failure)
                } else {
                    succeed()
                }
                return
            case .bytes(let count):
                want = count
            }
            var granted: Int?
            if let rateLimit {
                switch rateLimit.take(upTo: want) {
                case .send(let count):
                    granted = count
                case .wait(let delay):
                    // Over the cap: the ring may have room, so no space event would come; pump
                    // again when the bucket has refilled.
                    queue.asyncAfter(deadline: .now() + .microseconds(delay.wholeUnits(of: .microseconds(1)))) { [self] in
                        pump()
                    }
                    return
                }
            }
            var failure: (any Error)?
            var ended = false
            let filled = channel.fill(limit: granted ?? want) { region in
                guard !region.isEmpty else { return 0 }
                do {
                    let count = try read(into: region, at: offset)
                    if count == 0 { ended = true }
                    return count
                } catch {
                    failure = SourceFailure(offset: offset, underlying: error)
                    return 0
                }
            }
            if let granted, granted > max(0, filled) { rateLimit?.giveBack(granted - max(0, filled)) }
            if filled < 0 {
                fail(channel.failure ?? ReaderClosedEarly(bytesWritten: bytesWritten))
                return
            }
            if let failure {
                fail(failure)
                return
            }
            if ended {
                endOfSource(at: offset)
                return
            }
            if filled == 0 { return }
            state.withLock {
                $0.sourceOffset += Int64(filled)
                $0.bytesWritten += Int64(filled)
            }
        }
    }

    private enum Remaining {
        case bytes(Int)
        case end
    }

    /// How much the next fill may take, or the end when every byte of a known length is written.
    private func remaining(at offset: Int64) -> Remaining {
        switch filler {
        case .random(_, let range):
            return offset == range.upperBound ? .end : .bytes(Int(min(Int64(bufferSize), range.upperBound - offset)))
        case .sequential(let source):
            guard let total = source.length.value else { return .bytes(bufferSize) }
            return offset == total ? .end : .bytes(Int(min(Int64(bufferSize), total - offset)))
        }
    }

    /// Reads one byte past a sequential source's declared end: nil when it ended there.
    private func probePastTheEnd(at offset: Int64) -> SourceFailure? {
        var byte: UInt8 = 0
        do {
            let count = try withUnsafeMutableBytes(of: &byte) { try read(into: $0, at: offset) }
            return count == 0 ? nil : SourceFailure(offset: offset, underlying: ByteSourceError.longerThanDeclared(expected: offset))
        } catch {
            return SourceFailure(offset: offset, underlying: error)
        }
    }

    private func read(into region: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        insideSourceRead.store(true, ordering: .relaxed)
        defer { insideSourceRead.store(false, ordering: .relaxed) }
        switch filler {
        case .random(let source, _): return try source.read(into: region, at: offset)
        case .sequential(let source): return try source.read(into: region)
        }
    }

    private func stopAsyncSequence() {
        if case .sequential(let source as AsyncSequenceSource) = filler { source.cancel() }
    }

    /// The source returned no bytes at `offset`: the end of a sequential source of unknown
    /// length, else a source that ended before its length.
    private func endOfSource(at offset: Int64) {
        switch filler {
        case .random(_, let range):
            fail(SourceFailure(offset: offset, underlying: ByteSourceError.endedEarly(offset: offset, expected: range.upperBound)))
        case .sequential(let source):
            if let total = source.length.value {
                fail(SourceFailure(offset: offset, underlying: ByteSourceError.endedEarly(offset: offset, expected: total)))
            } else {
                succeed()
            }
        }
    }

    private func succeed() {
        let total = bytesWritten
        guard let finish = takeFinish(.success(total)) else { return }
        channel.finish()
        stopAsyncSequence()
        finish()
    }

    private func fail(_ error: any Error) {
        guard let finish = takeFinish(.failure(error)) else { return }
        channel.abandon(with: error, queue: queue)
        // Wakes a pump waiting inside an async sequence's read, and ends its iterating task.
        stopAsyncSequence()
        finish()
    }

    /// Records the result once; returns the work that tells everyone, or nil if already finished.
    ///
    /// The handlers run first; only then is the result announced to `result`'s waiters.
    private func takeFinish(_ result: Result<Int64, any Error>) -> (() -> Void)? {
        let taken = state.withLock { state -> (handlers: [@Sendable (Result<Int64, any Error>) -> Void], keepAlive: InputStreamSource?)? in
            guard state.result == nil else { return nil }
            state.result = result
            defer {
                state.handlers = []
                state.keepAlive = nil
            }
            return (state.handlers, state.keepAlive)
        }
        guard let taken else { return nil }
        return { [state] in
            withExtendedLifetime(taken.keepAlive) {
                for handler in taken.handlers { handler(result) }
                let waiters = state.withLock { state in
                    state.announced = true
                    state.cancelledWaiters = []
                    defer { state.waiters = [:] }
                    return state.waiters.values
                }
                for waiter in waiters { waiter.resume(returning: result) }
            }
        }
    }
}

extension InputStreamSource {
    /// The failure it finished with, if it finished with one.
    public var finishedFailure: (any Error)? {
        state.withLock { state in
            if case .failure(let error) = state.result { return error }
            return nil
        }
    }

    /// The bytes written when it finished successfully; nil until then.
    public var finishedBytes: Int64? {
        state.withLock { state in
            if case .success(let count) = state.result { return count }
            return nil
        }
    }
}
