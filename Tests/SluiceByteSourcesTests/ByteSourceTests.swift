import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

@Suite struct ByteSourceTests {
    @Test func syntheticMatchesTheDesignCheckBytes() throws {
        let source = SyntheticByteSource(length: 16)
        #expect(try source.bytes(in: 0..<16) == [0xaf, 0xcd, 0x1d, 0x7b, 0x39, 0xa8, 0x20, 0xe2, 0xf4, 0x65, 0xb9, 0xa1, 0x6a, 0x9e, 0x78, 0x6e])
    }

    @Test func syntheticRandomAccessEqualsSequential() throws {
        let seed = testSeed("syntheticRandomAccess")
        var rng = SeededGenerator(seed: seed)
        let source = SyntheticByteSource(length: 10_007, seed: 42)
        let whole = try source.bytes(in: 0..<source.length)
        for _ in 0..<500 {
            let start = Int64.random(in: 0...source.length, using: &rng)
            let end = Int64.random(in: start...source.length, using: &rng)
            #expect(try source.bytes(in: start..<end) == Array(whole[Int(start)..<Int(end)]), "seed \(seed)")
        }
    }

    /// Every read gives the words one at a time, little-endian, whatever its offset and length
    /// (the read writes four words a turn, then one, then the bytes left).
    @Test func syntheticBytesAreItsWordsInOrderAtAnyOffset() throws {
        let source = SyntheticByteSource(length: 4_099, seed: 9)
        var expected: [UInt8] = []
        for k in 0..<UInt64(513) { withUnsafeBytes(of: source.word(k).littleEndian) { expected += $0 } }
        for (start, end) in [(0, 4_099), (3, 4_099), (5, 37), (8, 72), (1, 33), (0, 31), (4_000, 4_099), (24, 56)] {
            #expect(try source.bytes(in: Int64(start)..<Int64(end)) == Array(expected[start..<end]), "\(start)..<\(end)")
        }
    }

    /// `BodyLength` is a struct with static members: compared, hashed and read through `value`.
    @Test func bodyLengthIsAValueWithStaticMembers() {
        #expect(BodyLength.known(5).value == 5)
        #expect(BodyLength.known(0) == .known(0))
        #expect(BodyLength.known(0) != .unknown)
        #expect(BodyLength.unknown.value == nil)
        #expect(Set<BodyLength>([.known(1), .known(1), .unknown, .unknown]).count == 2)
        #expect("\(BodyLength.known(42))" == "42" && "\(BodyLength.unknown)" == "unknown")
        #expect(UploadBody.bytes(MemoryByteSource([1, 2, 3])).length == .known(3))
    }

    @Test func fileSourceReadsWithPreadAndReportsClearErrors() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("f.bin").path
        let expected = try SyntheticByteSource(length: 100_003, seed: 5).bytes(in: 0..<100_003)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(expected)))
        let file = try FileByteSource(path: path)
        defer { file.close() }
        #expect(file.length == 100_003)
        #expect(try file.bytes(in: 0..<file.length) == expected)
        #expect(try file.bytes(in: 99_000..<100_003) == Array(expected[99_000...]))
        #expect(throws: ByteSourceError.notFound(path: directory.path + "/missing")) { try FileByteSource(path: directory.path + "/missing") }
        #expect(throws: ByteSourceError.isDirectory(path: directory.path)) { try FileByteSource(path: directory.path) }
        #expect(throws: ByteSourceError.notRegularFile(path: "/dev/null", kind: "character device")) { try FileByteSource(path: "/dev/null") }
    }

    @Test func fileSourceHandlesOffsetsPastFourGiB() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sparse.bin").path
        // A sparse 5 GiB file with marker bytes past 4 GiB.
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        #expect(fd >= 0)
        let marker: [UInt8] = [1, 2, 3, 4, 5]
        let offset: Int64 = (5 << 30) - 5
        _ = marker.withUnsafeBytes { pwrite(fd, $0.baseAddress, 5, off_t(offset)) }
        close(fd)
        let file = try FileByteSource(path: path)
        defer { file.close() }
        #expect(file.length == 5 << 30)
        #expect(try file.bytes(in: offset..<(offset + 5)) == marker)
        #expect(try file.bytes(in: (4 << 30)..<((4 << 30) + 3)) == [0, 0, 0])
    }

    @Test func concatenationAndSlicesReadAcrossBoundaries() throws {
        let seed = testSeed("concatenation")
        var rng = SeededGenerator(seed: seed)
        let parts: [any ByteSource] = [
            MemoryByteSource("hello "), SyntheticByteSource(length: 1000, seed: 1), MemoryByteSource([]),
            MemoryByteSource("world"), SyntheticByteSource(length: 71, seed: 2),
        ]
        var expected: [UInt8] = []
        for part in parts { expected += try part.bytes(in: 0..<part.length) }
        let joined = try ConcatenatedByteSource(parts)
        #expect(joined.length == Int64(expected.count))
        #expect(try joined.bytes(in: 0..<joined.length) == expected)
        let short = ShortReadSource(base: joined, chunk: 7)
        #expect(try short.bytes(in: 0..<short.length) == expected)
        for _ in 0..<200 {
            let start = Int64.random(in: 0...joined.length, using: &rng)
            let end = Int64.random(in: start...joined.length, using: &rng)
            let slice = try SliceByteSource(joined, range: start..<end)
            #expect(try slice.bytes(in: 0..<slice.length) == Array(expected[Int(start)..<Int(end)]), "seed \(seed)")
        }
        #expect(throws: ByteSourceError.self) { try SliceByteSource(joined, range: 0..<(joined.length + 1)) }
    }

    @Test func sequentialPipeSourceReadsToTheEnd() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let payload = try SyntheticByteSource(length: 50_000, seed: 3).bytes(in: 0..<50_000)
        let writeEnd = fds[1]
        let writer = Thread {
            payload.withUnsafeBytes {
                var done = 0; while done < $0.count { done += write(writeEnd, $0.baseAddress! + done, $0.count - done) }
            }
            close(writeEnd)
        }
        writer.start()
        let stream = FileDescriptorStream(fd: fds[0], name: "pipe")
        let (hex, count) = try Digest.sha256(of: stream, chunkSize: 4093)
        close(fds[0])
        #expect(count == 50_000)
        #expect(hex == (try Digest.sha256(of: MemoryByteSource(payload))))
        #expect(UploadBody.sequential(stream).isReplayable == false)
        #expect(UploadBody.bytes(SyntheticByteSource(length: 1)).isReplayable)
    }
}
