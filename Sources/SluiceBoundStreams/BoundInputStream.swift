import Foundation
import Synchronization
import SluiceRequests
@_spi(Floors) import SluicePrimitives

/// The reading end of a `BoundStreamPair`.
///
/// - Important: `read` blocks until bytes arrive, the writer closes, or the pair fails or
///   is cancelled (or, with a `readerStallTimeout`, until that much time passed with no byte:
///   then it fails the pair); call it from a thread that may wait. It never reports the end before the writer closed. One thread reads at a time.
package final class BoundInputStream: InputStream {
    private let core: BoundStreamPair.Core

    package init(core: BoundStreamPair.Core) {
        self.core = core
        super.init(data: Data())
    }

    package override func open() {
        core.lock.withLock { $0.openReader() }
    }

    package override func close() {
        let event = core.lock.withLockBroadcasting { $0.closeReader() }
        core.output?.deliver(event)
    }

    package override var hasBytesAvailable: Bool {
        core.lock.withLock { $0.readerHasBytesAvailable }
    }

    package override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let core = self.core
        let ready = { (state: inout StateMachine) -> StateMachine.ReadReservation? in
            let reservation = state.reserveRead(limit: len)
            if case .wait = reservation {
                // Still under the lock: whoever sees the count and then takes the lock finds
                // this reader waiting on the condition.
                core.readerWaits.add(1, ordering: .relaxed)
                return nil
            }
            return reservation
        }
        let reservation: StateMachine.ReadReservation
        if let timeout = core.readerStallTimeout {
            guard let ready = core.lock.wait(timeout: timeout.inSeconds, ready) else {
                core.fail(BoundStreamPair.ProducerStalled(timeout: timeout))
                return -1
            }
            reservation = ready
        } else {
            reservation = core.lock.wait(ready)
        }
        switch reservation {
        case .bytes(let first, let second):
            // Copied with the lock released: the writer fills other bytes meanwhile.
            if let base = first.baseAddress { UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: first.count) }
            if let base = second.baseAddress { (UnsafeMutableRawPointer(buffer) + first.count).copyMemory(from: base, byteCount: second.count) }
            let count = first.count + second.count
            let event = core.lock.withLock { $0.commitRead(count) }
            core.output?.deliver(event)
            return count
        case .end:
            return 0
        case .failed, .wait:
            return -1
        }
    }

    package override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    package override var streamStatus: Stream.Status {
        core.lock.withLock { $0.readerStatus }
    }

    package override var streamError: (any Error)? {
        core.lock.withLock { $0.failure }
    }

    package override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    package override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    package override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    package override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}

private typealias StateMachine = BoundStreamPair.StateMachine
