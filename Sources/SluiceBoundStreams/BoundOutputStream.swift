import Dispatch
import Foundation
import Synchronization
@_spi(Floors) import SluicePrimitives

/// The writing end of a `BoundStreamPair`. Never blocks; one thread writes at a time; see
/// `BoundStreamPair`.
package final class BoundOutputStream: OutputStream {
    private let core: BoundStreamPair.Core
    private let delivery = Lock<Delivery>(Delivery())

    private struct Delivery: @unchecked Sendable {
        // @unchecked: StreamDelegate and RunLoop are not Sendable; they are only handed
        // out under the lock and used on the target they belong to.
        package weak var delegate: (any StreamDelegate)?
        package var queue: DispatchQueue?
        package var runLoops: [Scheduled] = []
        /// Closed: no longer scheduled anywhere; a later `schedule` is ignored.
        package var closed = false
        /// For tests that deliver events themselves, one at a time, in an order they choose.
        package var enqueue: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
        /// Events that came while the stream had no target (opened before it was scheduled,
        /// as Apple's API allows): delivered when the first target is added.
        package var owed: [BoundStreamPair.StateMachine.Action] = []

        package var hasTarget: Bool { queue != nil || !runLoops.isEmpty || enqueue != nil }

        /// The owed events, when a target was just added.
        package mutating func takeOwed() -> [BoundStreamPair.StateMachine.Action] {
            guard hasTarget else { return [] }
            defer { owed = [] }
            return owed
        }
    }

    /// A run loop and mode the stream is scheduled in, with the timer that keeps that run
    /// loop running while it is.
    private struct Scheduled {
        package let runLoop: RunLoop
        package let mode: RunLoop.Mode
        package let keepAlive: Timer
    }

    package init(core: BoundStreamPair.Core) {
        self.core = core
        super.init(toMemory: ())
    }

    deinit {
        unscheduleAll()
    }

    #if canImport(Darwin)
    package override init(toMemory: ()) {
        fatalError("BoundOutputStream is made by BoundStreamPair")
    }
    #else
    package required init(toMemory: ()) {
        fatalError("BoundOutputStream is made by BoundStreamPair")
    }
    #endif

    package override var delegate: (any StreamDelegate)? {
        get { delivery.withLock { $0.delegate } }
        set { delivery.withLock { $0.delegate = newValue } }
    }

    /// Delivers this stream's events on `queue` (in addition to any run loop it is scheduled in).
    package func deliverEvents(on queue: DispatchQueue?) {
        deliverOwed(
            delivery.withLock { delivery in
                delivery.queue = queue
                return delivery.takeOwed()
            })
    }

    /// Hands each event to `enqueue` instead of a queue or run loop (for tests).
    package func deliverEvents(using enqueue: (@Sendable (@escaping @Sendable () -> Void) -> Void)?) {
        deliverOwed(
            delivery.withLock { delivery in
                delivery.enqueue = enqueue
                return delivery.takeOwed()
            })
    }

    private func deliverOwed(_ events: [BoundStreamPair.StateMachine.Action]) {
        for event in events { deliver(event) }
    }

    /// Apple's stream is a source of the run loop it is scheduled in: a thread that runs
    /// that run loop (`RunLoop.current.run()`, as the seed's program does) waits for the
    /// stream's events until the stream is closed or removed. Events come here as timers,
    /// which exist only while one is due, so a run loop holding nothing else would return at
    /// once (and its thread end, and no event ever reach the delegate): a timer that never
    /// fires stands in for the source, from `schedule` until `remove` or `close`.
    package override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        deliverOwed(
            delivery.withLock { delivery in
                guard !delivery.closed, !delivery.runLoops.contains(where: { $0.runLoop === aRunLoop && $0.mode == mode }) else { return [] }
                let keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
                delivery.runLoops.append(Scheduled(runLoop: aRunLoop, mode: mode, keepAlive: keepAlive))
                aRunLoop.add(keepAlive, forMode: mode)
                return delivery.takeOwed()
            })
    }

    package override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        delivery.withLock { delivery in
            delivery.runLoops.removeAll { scheduled in
                guard scheduled.runLoop === aRunLoop && scheduled.mode == mode else { return false }
                scheduled.keepAlive.invalidate()
                return true
            }
        }
    }

    /// Leaves every run loop (as Apple's stream does when it closes).
    private func unscheduleAll() {
        delivery.withLock { delivery in
            delivery.closed = true
            for scheduled in delivery.runLoops { scheduled.keepAlive.invalidate() }
            delivery.runLoops = []
        }
    }

    /// Fails the whole pair (what `BoundStreamPair.fail` does), for a writer that holds only
    /// this stream.
    package func failPair(_ error: any Error) {
        core.fail(error)
    }

    package override func open() {
        let event = core.lock.withLock { $0.openWriter() }
        deliver(event)
    }

    package override func close() {
        core.lock.withLockBroadcasting { $0.closeWriter() }
        unscheduleAll()
    }

    package override var hasSpaceAvailable: Bool {
        core.lock.withLock { $0.writerHasSpaceAvailable }
    }

    package override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        guard let (first, second) = core.lock.withLock({ $0.reserveWrite(limit: max(0, len)) }) else { return -1 }
        // Copied with the lock released: the reader takes other bytes meanwhile.
        let source = UnsafeRawPointer(buffer)
        if let base = first.baseAddress { base.copyMemory(from: source, byteCount: first.count) }
        if let base = second.baseAddress { base.copyMemory(from: source + first.count, byteCount: second.count) }
        let count = first.count + second.count
        let event = core.lock.withLockBroadcasting { $0.commitWrite(count) }
        deliver(event)
        return count
    }

    /// `write` without the caller's buffer: `body` fills the first free region itself.
    package func fill(limit: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        guard let (first, _) = core.lock.withLock({ $0.reserveWrite(limit: max(0, limit)) }) else { return -1 }
        // Filled with the lock released: the reader takes other bytes meanwhile.
        let count = max(0, min(first.count, body(first)))
        let event = core.lock.withLockBroadcasting { $0.commitWrite(count) }
        deliver(event)
        return count
    }

    package override var streamStatus: Stream.Status {
        core.lock.withLock { $0.writerStatus }
    }

    package override var streamError: (any Error)? {
        core.lock.withLock { $0.failure }
    }

    package override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    package override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }

    /// Sends `event` to the delegate on each event target; a no-op for `.none`.
    package func deliver(_ event: BoundStreamPair.StateMachine.Action) {
        let code: Stream.Event
        switch event {
        case .none: return
        case .hasSpaceAvailable: code = .hasSpaceAvailable
        case .endEncountered: code = .endEncountered
        case .errorOccurred: code = .errorOccurred
        }
        // One handler run per event, on whichever target takes it first.
        let once = RunOnce()
        let work = Work { [self] in
            guard once.claim() else { return }
            if code == .hasSpaceAvailable {
                handleSpaceEvent()
            } else {
                delegate?.stream(self, handle: code)
            }
        }
        let (queue, runLoops, enqueue) = delivery.withLock { delivery in
            // No target yet: the event waits for the first one (`schedule`, `deliverEvents`).
            if !delivery.hasTarget, !delivery.closed { delivery.owed.append(event) }
            return (delivery.queue, delivery.runLoops, delivery.enqueue)
        }
        if let enqueue { enqueue { work.run() } }
        if let queue { queue.async { work.run() } }
        for scheduled in runLoops {
            // A timer added from another thread wakes the run loop; perform(_:) would not.
            let timer = Timer(timeInterval: 0, repeats: false) { _ in work.run() }
            scheduled.runLoop.add(timer, forMode: scheduled.mode)
        }
    }

    private func handleSpaceEvent() {
        guard core.lock.withLock({ $0.beginSpaceEvent() }) else { return }
        delegate?.stream(self, handle: .hasSpaceAvailable)
        let next = core.lock.withLock { $0.endSpaceEvent() }
        deliver(next)
    }
}

/// True for the first caller of `claim()` only.
private final class RunOnce: Sendable {
    private let claimed = Atomic<Bool>(false)

    package func claim() -> Bool {
        claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// A closure that may cross threads.
private struct Work: @unchecked Sendable {
    // @unchecked: the closure captures only Sendable state and the stream, whose own state
    // is locked.
    package let run: () -> Void
}
