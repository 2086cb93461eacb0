import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `UploadBody.stream(_:length:)`: an `AsyncSequence` of byte chunks sent by both transports,
/// byte-exact (SHA-256 at the receiver), counted, cancellable, with backpressure.
///
/// Serialized: URLSession on Linux drives every task of the process from one shared queue,
/// which waits in the body stream's read while a sequence is slow; one upload at a time from
/// here keeps the timing-sensitive URLSession tests that run alongside undisturbed.
@Suite(.serialized, .hangGuard) struct AsyncSequenceBodyTests {
    /// Chunks of sizes that divide nothing (1 ... 100,000 bytes, seeded), as `[UInt8]`,
    /// `ArraySlice<UInt8>` (with a non-zero start index) and `Data`, with a known and an
    /// unknown length.
    @Test(arguments: TransportKind.allCases, [true, false])
    func aSequenceArrivesByteExact(transport: TransportKind, knownLength: Bool) async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let source = SyntheticByteSource(length: 3_000_017, seed: 31)
        let seed = testSeed("aSequenceArrivesByteExact")
        let chunks = Chunks(source: source, seed: seed)
        let length: BodyLength = knownLength ? .known(source.length) : .unknown
        let bodies: [(String, UploadBody)] = [
            ("array", .stream(chunks, length: length)),
            ("slice", .stream(chunks.map { (chunk: [UInt8]) -> ArraySlice<UInt8> in ([0] + chunk)[1...] }, length: length)),
            ("data", .stream(chunks.map { Data($0) }, length: length)),
        ]
        let expected = try #require(await onThread { try? Digest.sha256(of: source) })
        var options = UploadOptions()
        options.bufferSize = 64 * 1024
        for (index, (name, body)) in bodies.enumerated() {
            let request = try UploadRequest(url: receiver.url + "\(name).bin", method: "PUT")
            let response = try await Uploader(transport: transport, options: options).upload(request, body: body)
            #expect(response.isSuccess && response.bytesSent == source.length, "\(name) seed \(seed)")
            #expect(await onThread { receiver.waitForUploads(index + 1, timeout: patience) })
            let received = try #require(receiver.completed.last)
            #expect(received.path == "/\(name).bin")
            #expect(received.bytes == source.length && received.sha256 == expected, "\(name) seed \(seed)")
            // URLSession on Linux sends every stream body chunked.
            if transport == .curl { #expect(received.chunked == !knownLength) }
        }
    }

    /// A sequence that ends 1,000 bytes before its declared length fails with `.sourceFailed`;
    /// the server never answers 2xx to what it got.
    @Test(arguments: TransportKind.allCases)
    func aShortSequenceForAKnownLengthFails(transport: TransportKind) async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let source = SyntheticByteSource(length: 500_000, seed: 5)
        let body = UploadBody.stream(Chunks(source: source, seed: 5, endAt: 499_000), length: .known(500_000))
        let request = try UploadRequest(url: receiver.url + "short.bin", method: "PUT")
        do {
            let response = try await Uploader(transport: transport).upload(request, body: body)
            Issue.record("a short sequence ended in \(response.status) after \(response.bytesSent) bytes")
        } catch let error as UploadError {
            #expect(error.code == .sourceFailed, "\(error)")
            #expect(error.status.map { !(200..<300).contains($0) } ?? true, "\(error)")
            #expect("\(error)".contains("499000"), "names where it ended: \(error)")
        }
        #expect(await onThread { receiver.waitForFailures(1, timeout: patience) })
        #expect(receiver.completed.isEmpty, "the receiver took a short body: \(receiver.completed)")
    }

    /// An upload whose sequence yields 1 MiB and then waits forever: cancelling the upload's
    /// task ends it with `.cancelled`, and the sequence's iteration is cancelled too.
    @Test(arguments: TransportKind.allCases)
    func cancellingMidStreamEndsTheUploadAndTheIteration(transport: TransportKind) async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let probe = Probe()
        let chunks = Chunks(source: SyntheticByteSource(length: 10 << 20, seed: 2), seed: 2, hangAt: 1 << 20, probe: probe)
        var options = UploadOptions()
        options.stallTimeout = .seconds(600)  // Nothing but the cancel ends it.
        let request = try UploadRequest(url: receiver.url + "cancel.bin", method: "PUT")
        let uploader = Uploader(transport: transport, options: options)
        let task = Task { try await uploader.upload(request, body: .stream(chunks, length: .known(10 << 20))) }
        await probe.hanging.wait()  // Gate: the sequence is waiting inside next().
        task.cancel()
        switch await task.result {
        case .success(let response):
            Issue.record("a cancelled upload succeeded: \(response.status)")
        case .failure(let error):
            #expect((error as? UploadError)?.code == .cancelled, "\(error)")
        }
        await probe.iterationCancelled.wait()  // The iterating task saw the cancel (or the time limit fails the test).
        #expect(receiver.completed.isEmpty)
    }

    /// 256 MiB (curl) or 16 MiB (URLSession) from a sequence that could produce it all at
    /// once: the transport pulls a chunk only when it has room, so what was pulled never runs
    /// far ahead of what was sent. (URLSession on Linux drives every task of the process from
    /// one shared queue: a long upload there starves the timing-sensitive URLSession tests
    /// that run in parallel, hence the smaller body.)
    @Test(arguments: TransportKind.allCases)
    func aLargeSequenceIsPulledOnlyWhenThereIsRoom(transport: TransportKind) async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        let total: Int64 = transport == .curl ? 256 << 20 : 16 << 20
        let block = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let tracker = AheadTracker()
        let chunks = RepeatedChunks(block: block, count: Int(total) / block.count, tracker: tracker)
        var options = UploadOptions()
        options.bufferSize = 256 * 1024
        options.progressInterval = .zero
        let request = try UploadRequest(url: receiver.url + "large.bin", method: "PUT")
        let response = try await Uploader(transport: transport, options: options).upload(
            request, body: .stream(chunks, length: .known(total))
        ) { progress in tracker.sent(progress.bytesSent) }
        #expect(response.isSuccess && response.bytesSent == total)
        #expect(await onThread { receiver.waitForUploads(1, timeout: patience) })
        let received = try #require(receiver.completed.first)
        let expected = try #require(await onThread { try? Digest.sha256(of: RepeatedBlockSource(block: block, length: total)) })
        #expect(received.bytes == total && received.sha256 == expected)
        // Ring (256 KiB) + one chunk (64 KiB) + libcurl's or URLSession's buffers + progress
        // lag: a few MiB. A sequence drained without backpressure runs the whole body ahead.
        // URLSession's progress lags by its socket buffers and its one shared queue, which a
        // busy machine stretches (5 MiB of its 16 MiB body seen under two builds): half the body
        // still tells backpressure from none.
        let ahead = tracker.maximumAhead
        print("aLargeSequenceIsPulledOnlyWhenThereIsRoom(\(transport)): at most \(ahead) bytes pulled ahead of the bytes sent")
        #expect(ahead < total / (transport == .curl ? 4 : 2), "pulled up to \(ahead) bytes ahead of what was sent")
    }
}

