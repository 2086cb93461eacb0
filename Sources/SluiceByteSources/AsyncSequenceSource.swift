@_spi(Floors) import SluicePrimitives

/// A sequential source over an `AsyncSequence` of byte chunks: the bridge between a caller's
/// async producer and a transport that reads with `read(into:)` on a thread of its own.
///
/// A task of its own iterates the sequence, one chunk at a time, and asks for the next chunk
/// only when a reader is waiting and the previous chunk is used up: the sequence is never read
/// ahead of the connection, and the memory held here is one chunk, whatever the body's size.
/// `read(into:)` waits on a condition (no polling) until the chunk, the end or a failure
/// arrives. The length is counted by the transport's reader like any sequential source's: a
/// sequence that ends before its declared length fails the upload.
///
/// - Important: `read(into:)` blocks: transports call it on a producer thread of their own
///   (curl's producer thread, the URLSession pump's queue), never on the engine loop or in a
///   task. One thread reads at a time. `cancel()` may be called from any thread, any number
///   of times: it cancels the iterating task and wakes a waiting read, which throws
///   `CancellationError`. The sequence is iterated once: the source cannot be replayed.
package final class AsyncSequenceSource: SequentialByteSource {
    private enum Step {
        case copied(Int)
        case ended
        case wait(CheckedContinuation<Bool, Never>?)
    }

    private enum End: Sendable {
        case finished
        case failed(any Error)
    }

    private struct State {
        /// The chunk being read, and how much of it was.
        package var chunk: [UInt8] = []
        package var index = 0
        /// A reader waits for the next chunk.
        package var wanted = false
        /// The iterating task, waiting for a reader to want a chunk.
        package var demand: CheckedContinuation<Bool, Never>?
        package var end: End?
        package var started = false
        package var task: Task<Void, Never>?
    }

    package let length: BodyLength
    private let state = Lock(State())
    private let iterate: @Sendable (AsyncSequenceSource) async -> Void

    /// - Parameters:
    ///   - sequence: The chunks, iterated once, from a task of this source's own, when the
    ///     first read asks for bytes.
    ///   - length: The declared length; the transport fails the upload when the sequence
    ///     delivers fewer or more bytes.
    package init<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks, length: BodyLength)
    where Chunks.Element: Collection<UInt8> {
        self.length = length
        iterate = { source in
            var iterator = sequence.makeAsyncIterator()
            do {
                while await source.awaitDemand() {
                    guard let chunk = try await iterator.next() else {
                        source.finish(.finished)
                        return
                    }
                    // An empty chunk leaves the reader wanting: the loop asks for the next one.
                    if !chunk.isEmpty { source.deliver(Array(chunk)) }
                }
            } catch {
                source.finish(.failed(error))
            }
        }
    }

    /// Copies the next bytes of the current chunk, waiting for the sequence's next chunk
    /// when it is used up.
    ///
    /// - Returns: The bytes copied, 0 at the sequence's end.
    /// - Throws: The sequence's error, or `CancellationError` after `cancel()`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !buffer.isEmpty else { return 0 }
        startIfNeeded()
        while true {
            let step = try state.withLock { state -> Step in
                if state.index < state.chunk.count {
                    let count = min(buffer.count, state.chunk.count - state.index)
                    state.chunk.withUnsafeBytes { chunk in
                        buffer.baseAddress!.copyMemory(from: chunk.baseAddress! + state.index, byteCount: count)
                    }
                    state.index += count
                    return .copied(count)
                }
                switch state.end {
                case .finished?: return .ended
                case .failed(let error)?: throw error
                case nil: break
                }
                state.wanted = true
                defer { state.demand = nil }
                return .wait(state.demand)
            }
            switch step {
            case .copied(let count):
                return count
            case .ended:
                return 0
            case .wait(let demand):
                // The iterating task asks the sequence for the next chunk; this thread waits.
                demand?.resume(returning: true)
                _ = state.wait { state in state.index < state.chunk.count || state.end != nil ? true : nil }
            }
        }
    }

    /// Stops the sequence: cancels the iterating task and wakes a waiting read, which throws
    /// `CancellationError`. Safe from any thread, any number of times; does nothing after the
    /// sequence ended.
    package func cancel() {
        finish(.failed(CancellationError()))
        state.withLock { $0.task }?.cancel()
    }

    private func startIfNeeded() {
        guard
            state.withLock({ state -> Bool in
                defer { state.started = true }
                return !state.started
            })
        else { return }
        let task = Task { await iterate(self) }
        let ended = state.withLock { state -> Bool in
            state.task = task
            return state.end != nil
        }
        if ended { task.cancel() }
    }

    /// Waits until a reader wants a chunk; false once the source ended (a cancel).
    private func awaitDemand() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool? in
                    if state.end != nil { return false }
                    if state.wanted { return true }
                    state.demand = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    private func deliver(_ chunk: [UInt8]) {
        state.withLockBroadcasting { state in
            guard state.end == nil else { return }
            state.chunk = chunk
            state.index = 0
            state.wanted = false
        }
    }

    private func finish(_ end: End) {
        let demand = state.withLockBroadcasting { state -> CheckedContinuation<Bool, Never>? in
            if state.end == nil { state.end = end }
            defer { state.demand = nil }
            return state.demand
        }
        demand?.resume(returning: false)
    }
}
