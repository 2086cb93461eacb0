import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceS3
@testable import SluiceByteSources
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Racily clean files (issue 37, item 4), as git treats a racily clean index entry: a write
/// within one timestamp tick of a file's last change leaves its change time where it was, so a
/// body read then can hold bytes the file never held at rest with nothing to show it. A body
/// read as it streams (a single request of 64 KiB or more, the parts of a multipart upload)
/// is read only once the file's change time is a granularity old, so that every later write
/// moves it and the check before the upload counts sees it. The race is driven at a gate: a
/// file whose writes behave as the kernel's, on the test's clock.
@Suite(.hangGuard)
struct S3RacilyCleanTests {
    /// A file of `length` bytes of version A, last changed at `changeTime`; the first read past
    /// its start is where a writer rewrites it whole as version B (two `pwrite`s, both at the
    /// clock's time then). Like the kernel's, that write moves the change time only when the
    /// clock is a granularity past it; within the tick it stays.
    final class SameTickFile: ChangeTimedSource, Sendable {
        let length: Int64
        let openedChangeTime: Int64
        let clock: Lock<Int64>
        private let state: Mutex<(bytes: [UInt8], change: Int64, written: Bool)>

        /// `writes` false: no writer (a file at rest).
        init(length: Int, changeTime: Int64, writes: Bool = true) {
            self.length = Int64(length)
            openedChangeTime = changeTime
            clock = Lock(changeTime + 1)
            state = Mutex((Array(repeating: 0x41, count: length), changeTime, !writes))
        }

        /// The test's clock: `now` reads it, `sleep` moves it on.
        var testClock: SourceSnapshot.Clock {
            SourceSnapshot.Clock(
                now: { [clock] in clock.withLock { $0 } },
                sleep: { [clock] duration in
                    let (seconds, attoseconds) = duration.components
                    clock.withLock { $0 += seconds * 1_000_000_000 + attoseconds / 1_000_000_000 }
                })
        }

        /// Whether the writer has written.
        var written: Bool { state.withLock { $0.written } }

        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
            let now = clock.withLock { $0 }
            return state.withLock { state in
                if offset > 0, !state.written {
                    state.written = true
                    state.bytes = Array(repeating: 0x42, count: state.bytes.count)
                    if now >= openedChangeTime + SourceSnapshot.granularity(changeTime: openedChangeTime) { state.change = now }
                }
                let count = min(buffer.count, state.bytes.count - Int(offset))
                state.bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + Int(offset), byteCount: count) }
                return count
            }
        }

        func currentSizeAndChangeTime() throws -> (size: Int64, change: Int64) {
            (length, state.withLock { $0.change })
        }
    }

    /// A change time with nanoseconds (a granularity of a few milliseconds), and this machine's clock near it.
    static let changeTime: Int64 = 1_796_000_000_123_456_789

    static func upload(_ file: SameTickFile) async throws -> S3UploadResult {
        let transport = S3AnswerProofTests.FakeS3(faulty: .head, fault: .empty, faultCount: 0)
        var client = S3AnswerProofTests.client(transport)
        client.options.snapshot.clock = file.testClock
        let source = S3Source(file, identity: "racy:\(UUID().uuidString)", fingerprint: S3SourceFingerprint(size: file.length))
        return try await client.upload(source, to: try S3Location(parsing: "s3://bucket/racy"))
    }

    @Test(
        "a file rewritten within the tick of its last change while its body streams is not counted: one request and each part",
        arguments: [200 << 10, 5 << 20])
    func aWriteWithinTheTickIsSeen(length: Int) async throws {
        let file = SameTickFile(length: length, changeTime: Self.changeTime)
        // Without the wait the write lands within the tick, the change time stays, and the
        // torn body (A then B) is counted as stored.
        let error = await #expect(throws: S3Error.self) { try await Self.upload(file) }
        #expect(file.written)
        #expect(error?.code == .sourceChanged, "\(String(describing: error))")
        #expect(error?.message.contains("its inode change time changed") == true, "\(String(describing: error))")
    }

    @Test("a file at rest a granularity before the upload is sent at once, without a wait", arguments: [200 << 10, 5 << 20])
    func aFileAtRestIsNotWaitedFor(length: Int) async throws {
        let file = SameTickFile(length: length, changeTime: Self.changeTime, writes: false)
        let atRest = Self.changeTime + SourceSnapshot.granularity(changeTime: Self.changeTime)
        file.clock.withLock { $0 = atRest }
        let result = try await Self.upload(file)
        #expect(result.length == Int64(length))
        #expect(file.clock.withLock { $0 } == atRest)
    }

    @Test("a file changed just now and then left alone is sent once its change time is a granularity old", arguments: [200 << 10, 5 << 20])
    func aFileChangedJustNowIsWaitedFor(length: Int) async throws {
        let file = SameTickFile(length: length, changeTime: Self.changeTime, writes: false)
        let result = try await Self.upload(file)
        #expect(result.length == Int64(length))
        #expect(file.clock.withLock { $0 } == Self.changeTime + SourceSnapshot.granularity(changeTime: Self.changeTime))
    }
}
