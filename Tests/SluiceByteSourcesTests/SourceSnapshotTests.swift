import Foundation
import Synchronization
import Testing
@testable import Sluice

#if canImport(Glibc)
import Glibc
@testable import SluiceByteSources
#endif
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `SourceSnapshot`: a small body read once; a file only as it was at rest. Changes come from
/// hooks (between the read and the second look, or in the wait), the clock is the test's where
/// the point is the wait.
@Suite(.hangGuard)
struct SourceSnapshotTests {
    /// A new file holding `bytes`, opened.
    func file(_ bytes: [UInt8]) throws -> (path: String, file: FileByteSource) {
        let path = try s3TemporaryDirectory("snapshot") + "/small.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return (path, try FileByteSource(path: path))
    }

    @Test("a file written to between the read and the second look at its change time is refused")
    func writtenWhileRead() async throws {
        let (path, file) = try file(Array(repeating: 0x61, count: 40_000))
        defer { file.close() }
        var snapshot = SourceSnapshot()
        // The real clock: the read starts a granularity after the file's change time, so the
        // write here moves it whatever the machine's load.
        snapshot.afterRead = { rewriteFile(path, Array(repeating: 0x62, count: 20_000)) }
        let error = await #expect(throws: SourceSnapshot.Changed.self) { try await snapshot.read(file) }
        #expect(error?.reason == "it was written to while it was read: its change time moved")
    }

    @Test("a file changed just now is read once its change time is a granularity old; a write in the wait refuses it")
    func tooRecentWaitsAndRechecks() async throws {
        let (path, file) = try file(Array(repeating: 0x61, count: 1_000))
        defer { file.close() }
        let opened = file.timesInNanoseconds.change
        let granularity = SourceSnapshot.granularity(changeTime: opened)
        let waits = Mutex<[Duration]>([])
        var snapshot = SourceSnapshot()
        snapshot.clock = .init(now: { opened + 1 }, sleep: { duration in waits.withLock { $0.append(duration) } })
        #expect(try await snapshot.read(file).bytes(in: 0..<1_000) == Array(repeating: 0x61, count: 1_000))
        #expect(waits.withLock { $0 } == [.nanoseconds(granularity - 1)])
        // A writer still at work: its next write lands in the wait (rewritten until the change
        // time moves, by the real clock), and the file is refused.
        snapshot.clock.sleep = { _ in
            repeat { rewriteFile(path, [0x62]) } while (try? file.currentSizeAndChangeTime().change) == opened
        }
        let error = await #expect(throws: SourceSnapshot.Changed.self) { try await snapshot.read(file) }
        #expect(error?.reason == "it was written to since it was opened: its change time moved")
    }

    @Test("a change time ahead of the clock by more than the granularity is refused, not waited for")
    func aheadOfTheClock() async throws {
        let (_, file) = try file([1, 2, 3])
        defer { file.close() }
        let opened = file.timesInNanoseconds.change
        let waits = Mutex(0)
        var snapshot = SourceSnapshot()
        snapshot.clock = .init(now: { opened - 3_600_000_000_000 }, sleep: { _ in waits.withLock { $0 += 1 } })
        let error = await #expect(throws: SourceSnapshot.Changed.self) { try await snapshot.read(file) }
        #expect(error?.reason.contains("ahead of this machine's clock") == true, "\(String(describing: error))")
        #expect(waits.withLock { $0 } == 0)
    }

    @Test(
        "a small file is opened, read, looked at again and closed inline from the page cache or in one trip to the pool; any other path is left to the caller",
        arguments: [true, false])
    func readFileInOneTrip(inline: Bool) async throws {
        let (path, file) = try file(Array(repeating: 0x61, count: 16_384))
        file.close()
        var info = stat()
        #expect(stat(path, &info) == 0)
        let changed = info.st_ctim.nanosecondsSince1970
        let waits = Mutex<[Duration]>([])
        var snapshot = SourceSnapshot()
        snapshot.readsCachedInline = inline
        // At rest: read in the trip, no wait.
        let granularity = SourceSnapshot.granularity(changeTime: changed)
        snapshot.clock = .init(now: { changed + granularity }, sleep: { duration in waits.withLock { $0.append(duration) } })
        let read = try #require(try await snapshot.readFile(atPath: path, below: 64 << 10))
        #expect(read.bytes.length == 16_384)
        #expect(try read.bytes.bytes(in: 0..<16_384) == Array(repeating: 0x61, count: 16_384))
        #expect(read.inode == UInt64(info.st_ino) && read.device == UInt64(info.st_dev) && read.changeTime == changed)
        #expect(waits.withLock { $0 }.isEmpty)
        // Changed just now: read after one wait, and still whole.
        snapshot.clock.now = { changed + 1 }
        #expect(try await snapshot.readFile(atPath: path, below: 64 << 10)?.bytes.bytes(in: 0..<16_384) == read.bytes.bytes(in: 0..<16_384))
        #expect(waits.withLock { $0 } == [.nanoseconds(granularity - 1)])
        // Written to while it was read: refused.
        snapshot.clock.now = { changed + granularity }
        snapshot.afterRead = { rewriteFile(path, Array(repeating: 0x62, count: 100)) }
        let error = await #expect(throws: SourceSnapshot.Changed.self) { try await snapshot.readFile(atPath: path, below: 64 << 10) }
        #expect(error?.reason == "it was written to while it was read: its change time moved")
        snapshot.afterRead = nil
        // Not below the limit, empty: nil (the caller opens it as any path); missing: the open's error.
        #expect(try await snapshot.readFile(atPath: path, below: 16_384) == nil)
        let empty = path + ".empty"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(try await snapshot.readFile(atPath: empty, below: 64 << 10) == nil)
        await #expect(throws: ByteSourceError.self) { try await snapshot.readFile(atPath: path + ".missing", below: 64 << 10) }
    }

    @Test("whole seconds mean a granularity of 2 s; finer times, a few milliseconds")
    func granularity() {
        #expect(SourceSnapshot.granularity(changeTime: 1_796_297_597_000_000_000) == 2_000_000_000)
        let fine = SourceSnapshot.granularity(changeTime: 1_796_297_597_123_456_789)
        #expect(fine >= 1_000_000 && fine < 1_000_000_000)
    }
}
