import Dispatch
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

@Suite(.hangGuard) struct InputStreamSourceTests {
    @Test(arguments: [(37, 71, 13), (64 * 1024, 1_000_003, 65524), (4096, 0, 100), (1, 257, 3), (1000, 999, 1000)])
    func deliversTheSourceByteForByte(bufferSize: Int, length: Int, readChunk: Int) async throws {
        let source = SyntheticByteSource(length: Int64(length), seed: 11)
        let iss = InputStreamSource(source: ShortReadSource(base: source, chunk: 71), bufferSize: bufferSize)
        iss.start()
        let result = await onThread { drain(iss.inputStream, chunk: readChunk) }
        #expect(result.error == nil)
        #expect(result.bytes == (try source.bytes(in: 0..<source.length)))
        #expect(try await iss.result.get() == Int64(length))
        #expect(iss.bytesRead == Int64(length))
    }

    @Test func randomShapesDeliverEveryByte() async throws {
        let seed = testSeed("issRandomShapes")
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<25 {
            let length = Int64.random(in: 0...300_000, using: &rng)
            let bufferSize = Int.random(in: 1...20_000, using: &rng)
            let readChunk = Int.random(in: 1...70_000, using: &rng)
            let shortChunk = Int.random(in: 1...10_000, using: &rng)
            let start = Int64.random(in: 0...length, using: &rng)
            let source = SyntheticByteSource(length: length, seed: seed)
            let iss = InputStreamSource(source: ShortReadSource(base: source, chunk: shortChunk), range: start..<length, bufferSize: bufferSize)
            iss.start()
            let result = await onThread { drain(iss.inputStream, chunk: readChunk) }
            #expect(result.error == nil)
            #expect(
                result.bytes == (try source.bytes(in: start..<length)),
                "seed \(seed): length \(length) start \(start) buffer \(bufferSize) read \(readChunk) short \(shortChunk)")
        }
    }

    @Test(arguments: [FaultySource.Fault.fail, .endEarly])
    func aFailingOrShortSourceBecomesTheStreamsError(fault: FaultySource.Fault) async throws {
        let faultOffset: Int64 = 150_001
        let source = FaultySource(base: SyntheticByteSource(length: 400_000), faultOffset: faultOffset, fault: fault)
        let iss = InputStreamSource(source: source, bufferSize: 4096)
        let finishes = Lock(0)
        iss.onFinish { _ in finishes.withLock { $0 += 1 } }
        iss.start()
        let result = await onThread { drain(iss.inputStream, chunk: 65524) }
        // Never a silent end: the reader gets -1 and the real error, after at most the good bytes.
        let failure = try #require(result.error as? InputStreamSource.SourceFailure)
        #expect(failure.offset == faultOffset)
        if fault == .fail {
            #expect(failure.underlying is FaultySource.Injected)
        } else {
            #expect(failure.underlying as? ByteSourceError == .endedEarly(offset: faultOffset, expected: 400_000))
        }
        #expect(Int64(result.bytes.count) <= faultOffset)
        #expect(result.bytes == (try SyntheticByteSource(length: 400_000).bytes(in: 0..<Int64(result.bytes.count))))
        if case .success = await iss.result { Issue.record("a failed source finished successfully") }
        iss.cancel()
        #expect(finishes.withLock { $0 } == 1)
    }

    @Test func cancelAtRandomPointsFromEitherSideFinishesOnceAndNeverHangs() async throws {
        let seed = testSeed("issCancel")
        var rng = SeededGenerator(seed: seed)
        for round in 0..<30 {
            let source = SyntheticByteSource(length: 2_000_000, seed: UInt64(round))
            let iss = InputStreamSource(source: source, bufferSize: Int.random(in: 100...70_000, using: &rng))
            let finishes = Lock(0)
            iss.onFinish { _ in finishes.withLock { $0 += 1 } }
            iss.start()
            let stopAfter = Int.random(in: 0...2_000_000, using: &rng)
            let fromReader = Bool.random(using: &rng)
            let read = await onThread { () -> (Int, Int) in
                var total = 0
                var buffer = [UInt8](repeating: 0, count: 65524)
                iss.inputStream.open()
                while true {
                    if total >= stopAfter {
                        if fromReader { iss.inputStream.close() } else { iss.cancel() }
                        let after = buffer.withUnsafeMutableBufferPointer { iss.inputStream.read($0.baseAddress!, maxLength: 65524) }
                        return (total, after)
                    }
                    let count = buffer.withUnsafeMutableBufferPointer { iss.inputStream.read($0.baseAddress!, maxLength: 65524) }
                    if count <= 0 { return (total, count) }
                    total += count
                }
            }
            let outcome = await iss.result
            if read.0 < 2_000_000 {
                // Stopped before the end: the reader never sees a silent 0, and the source
                // succeeds only if it had already written every byte before the stop.
                #expect(read.1 == -1, "seed \(seed) round \(round)")
                if case .success(let written) = outcome {
                    #expect(written == 2_000_000, "seed \(seed) round \(round): success after \(written) bytes")
                }
            }
            iss.cancel()
            iss.cancel()
            #expect(finishes.withLock { $0 } == 1, "seed \(seed) round \(round)")
        }
    }

    @Test func aReplayStartsAgainFromTheFirstByte() async throws {
        let source = SyntheticByteSource(length: 100_000, seed: 8)
        let first = InputStreamSource(source: source, bufferSize: 1000)
        first.start()
        let partial = await onThread { () -> Int in
            var buffer = [UInt8](repeating: 0, count: 30_000)
            first.inputStream.open()
            return buffer.withUnsafeMutableBufferPointer { first.inputStream.read($0.baseAddress!, maxLength: 30_000) }
        }
        #expect(partial > 0)
        first.cancel()
        let replay = try #require(try first.makeReplay())
        replay.start()
        let result = await onThread { drain(replay.inputStream) }
        #expect(result.bytes == (try source.bytes(in: 0..<100_000)))
        let resumed = try #require(try first.makeReplay(from: 60_000))
        resumed.start()
        #expect(await onThread { drain(resumed.inputStream) }.bytes == (try source.bytes(in: 60_000..<100_000)))
        #expect(try InputStreamSource(sequential: FileDescriptorStream(fd: 0)).makeReplay() == nil)
        // Past the end, or before the range: a typed error, not a trap.
        for offset: Int64 in [100_001, -1, Int64.max] {
            #expect {
                _ = try first.makeReplay(from: offset)
            } throws: { error in
                (error as? UploadError)?.code == .invalidOption
            }
        }
        let tail = InputStreamSource(source: source, range: 50_000..<100_000, bufferSize: 1000)
        #expect(throws: UploadError.self) { try tail.makeReplay(from: 49_999) }
        #expect(try tail.makeReplay(from: 100_000) != nil)
    }

    @Test func sequentialSourceOfKnownLengthThatEndsEarlyFails() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writeEnd = fds[1]
        let bytes = [UInt8](repeating: 5, count: 1000)
        _ = bytes.withUnsafeBytes { write(writeEnd, $0.baseAddress, 1000) }
        close(writeEnd)
        let iss = InputStreamSource(sequential: FileDescriptorStream(fd: fds[0], length: .known(5000), name: "pipe"), bufferSize: 300)
        iss.start()
        let result = await onThread { drain(iss.inputStream) }
        close(fds[0])
        let failure = try #require(result.error as? InputStreamSource.SourceFailure)
        #expect(failure.offset == 1000)
        // The failure reaches the reader at once; bytes still in the ring are dropped, never padded.
        #expect(result.bytes.count <= 1000)
        #expect(result.bytes.allSatisfy { $0 == 5 })
    }

    /// A sequential source that holds more than it declared is an error, on both pairs: never a
    /// body cut at the declared length and called complete. One that holds exactly that much is not.
    @Test(arguments: [(InputStreamSource.Streams.sluicePair, 5001), (.foundation, 5001), (.sluicePair, 5000), (.foundation, 5000)])
    func sequentialSourceOfKnownLengthThatHoldsMoreFails(streams: InputStreamSource.Streams, holding count: Int) async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let bytes = [UInt8](repeating: 7, count: count)
        #expect(bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, count) } == count)
        close(fds[1])
        defer { close(fds[0]) }
        let iss = InputStreamSource(
            filler: .sequential(FileDescriptorStream(fd: fds[0], length: .known(5000), name: "pipe")),
            bufferSize: 300, queue: nil, streams: streams)
        iss.start()
        let drained = Task.detached { drain(iss.inputStream) }
        let outcome = await iss.result
        if count == 5000 {
            #expect(try outcome.get() == 5000)
            #expect(await drained.value.bytes.count == 5000)
        } else {
            guard case .failure(let error) = outcome else {
                Issue.record("a source holding \(count) bytes of a declared 5000 finished successfully")
                return
            }
            let failure = try #require(error as? InputStreamSource.SourceFailure)
            #expect(failure.offset == 5000)
            #expect(failure.underlying as? ByteSourceError == .longerThanDeclared(expected: 5000))
            iss.inputStream.close()
            _ = await drained.value
        }
    }

    /// Runs `sourceLeakChild` alone in a child process and expects it to pass.
    @Test(.enabled(if: !Isolated.inChild)) func leavesNoThreadOrDescriptorBehind() async throws {
        let (status, output) = try await Isolated.run("sourceLeakChild")
        #expect(status == 0, "the isolated leak check failed:\n\(output)")
        #expect(output.contains("sourceLeakChild") && !output.contains("skipped"), "the isolated test did not run:\n\(output)")
    }

    /// In a child process with nothing else running: 300 sources, drained or cancelled, leave
    /// exactly the descriptors there were (a source opens none) and no thread of their own.
    @Test(.enabled(if: Isolated.isChild("sourceLeakChild"))) func sourceLeakChild() async throws {
        func churn(_ count: Int) async {
            for _ in 0..<count {
                let iss = InputStreamSource(source: SyntheticByteSource(length: 50_000), bufferSize: 4096)
                iss.start()
                _ = await onThread { drain(iss.inputStream) }
                _ = await iss.result
            }
            for _ in 0..<count {
                let iss = InputStreamSource(source: SyntheticByteSource(length: 50_000), bufferSize: 4096)
                iss.start()
                iss.cancel()
                _ = await iss.result
            }
        }
        await churn(5)  // warm-up: the dispatch pool's own descriptors and threads
        let fdsBefore = openFileDescriptorCount()
        let threadsBefore = threadCount()
        await churn(150)
        #expect(openFileDescriptorCount() == fdsBefore)
        // Each private serial queue may borrow a dispatch thread of its own for a moment; a
        // leaked one (a pump stuck in a read) never goes back. Wait for the pool to settle.
        let settled = await settledThreadCount(within: 8, of: threadsBefore)
        #expect(settled - threadsBefore <= 8, "threads \(threadsBefore) -> \(settled)")
    }

    /// A task awaiting `result` of a source that never finishes (nobody reads) resumes once
    /// cancelled, and the cancel stops the source: it finishes with `CancellationError` and
    /// the reader's next read fails instead of waiting.
    @Test func awaitingTheResultIsCancellableAndStopsTheSource() async throws {
        let iss = InputStreamSource(source: SyntheticByteSource(length: 1_000_000), bufferSize: 1000)
        iss.start()  // Nobody reads: it never finishes by itself.
        let waiter = Task { await iss.result }
        let early = Task { await iss.result }
        early.cancel()
        waiter.cancel()
        for task in [early, waiter] {
            guard case .failure(let error) = await task.value else {
                Issue.record("a cancelled wait returned a success")
                continue
            }
            #expect(error is CancellationError)
        }
        #expect(iss.finishedFailure is CancellationError, "cancelling the wait stops the source")
        #expect(iss.finishedBytes == nil)
        let drained = await onThread { drain(iss.inputStream) }
        #expect(drained.error is CancellationError, "the reader sees the cancel: \(String(describing: drained.error))")
        #expect(drained.bytes.count <= 1000)
        // Awaiting a finished source gives its result, cancelled or not.
        guard case .failure(let error) = await iss.result else {
            Issue.record("a cancelled source succeeded")
            return
        }
        #expect(error is CancellationError)
    }

    /// The pump is blocked inside a sequential source's read that never returns by itself:
    /// a cancelled wait still returns at once, without waiting for the stream's end.
    @Test func awaitingTheResultOfAPumpBlockedInARead() async throws {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let iss = InputStreamSource(sequential: BlockingSource(entered: entered, gate: gate), bufferSize: 4096)
        iss.start()
        // Nobody needs to read: the pump blocks in the source's first read.
        await onThread { entered.wait() }  // Gate: the pump is inside read.
        #expect(iss.isWaitingOnSource)
        let waiter = Task { await iss.result }
        waiter.cancel()
        guard case .failure(let error) = await waiter.value else {
            Issue.record("a cancelled wait returned a success")
            gate.signal()
            return
        }
        #expect(error is CancellationError)
        #expect(iss.finishedFailure is CancellationError)
        gate.signal()  // Lets the pump's read return; it finds the source finished and stops.
    }
}

/// A sequential source whose first read blocks until `gate` is signalled, then ends.
private struct BlockingSource: SequentialByteSource {
    let entered: DispatchSemaphore
    let gate: DispatchSemaphore
    var length: BodyLength { .unknown }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        entered.signal()
        gate.wait()
        return 0
    }
}
