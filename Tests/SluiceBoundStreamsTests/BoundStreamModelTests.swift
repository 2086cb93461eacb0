import Dispatch
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Model-based test of the bound pair (issue 8 §1): random interleavings of open, write (in
/// and outside space events, one write per event or until a short write), read, close of
/// either end, cancel and fail, run against a small reference model of the contract, one step
/// at a time on one thread (the test delivers the output events itself, in FIFO order).
///
/// After every step the pair must agree with the model on every return value, every byte,
/// both statuses, and on the writer's events: a writer owed `hasSpaceAvailable` (it opened or
/// wrote since its last event) has one on its way once half the ring is free. Each schedule
/// then runs to quiescence: an unfailed writer must get its whole payload through.
///
/// Prints its seed; `SLUICE_TEST_SEED=<seed>` replays it.
@Suite(.hangGuard) struct BoundStreamModelTests {
    static let iterations = 1500

    @Test func randomInterleavingsAgreeWithTheModel() async throws {
        let seed = testSeed("pairModel")
        // CPU-bound: on a thread of its own, not one of Swift's two cooperative threads.
        let (steps, failure) = await onThread { () -> (Int, String?) in
            var rng = SeededGenerator(seed: seed)
            var steps = 0
            for iteration in 0..<Self.iterations {
                let harness = Harness(rng: &rng, label: "seed \(seed) iteration \(iteration)")
                harness.run(rng: &rng)
                steps += harness.steps
                if let failure = harness.failure { return (steps, failure) }
            }
            return (steps, nil)
        }
        if let failure { Issue.record(Comment(rawValue: failure)) }
        print("pairModel: \(Self.iterations) schedules, \(steps) steps")
    }
}

/// The pair's contract, as plainly as it can be said.
private struct PairModel {
    enum End: Equatable { case notOpen, open, closed }
    enum ReadOutcome: Equatable { case bytes([UInt8]), end, failed, wouldWait }

    let capacity: Int
    var writer = End.notOpen
    var reader = End.notOpen
    /// The first failure's name ("cancel" or "fail N").
    var failure: String?
    var ring: [UInt8] = []
    /// The writer opened or wrote since its last `hasSpaceAvailable`.
    var owed = false
    var endEncounteredDue = false
    var errorOccurredDue = false

    var threshold: Int { max(1, capacity / 2) }
    var free: Int { capacity - ring.count }
    var streaming: Bool { writer == .open && reader != .closed && failure == nil }

    mutating func openWriter() {
        guard writer == .notOpen else { return }
        writer = .open
        if failure != nil {
            errorOccurredDue = true
        } else if reader == .closed {
            endEncounteredDue = true
        } else {
            owed = true
        }
    }

    mutating func write(_ bytes: ArraySlice<UInt8>) -> Int {
        guard streaming else { return -1 }
        let count = min(bytes.count, free)
        ring += bytes.prefix(count)
        owed = true
        return count
    }

    mutating func closeWriter() {
        writer = .closed
    }

    mutating func openReader() {
        if reader == .notOpen { reader = .open }
    }

    mutating func read(_ limit: Int) -> ReadOutcome {
        if failure != nil || reader == .closed { return .failed }
        if !ring.isEmpty {
            let count = min(limit, ring.count)
            defer { ring.removeFirst(count) }
            return .bytes(Array(ring.prefix(count)))
        }
        return writer == .closed ? .end : .wouldWait
    }

    mutating func closeReader() {
        guard reader != .closed else { return }
        if writer == .open && failure == nil { endEncounteredDue = true }
        reader = .closed
    }

    mutating func fail(_ name: String) {
        guard failure == nil else { return }
        failure = name
        if writer == .open { errorOccurredDue = true }
    }

    var inputStatus: Stream.Status {
        if failure != nil { return .error }
        switch reader {
        case .closed: return .closed
        case .notOpen: return .notOpen
        case .open: return writer == .closed && ring.isEmpty ? .atEnd : .open
        }
    }

    var outputStatus: Stream.Status {
        if failure != nil { return .error }
        switch writer {
        case .notOpen: return .notOpen
        case .closed: return .closed
        case .open: return reader == .closed ? .atEnd : .open
        }
    }
}

/// One schedule: a pair, its model, a writer with a payload, and the events the pair queued.
private final class Harness: NSObject, StreamDelegate, @unchecked Sendable {
    // @unchecked: used on the test's thread only; `queued` is locked because the pair calls
    // its enqueue closure.
    struct Failed: Error {}
    enum Strategy { case oneWritePerEvent(buffer: Int), untilShortWrite(chunk: Int) }

    let label: String
    let pair: BoundStreamPair
    var model: PairModel
    let payload: [UInt8]
    let strategy: Strategy
    /// The writer's position in `payload`, and the part of it in its buffer not yet written.
    var offset = 0
    var pending = 0..<0
    var received: [UInt8] = []
    var events: [Stream.Event] = []
    var writerClosedByStep = false
    let queued = Lock<[@Sendable () -> Void]>([])
    var steps = 0
    var failed = false
    /// The first disagreement, with the steps that led to it.
    var failure: String?
    var log: [String] = []

    init(rng: inout SeededGenerator, label: String) {
        self.label = label
        let capacity = Bool.random(using: &rng) ? Int.random(in: 1...8, using: &rng) : Int.random(in: 9...300, using: &rng)
        pair = BoundStreamPair(capacity: capacity)
        model = PairModel(capacity: capacity)
        payload = (0..<Int.random(in: 0...(capacity * 6 + 10), using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        // Buffers smaller than, equal to and larger than the ring.
        let size = [max(1, capacity / 2), capacity, capacity + 1, capacity * 3, Int.random(in: 1...(capacity * 2), using: &rng)].randomElement(using: &rng)!
        strategy = Int.random(in: 0..<3, using: &rng) == 0 ? .untilShortWrite(chunk: size) : .oneWritePerEvent(buffer: size)
        super.init()
        pair.deliverOutputEvents(using: { [queued] work in queued.withLock { $0.append(work) } })
        pair.outputStream.delegate = self
    }

    func run(rng: inout SeededGenerator) {
        do {
            log.append("capacity \(model.capacity), payload \(payload.count), \(strategy)")
            for _ in 0..<Int.random(in: 0...120, using: &rng) {
                try step(rng: &rng)
            }
            try runToQuiescence()
        } catch {
            failed = true
        }
        withExtendedLifetime(pair) {}
    }

    // MARK: Steps

    private func step(rng: inout SeededGenerator) throws {
        steps += 1
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<35:
            try deliverOne()
        case 35..<65:
            try read(limit: Int.random(in: 1...(model.capacity * 2), using: &rng))
        case 65..<78:
            try writeOnce(outsideEvent: true)
        case 78..<84:
            note("open writer")
            model.openWriter()
            pair.outputStream.open()
        case 84..<90:
            note("open reader")
            model.openReader()
            pair.inputStream.open()
        case 90..<93:
            note("close writer")
            writerClosedByStep = true
            model.closeWriter()
            pair.outputStream.close()
        case 93..<95:
            note("close reader")
            model.closeReader()
            pair.inputStream.close()
        case 95..<97:
            note("cancel")
            model.fail("cancel")
            pair.cancel()
        case 97..<99:
            let name = "fail \(steps)"
            note(name)
            model.fail(name)
            pair.fail(Named(name: name))
        default:
            try deliverAll()
        }
        try checkInvariants()
    }

    /// Runs every queued event, reads whatever the model says is there, until nothing moves;
    /// then an unfailed writer must have sent its payload and the reader seen the end.
    private func runToQuiescence() throws {
        note("run to quiescence")
        if model.writer == .notOpen && model.failure == nil {
            model.openWriter()
            pair.outputStream.open()
        }
        if model.reader == .notOpen {
            model.openReader()
            pair.inputStream.open()
        }
        try checkInvariants()
        var rounds = 0
        while true {
            rounds += 1
            try check(rounds < 1_000_000, "no quiescence")
            let hadWork = try deliverOne()
            let readable = model.reader == .open && model.failure == nil && !model.ring.isEmpty
            if readable { try read(limit: model.capacity * 2) }
            try checkInvariants()
            if !hadWork && !readable { break }
        }
        guard model.failure == nil, model.reader != .closed, !writerClosedByStep else { return }
        try check(model.writer == .closed, "the writer never finished: wrote \(offset - pending.count) of \(payload.count) bytes and heard nothing more")
        try check(received == payload, "received \(received.count) bytes, not the \(payload.count) written")
        try read(limit: 1)
    }

    @discardableResult
    private func deliverOne() throws -> Bool {
        let work = queued.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        guard let work else { return false }
        note("deliver")
        work()
        return true
    }

    private func deliverAll() throws {
        for _ in 0..<3 {
            if try !deliverOne() { break }
        }
    }

    private func read(limit: Int) throws {
        let expected = model.read(limit)
        note("read \(limit): model \(expected)")
        if expected == .wouldWait {
            // The pair must agree that a read would wait (a read here would block the test).
            let waits = pair.core.lock.withLock { state -> Bool in
                if case .wait = state.reserveRead(limit: limit) { return true }
                return false
            }
            try check(waits, "the pair would not wait where the model does")
            return
        }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBufferPointer { pair.inputStream.read($0.baseAddress!, maxLength: limit) }
        switch expected {
        case .bytes(let bytes):
            try check(count == bytes.count && Array(buffer[..<max(0, count)]) == bytes, "read returned \(count), model \(bytes.count) bytes")
            received += bytes
        case .end:
            try check(count == 0, "read returned \(count) at the end")
        case .failed:
            try check(count == -1, "read returned \(count) after a failure or close")
        case .wouldWait:
            break
        }
    }

    /// One write from the writer's buffer, refilled from the payload when drained.
    private func writeOnce(outsideEvent: Bool) throws {
        if writerClosedByStep || model.writer == .closed { return }
        if pending.isEmpty {
            let size: Int
            switch strategy {
            case .oneWritePerEvent(let buffer): size = buffer
            case .untilShortWrite(let chunk): size = chunk
            }
            pending = offset..<min(payload.count, offset + size)
            offset = pending.upperBound
        }
        let expected = model.write(payload[pending])
        let written = payload.withUnsafeBufferPointer { bytes in
            pair.outputStream.write(bytes.baseAddress! + pending.lowerBound, maxLength: pending.count)
        }
        note("write \(pending.count)\(outsideEvent ? " outside an event" : ""): \(written), model \(expected)")
        try check(written == expected, "write returned \(written), model \(expected)")
        if written > 0 { pending = (pending.lowerBound + written)..<pending.upperBound }
    }

    // MARK: The writer's delegate

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        events.append(eventCode)
        do {
            note("event \(eventCode.rawValue)")
            guard eventCode == .hasSpaceAvailable else { return }
            try check(model.streaming, "hasSpaceAvailable to a writer that may not write")
            try check(model.owed, "hasSpaceAvailable although the writer did not write since the last one")
            model.owed = false
            if offset == payload.count && pending.isEmpty {
                // The seed: all written, close at the next event.
                note("writer closes")
                model.closeWriter()
                pair.outputStream.close()
                return
            }
            switch strategy {
            case .oneWritePerEvent:
                try writeOnce(outsideEvent: false)
            case .untilShortWrite:
                while !(offset == payload.count && pending.isEmpty) {
                    try writeOnce(outsideEvent: false)
                    if !pending.isEmpty { break }
                }
            }
        } catch {
            failed = true
        }
    }

    // MARK: Checks

    private func checkInvariants() throws {
        if failed { throw Failed() }
        try check(
            pair.inputStream.streamStatus == model.inputStatus,
            "input status \(pair.inputStream.streamStatus.rawValue), model \(model.inputStatus.rawValue)")
        try check(
            pair.outputStream.streamStatus == model.outputStatus,
            "output status \(pair.outputStream.streamStatus.rawValue), model \(model.outputStatus.rawValue)")
        try check(pair.outputStream.hasSpaceAvailable == (model.streaming && model.free > 0), "hasSpaceAvailable disagrees")
        if model.streaming && model.owed && model.free >= model.threshold {
            try check(!queued.withLock { $0.isEmpty }, "the writer is owed hasSpaceAvailable, \(model.free) bytes are free, and none is queued")
        }
        let ends = events.filter { $0 == .endEncountered }.count
        let errors = events.filter { $0 == .errorOccurred }.count
        try check(ends <= (model.endEncounteredDue ? 1 : 0), "endEncountered \(ends) times")
        try check(errors <= (model.errorOccurredDue ? 1 : 0), "errorOccurred \(errors) times")
        if queued.withLock({ $0.isEmpty }) {
            try check(ends == (model.endEncounteredDue ? 1 : 0), "endEncountered due but never sent")
            try check(errors == (model.errorOccurredDue ? 1 : 0), "errorOccurred due but never sent")
        }
        if let failure = model.failure {
            let error = pair.inputStream.streamError
            let name = error is CancellationError ? "cancel" : (error as? Named)?.name
            try check(name == failure, "streamError \(String(describing: error)), model \(failure)")
        }
    }

    private func check(_ condition: Bool, _ message: String) throws {
        guard !condition else { return }
        if failure == nil { failure = "\(label): \(message)\n  steps: \(log.suffix(25).joined(separator: "; "))" }
        failed = true
        throw Failed()
    }

    private func note(_ entry: String) {
        log.append(entry)
        if log.count > 200 { log.removeFirst(100) }
    }

    struct Named: Error { var name: String }
}
