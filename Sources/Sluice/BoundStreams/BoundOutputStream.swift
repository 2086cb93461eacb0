import Dispatch
import Foundation

/// The writing end of a `BoundStreamPair`. Never blocks; one thread writes at a time; see
/// `BoundStreamPair`.
final class BoundOutputStream: OutputStream {
    private let core: BoundStreamPair.Core
    private let delivery = ConditionLock<Delivery>(Delivery())

    private struct Delivery: @unchecked Sendable {
        // @unchecked: StreamDelegate and RunLoop are not Sendable; they are only handed
        // out under the lock and used on the target they belong to.
        weak var delegate: (any StreamDelegate)?
        var queue: DispatchQueue?
        var runLoops: [(RunLoop, RunLoop.Mode)] = []
    }

    init(core: BoundStreamPair.Core) {
        self.core = core
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        fatalError("BoundOutputStream is made by BoundStreamPair")
    }

    override var delegate: (any StreamDelegate)? {
        get { delivery.withLock { $0.delegate } }
        set { delivery.withLock { $0.delegate = newValue } }
    }

    /// Delivers this stream's events on `queue` (in addition to any run loop it is scheduled in).
    func deliverEvents(on queue: DispatchQueue?) {
        delivery.withLock { $0.queue = queue }
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        delivery.withLock { $0.runLoops.append((aRunLoop, mode)) }
    }

    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        delivery.withLock { $0.runLoops.removeAll { $0.0 === aRunLoop && $0.1 == mode } }
    }

    override func open() {
        let event = core.lock.withLock { $0.openWriter() }
        deliver(event)
    }

    override func close() {
        core.lock.withLockBroadcasting { $0.closeWriter() }
    }

    override var hasSpaceAvailable: Bool {
        core.lock.withLock { $0.writer == .open && $0.failure == nil && $0.reader != .closed && $0.ring.freeSpace > 0 }
    }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        guard let (first, second) = core.lock.withLock({ $0.reserveWrite(limit: max(0, len)) }) else { return -1 }
        // Copied with the lock released: the reader takes other bytes meanwhile.
        let source = UnsafeRawPointer(buffer)
        if let base = first.baseAddress { base.copyMemory(from: source, byteCount: first.count) }
        if let base = second.baseAddress { base.copyMemory(from: source + first.count, byteCount: second.count) }
        let count = first.count + second.count
        let event = core.lock.withLockBroadcasting { $0.commitWrite(count, asked: len) }
        deliver(event)
        return count
    }

    override var streamStatus: Stream.Status {
        core.lock.withLock { state in
            if state.failure != nil { return .error }
            switch state.writer {
            case .notOpen: return .notOpen
            case .closed: return .closed
            case .open: return state.reader == .closed ? .atEnd : .open
            }
        }
    }

    override var streamError: (any Error)? {
        core.lock.withLock { $0.failure }
    }

    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }

    /// Sends `event` to the delegate on each event target; a no-op for `.none`.
    func deliver(_ event: BoundStreamPair.StateMachine.WriterEvent) {
        let (queue, runLoops) = delivery.withLock { ($0.queue, $0.runLoops) }
        switch event {
        case .none:
            return
        case .hasSpaceAvailable:
            // One handler run per queued event, wherever it lands first.
            let handled = ConditionLock(false)
            let work = Work { [self] in
                let first = handled.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { self.handleSpaceEvent() }
            }
            dispatch(work, queue: queue, runLoops: runLoops)
        case .endEncountered, .errorOccurred:
            let code: Stream.Event = event == .endEncountered ? .endEncountered : .errorOccurred
            let handled = ConditionLock(false)
            let work = Work { [self] in
                let first = handled.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { self.delegate?.stream(self, handle: code) }
            }
            dispatch(work, queue: queue, runLoops: runLoops)
        }
    }

    private func handleSpaceEvent() {
        guard core.lock.withLock({ $0.beginSpaceEvent() }) else { return }
        delegate?.stream(self, handle: .hasSpaceAvailable)
        let next = core.lock.withLock { $0.endSpaceEvent() }
        deliver(next)
    }

    private func dispatch(_ work: Work, queue: DispatchQueue?, runLoops: [(RunLoop, RunLoop.Mode)]) {
        if let queue {
            queue.async { work.run() }
        }
        for (runLoop, mode) in runLoops {
            // A timer added from another thread wakes the run loop; perform(_:) would not.
            let timer = Timer(timeInterval: 0, repeats: false) { _ in work.run() }
            runLoop.add(timer, forMode: mode)
        }
    }
}

/// A closure that may cross threads.
private struct Work: @unchecked Sendable {
    // @unchecked: the closures above capture only Sendable state and the stream,
    // whose own state is locked.
    let run: () -> Void
}