/// Seeded chunks of a synthetic source: sizes 1 ... 100,000; optionally ending early
/// (`endAt`) or waiting, cancellably, once `hangAt` bytes were yielded.
struct Chunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let source: SyntheticByteSource
    let seed: UInt64
    var endAt: Int64?
    var hangAt: Int64?
    var probe: Probe?

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: Chunks
        var generator: SeededGenerator
        var offset: Int64 = 0

        mutating func next() async throws -> [UInt8]? {
            let end = chunks.endAt ?? chunks.source.length
            if let hangAt = chunks.hangAt, offset >= hangAt {
                chunks.probe?.hanging.open()
                do { try await Task.sleep(for: .seconds(3600)) } catch {
                    chunks.probe?.iterationCancelled.open()
                    throw error
                }
            }
            guard offset < end else { return nil }
            var size = Int64(Int.random(in: 1...100_000, using: &generator))
            size = Swift.min(size, end - offset, (chunks.hangAt ?? .max) - offset)
            defer { offset += size }
            return try chunks.source.bytes(in: offset..<offset + size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(chunks: self, generator: SeededGenerator(seed: seed))
    }
}

/// The same block `count` times, as fast as asked; records how far ahead of `sent` it is.
struct RepeatedChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let block: [UInt8]
    let count: Int
    let tracker: AheadTracker

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: RepeatedChunks
        var index = 0

        mutating func next() async -> [UInt8]? {
            guard index < sequence.count else { return nil }
            index += 1
            sequence.tracker.pulled(Int64(index * sequence.block.count))
            return sequence.block
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}

/// How far the bytes pulled from a sequence ran ahead of the bytes the transport reported sent.
final class AheadTracker: Sendable {
    private let sentBytes = Atomic<Int64>(0)
    private let ahead = Atomic<Int64>(0)

    func sent(_ count: Int64) { sentBytes.store(count, ordering: .relaxed) }

    func pulled(_ total: Int64) {
        let distance = total - sentBytes.load(ordering: .relaxed)
        _ = ahead.max(distance, ordering: .relaxed)
    }

    var maximumAhead: Int64 { ahead.load(ordering: .relaxed) }
}

/// `block` repeated up to `length` bytes, for the expected digest.
struct RepeatedBlockSource: ByteSource {
    let block: [UInt8]
    let length: Int64

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset < length, !buffer.isEmpty else { return 0 }
        let start = Int(offset % Int64(block.count))
        let count = min(buffer.count, block.count - start, Int(length - offset))
        block.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + start, byteCount: count) }
        return count
    }
}

/// One-shot gates the iterator opens and the test awaits.
final class Probe: Sendable {
    let hanging = Gate()
    let iterationCancelled = Gate()
}

/// Opens once; `wait()` returns once it is open.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}
