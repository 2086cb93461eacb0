import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The resume fingerprint of a file sees an edit in the middle even when the modification
/// time was set back (`touch -r`): its status change time moved. A replaced file (new inode)
/// is seen too. Old records (no inode, no ctime) still load and compare.
@Suite(.hangGuard)
struct TusFingerprintFileTests {
    private func makeFile(_ bytes: Int) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-fp-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("f.bin").path
        let content = try SyntheticByteSource(length: Int64(bytes), seed: 9).bytes(in: 0..<Int64(bytes))
        #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
        return path
    }

    private func fingerprint(_ path: String) throws -> TusFingerprint {
        let source = try TusSource(file: FileByteSource(path: path))
        defer { source.close() }
        return try TusFingerprint(of: source)
    }

    private func statOf(_ path: String) -> stat {
        var info = stat()
        #expect(stat(path, &info) == 0)
        return info
    }

    /// Gate: the kernel stamps ctime from a coarse clock (a tick is a few ms); wait until that
    /// clock has passed the file's ctime, so the next write gets a later one.
    private func waitForTheCoarseClock(toPass path: String) {
        let ctime = statOf(path).st_ctim
        var now = timespec()
        repeat {
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
        } while now.tv_sec < ctime.tv_sec || (now.tv_sec == ctime.tv_sec && now.tv_nsec <= ctime.tv_nsec)
    }

    @Test func middleEditWithModificationTimeRestoredIsSeen() throws {
        let path = try makeFile(5 << 20)
        let before = try fingerprint(path)
        #expect(before.inode != nil && before.changeTime != nil && before.device != nil)
        #expect(try fingerprint(path).difference(from: before) == nil)
        let saved = statOf(path)
        waitForTheCoarseClock(toPass: path)
        // Edit 10 bytes in the middle (outside the first and last MiB), then `touch -r`.
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        _ = Array("0123456789".utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, 10, off_t(2 << 20)) }
        close(fd)
        var times = [saved.st_atim, saved.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let after = try fingerprint(path)
        #expect(after.length == before.length && after.headSHA256 == before.headSHA256 && after.tailSHA256 == before.tailSHA256)
        #expect(after.modificationTime == before.modificationTime)
        let difference = try #require(after.difference(from: before))
        #expect(difference.contains("ctime"))
    }

    @Test func replacedFileIsSeen() throws {
        let path = try makeFile(3 << 20)
        let before = try fingerprint(path)
        let saved = statOf(path)
        // Same bytes, same times, new inode: a copy moved over the original.
        let copy = path + ".copy"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        var times = [saved.st_atim, saved.st_mtim]
        #expect(utimensat(AT_FDCWD, copy, &times, 0) == 0)
        #expect(rename(copy, path) == 0)
        let difference = try #require(try fingerprint(path).difference(from: before))
        #expect(difference.contains("inode"))
    }

    @Test func recordsWithoutInodeOrChangeTimeStillCompare() throws {
        let path = try makeFile(1000)
        let now = try fingerprint(path)
        var old = now
        old.device = nil
        old.inode = nil
        old.changeTime = nil
        let json = String(decoding: try JSONEncoder().encode(old), as: UTF8.self)
        #expect(!json.contains("inode") && !json.contains("changeTime"))
        let decoded = try JSONDecoder().decode(TusFingerprint.self, from: Data(json.utf8))
        #expect(now.difference(from: decoded) == nil)
    }
}
