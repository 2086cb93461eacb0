import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `SmallFile.read` (configuration files, resume records) and `FileSystemReason`: a bound on
/// what is read, and file-system errors in a few words of Sluice's.
struct SmallFileTests {
    func temporaryPath() -> String { NSTemporaryDirectory() + "sluice-small-\(UUID().uuidString.prefix(8))" }

    @Test func readsUpToTheLimitAndRefusesMore() throws {
        let path = temporaryPath()
        defer { unlink(path) }
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: path))
        #expect(try SmallFile.read(path, limit: 1000) == [UInt8](repeating: 7, count: 1000))
        #expect(throws: SmallFile.Failure.self) { try SmallFile.read(path, limit: 999) }
        #expect(try SmallFile.read(path + "-missing", limit: 10) == nil)
    }

    @Test func devicesAndFIFOsAreRefusedWithoutReadingOrWaiting() throws {
        let fifo = temporaryPath()
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        for (path, kind) in [("/dev/zero", "a character device"), (fifo, "a FIFO"), ("/tmp", "a directory")] {
            do {
                _ = try SmallFile.read(path, limit: 1 << 20)
                Issue.record("\(path) was read")
            } catch {
                #expect(error.description == "it is not a regular file (\(kind))")
            }
        }
    }

    @Test func foundationErrorsBecomeAFewWords() throws {
        let file = temporaryPath()
        defer { unlink(file) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        for (directory, words) in [(file, "a part of the path exists and is not a directory"), (file + "/below", "a part of the path exists and is not a directory")] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                Issue.record("created \(directory)")
            } catch {
                #expect(FileSystemReason.text(for: error) == words)
            }
        }
        #expect(FileSystemReason.text(for: POSIXError(.EROFS)) == "read-only file system")
        #expect(FileSystemReason.text(for: CocoaError(.fileWriteNoPermission)) == "permission denied")
    }
}
