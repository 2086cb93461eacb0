import Dispatch
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
import Synchronization
@_spi(Floors) import SluicePrimitives

/// Collects a stream's events; a gate instead of sleeps.
final class EventRecorder: StreamDelegate, @unchecked Sendable {
    // @unchecked: `events` is locked; `onSpace` is set before the stream opens.
    let events = Lock<[Stream.Event]>([])
    let signal = DispatchSemaphore(value: 0)
    var onSpace: ((OutputStream) -> Void)?

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        events.withLock { $0.append(eventCode) }
        if eventCode == .hasSpaceAvailable, let onSpace, let output = aStream as? OutputStream { onSpace(output) }
        signal.signal()
    }

    /// Waits until an event matching `predicate` has arrived, or `patience` passes.
    func wait(for event: Stream.Event) -> Bool {
        let deadline = DispatchTime.afterPatience
        while true {
            if events.withLock({ $0.contains(event) }) { return true }
            if signal.wait(timeout: deadline) == .timedOut { return events.withLock { $0.contains(event) } }
        }
    }
}

@Suite(.hangGuard) struct BoundStreamPairTests {
    /// Writer driven by space events with odd chunk sizes, reader with other odd sizes.
    @Test(arguments: [(1, 1, 1), (37, 71, 13), (64, 4093, 65524), (4096, 1000, 7), (65536, 65536, 65524)])
    func deliversEveryByteInOrder(capacity: Int, writeChunk: Int, readChunk: Int) async throws {
        let payload = try SyntheticByteSource(length: 300_007, seed: UInt64(capacity)).bytes(in: 0..<300_007)
        let pair = BoundStreamPair(capacity: capacity)
        let queue = DispatchQueue(label: "writer")
        pair.deliverOutputEvents(on: queue)
        let recorder = EventRecorder()
        let offset = Lock(0)
        recorder.onSpace = { output in
            while true {
                let start = offset.withLock { $0 }
                if start == payload.count {
                    output.close()
                    return
                }
                let count = min(writeChunk, payload.count - start)
                let written = payload.withUnsafeBufferPointer { output.write($0.baseAddress! + start, maxLength: count) }
                #expect(written >= 0)
                offset.withLock { $0 += max(0, written) }
                if written < count { return }
            }
        }
        pair.outputStream.delegate = recorder
        pair.outputStream.open()
        let result = await onThread { drain(pair.inputStream, chunk: readChunk) }
        #expect(result.error == nil)
        #expect(result.bytes == payload)
        #expect(pair.inputStream.hasBytesAvailable == false)
        #expect(pair.inputStream.streamStatus == .atEnd)
    }

