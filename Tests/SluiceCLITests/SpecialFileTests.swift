import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver
import SluiceTestSupport

/// Paths that are not plain regular files: /proc files (size 0, with content), empty files,
/// FIFOs, devices. None may hang, and none may become a silently empty body.
@Suite(.hangGuard)
struct SpecialFileTests {
    /// What `path` holds, read by Foundation (not by Sluice).
    private func contents(_ path: String) throws -> [UInt8] {
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        return [UInt8](try handle.readToEnd() ?? Data())
    }

    @Test func procFileIsReadToItsEndAsASequentialSource() throws {
        // /proc/version does not change while the machine runs.
        let path = "/proc/version"
        let expected = try contents(path)
        #expect(!expected.isEmpty)
        #expect(throws: ByteSourceError.unknownLength(path: path)) { try FileByteSource(path: path) }
        let opened = try SourceSpecification.file(path: path).open()
        defer { opened.close() }
        #expect(opened.source == nil)
        #expect(opened.body.length == .unknown)
        #expect(opened.body.isReplayable == false)
        let stream = try #require(opened.sequential)
        let (hex, count) = try Digest.sha256(of: stream, chunkSize: 7)
        #expect(count == Int64(expected.count))
        #expect(hex == (try Digest.sha256(of: MemoryByteSource(expected))))
    }

    @Test func sysfsAttributeIsReadToItsEndWhateverItsReportedSize() throws {
        // The kernel reports 4096 for every sysfs attribute; this one holds "0-1\n" or so.
        let path = "/sys/devices/system/cpu/online"
        let expected = try contents(path)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(Int(info.st_size) != expected.count)
        #expect(throws: ByteSourceError.unknownLength(path: path)) { try FileByteSource(path: path) }
        let opened = try SourceSpecification.file(path: path).open()
        defer { opened.close() }
        let stream = try #require(opened.sequential)
        let (hex, count) = try Digest.sha256(of: stream)
        #expect(count == Int64(expected.count))
        #expect(hex == (try Digest.sha256(of: MemoryByteSource(expected))))
    }

    @Test func emptyRegularFileIsAnEmptyRandomAccessSource() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-empty-\(UUID())").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try FileByteSource(path: path)
        #expect(file.length == 0)
        file.close()
        let opened = try SourceSpecification.file(path: path).open()
        defer { opened.close() }
        #expect(opened.source?.length == 0)
        #expect(opened.body.length == .known(0))
    }

    @Test func procFileIsAFormPartAndATusSourceWithItsBytes() throws {
        let path = "/proc/version"
        let expected = try contents(path)
        let body = try MultipartBody(parts: [try .file("f", path: path)], boundary: "b0undary")
        defer { body.close() }
        let bytes = try body.bytes(in: 0..<body.length)
        #expect(bytes.count > expected.count)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(String(decoding: expected, as: UTF8.self)))
        let tus = try TusSource.open(.file(path: path))
        defer { tus.close() }
        #expect(try tus.bytes.bytes(in: 0..<tus.bytes.length) == expected)
    }

    @Test func devicesDirectoriesAndSocketsAreRefusedByName() throws {
        #expect(throws: ByteSourceError.notRegularFile(path: "/dev/zero", kind: "character device")) {
            try SourceSpecification.file(path: "/dev/zero").open()
        }
        #expect(throws: ByteSourceError.notRegularFile(path: "/dev/null", kind: "character device")) {
            try SourceSpecification.file(path: "/dev/null").open()
        }
        #expect(throws: ByteSourceError.isDirectory(path: "/tmp")) { try SourceSpecification.file(path: "/tmp").open() }
        // A Unix socket: open() fails with ENXIO.
        let path = "/tmp/sluice-sock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        #expect(throws: ByteSourceError.self) { try SourceSpecification.file(path: path).open() }
    }

    private func makeFIFO() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-fifo-\(UUID())").path
        #expect(mkfifo(path, 0o600) == 0)
        return path
    }

    @Test func fifoOpensWithoutAWriterAndReadsWhatTheWriterSends() async throws {
        let path = try makeFIFO()
        defer { unlink(path) }
        // Neither open may wait for a writer (before the fix both hung in open()).
        #expect(throws: ByteSourceError.notRegularFile(path: path, kind: "FIFO")) { try FileByteSource(path: path) }
        let opened = try SourceSpecification.file(path: path).open()
        defer { opened.close() }
        #expect(opened.body.length == .unknown)
        let stream = try #require(opened.sequential)
        let payload = try SyntheticByteSource(length: 300_001, seed: 8).bytes(in: 0..<300_001)
        // The writer starts only after the reader was opened: the first read waits for it.
        let writer = Thread {
            let fd = open(path, O_WRONLY)
            payload.withUnsafeBytes {
                var done = 0; while done < $0.count { done += write(fd, $0.baseAddress! + done, $0.count - done) }
            }
            close(fd)
        }
        writer.start()
        let result = await onThread { Result { try Digest.sha256(of: stream, chunkSize: 4096) } }
        let (hex, count) = try result.get()
        #expect(count == 300_001)
        #expect(hex == (try Digest.sha256(of: MemoryByteSource(payload))))
    }

    @Test func fifoWaitingForAWriterEndsWhenClosed() async throws {
        let path = try makeFIFO()
        defer { unlink(path) }
        let stream = try FileStreamSource(path: path)
        let started = AsyncStream<Void>.makeStream()
        let reader = Task {
            await onThread {
                started.continuation.yield()
                var byte: UInt8 = 0
                return Result { try withUnsafeMutableBytes(of: &byte) { try stream.read(into: $0) } }
            }
        }
        var iterator = started.stream.makeAsyncIterator()
        _ = await iterator.next()
        stream.close()
        let result = await reader.value
        #expect(throws: ByteSourceError.system(operation: "read", path: path, errno: EBADF)) { try result.get() }
        stream.close()  // idempotent
    }
}