    @Test func randomSizesDeliverEveryByte() async throws {
        let seed = testSeed("pairRandomSizes")
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<20 {
            let capacity = Int.random(in: 1...5000, using: &rng)
            let length = Int.random(in: 0...200_000, using: &rng)
            let writeChunk = Int.random(in: 1...9000, using: &rng)
            let readChunk = Int.random(in: 1...9000, using: &rng)
            let payload = try SyntheticByteSource(length: Int64(length), seed: seed).bytes(in: 0..<Int64(length))
            let pair = BoundStreamPair(capacity: capacity)
            let writer = Thread {
                // A writer that ignores events and polls: partial writes must still be exact.
                pair.outputStream.open()
                var start = 0
                while start < payload.count {
                    let count = min(writeChunk, payload.count - start)
                    let written = payload.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress! + start, maxLength: count) }
                    if written < 0 { return }
                    start += written
                    if written == 0 { sched_yield() }
                }
                pair.outputStream.close()
            }
            writer.start()
            let result = await onThread { drain(pair.inputStream, chunk: readChunk) }
            #expect(result.bytes == payload, "seed \(seed) capacity \(capacity) length \(length) chunks \(writeChunk)/\(readChunk)")
        }
    }

    @Test func readerWaitsInsteadOfReportingAnEarlyEnd() async throws {
        let pair = BoundStreamPair(capacity: 16)
        pair.outputStream.open()
        pair.inputStream.open()
        // Empty and not finished: the reader must not be told the end.
        #expect(pair.inputStream.hasBytesAvailable)
        let reader = await startRead(from: pair)
        let bytes: [UInt8] = [1, 2, 3]
        #expect(bytes.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress!, maxLength: 3) } == 3)
        #expect(await reader.value == 3)
        pair.outputStream.close()
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(buffer.withUnsafeMutableBufferPointer { pair.inputStream.read($0.baseAddress!, maxLength: 8) } == 0)
        #expect(!pair.inputStream.hasBytesAvailable)
    }

    struct Boom: Error, Equatable {}

    /// Starts an 8-byte read of `pair` on a thread of its own; returns once the reader is
    /// blocked waiting for the writer (the pair's probe counts a reader that went to wait,
    /// under the lock every waker takes). The thread starts here, not from a task: a task can
    /// wait behind other suites for the cooperative pool's two threads on a busy machine.
    private func startRead(from pair: BoundStreamPair) async -> Task<Int, Never> {
        let waitsBefore = pair.core.readerWaits.load(ordering: .relaxed)
        let count = Lock<Int?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 8)
            let read = buffer.withUnsafeMutableBufferPointer { pair.inputStream.read($0.baseAddress!, maxLength: 8) }
            count.withLock { $0 = read }
            finished.signal()
        }.start()
        let reader = Task {
            await onThread { () -> Int in
                finished.wait()
                return count.withLock { $0 } ?? -2
            }
        }
        let blocked = await onThread { () -> Bool in
            let deadline = DispatchTime.afterPatience
            while pair.core.readerWaits.load(ordering: .relaxed) == waitsBefore {
                if DispatchTime.now() > deadline { return false }
                usleep(1000)  // polls the probe; does not burn a core meanwhile
            }
            return true
        }
        #expect(blocked, "the reader never blocked")
        return reader
    }

    @Test(arguments: [true, false])
    func failureAndCancelWakeABlockedReader(cancel: Bool) async throws {
        let pair = BoundStreamPair(capacity: 16)
        let recorder = EventRecorder()
        pair.deliverOutputEvents(on: DispatchQueue(label: "events"))
        pair.outputStream.delegate = recorder
        pair.outputStream.open()
        pair.inputStream.open()
        let reader = await startRead(from: pair)
        if cancel { pair.cancel() } else { pair.fail(Boom()) }
        #expect(await reader.value == -1)
        if cancel {
            #expect(pair.inputStream.streamError is CancellationError)
        } else {
            #expect(pair.inputStream.streamError as? Boom == Boom())
        }
        #expect(pair.inputStream.streamStatus == .error)
        // FoundationNetworking reads only while `hasBytesAvailable` and takes `false` for the
        // end of the body: after a failure it stays true, so its next read gets -1 and aborts.
        #expect(pair.inputStream.hasBytesAvailable)
        #expect(await onThread { recorder.wait(for: .errorOccurred) })
        let bytes: [UInt8] = [1]
        #expect(bytes.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress!, maxLength: 1) } == -1)
        // The first failure wins.
        pair.fail(Boom())
        if cancel { #expect(pair.inputStream.streamError is CancellationError) }
    }

    @Test func readerClosingFirstTellsTheWriterEndEncountered() async {
        let pair = BoundStreamPair(capacity: 16)
        let recorder = EventRecorder()
        let events = DispatchQueue(label: "events")
        pair.deliverOutputEvents(on: events)
        pair.outputStream.delegate = recorder
        pair.outputStream.open()
        pair.inputStream.open()
        pair.inputStream.close()
        #expect(await onThread { recorder.wait(for: .endEncountered) })
        let bytes: [UInt8] = [1]
        #expect(bytes.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress!, maxLength: 1) } == -1)
        #expect(pair.outputStream.streamStatus == .atEnd)
        pair.inputStream.close()
        // Gate: every event queued so far has been delivered (the queue is serial).
        events.sync {}
        #expect(recorder.events.withLock { $0.filter { $0 == .endEncountered }.count } == 1)
    }

    @Test func partialWriteThenSpaceEventAfterRead() async {
        let pair = BoundStreamPair(capacity: 37)
        let recorder = EventRecorder()
        let events = DispatchQueue(label: "events")
        pair.deliverOutputEvents(on: events)
        pair.outputStream.delegate = recorder
        pair.outputStream.open()
        #expect(await onThread { recorder.wait(for: .hasSpaceAvailable) })
        recorder.events.withLock { $0.removeAll() }
        let bytes = [UInt8](repeating: 9, count: 71)
        #expect(bytes.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress!, maxLength: 71) } == 37)
        #expect(!pair.outputStream.hasSpaceAvailable)
        #expect(bytes.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress!, maxLength: 71) } == 0)
        pair.inputStream.open()
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(buffer.withUnsafeMutableBufferPointer { pair.inputStream.read($0.baseAddress!, maxLength: 10) } == 10)
        // 10 of 37 free: below half, the writer is not woken yet. Gate: anything queued by
        // now has been delivered.
        events.sync {}
        #expect(recorder.events.withLock { $0.isEmpty })
        #expect(buffer.withUnsafeMutableBufferPointer { pair.inputStream.read($0.baseAddress!, maxLength: 10) } == 10)
        #expect(await onThread { recorder.wait(for: .hasSpaceAvailable) })
        #expect(bytes.withUnsafeBufferPointer { pair.outputStream.write($0.baseAddress!, maxLength: 71) } == 20)
    }

    @Test func eventsArriveOnTheScheduledRunLoop() async {
        let recorder = EventRecorder()
        let pair = BoundStreamPair(capacity: 8)
        let ready = DispatchSemaphore(value: 0)
        let stop = Lock(false)
        let thread = Thread {
            pair.outputStream.schedule(in: .current, forMode: .default)
            pair.outputStream.delegate = recorder
            pair.outputStream.open()
            ready.signal()
            while !stop.withLock({ $0 }) {
                _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
            }
        }
        thread.start()
        await onThread { ready.wait() }
        #expect(await onThread { recorder.wait(for: .hasSpaceAvailable) })
        stop.withLock { $0 = true }
    }

    /// Runs `pairLeakChild` alone in a child process and expects it to pass.
    @Test(.enabled(if: !Isolated.inChild)) func noThreadOrDescriptorLeftBehind() async throws {
        let (status, output) = try await Isolated.run("pairLeakChild")
        #expect(status == 0, "the isolated leak check failed:\n\(output)")
        #expect(output.contains("pairLeakChild") && !output.contains("skipped"), "the isolated test did not run:\n\(output)")
    }

    /// In a child process with nothing else running: 3000 pairs opened, cancelled and closed
    /// leave exactly the descriptors there were (a pair opens none), and no thread beyond
    /// the dispatch pool's spare ones.
    @Test(.enabled(if: Isolated.isChild("pairLeakChild"))) func pairLeakChild() async throws {
        @Sendable func churn(_ count: Int) {
            for _ in 0..<count {
                let pair = BoundStreamPair(capacity: 1024)
                pair.deliverOutputEvents(on: DispatchQueue(label: "events"))
                pair.outputStream.open()
                pair.inputStream.open()
                pair.cancel()
                pair.outputStream.close()
                pair.inputStream.close()
            }
        }
        await onThread { churn(50) }  // warm-up: the dispatch pool's own descriptors and threads
        let fdsBefore = openFileDescriptorCount()
        let threadsBefore = threadCount()
        await onThread { churn(3000) }
        #expect(openFileDescriptorCount() == fdsBefore)
        // Each private serial queue may borrow a dispatch thread of its own for a moment; a
        // leaked one (a pump stuck in a read) never goes back. Wait for the pool to settle.
        let settled = await settledThreadCount(within: 8, of: threadsBefore)
        #expect(settled - threadsBefore <= 8, "threads \(threadsBefore) -> \(settled)")
    }
}
