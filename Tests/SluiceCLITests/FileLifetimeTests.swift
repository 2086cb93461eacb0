import Foundation
import Testing
@testable import Sluice
@testable import SluiceCLI
@testable import SluiceReceiver
import SluiceTestSupport

/// Who closes which descriptor: `FileByteSource` closes once (idempotent, thread-safe, in
/// `deinit` at the latest); `MultipartBody` and `TusSource` own the files they opened.
@Suite(.hangGuard)
struct FileLifetimeTests {
    private func makeFile(_ name: String, bytes: Int = 4096, seed: UInt64 = 1) throws -> (path: String, bytes: [UInt8]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-life-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent(name).path
        let content = try SyntheticByteSource(length: Int64(bytes), seed: seed).bytes(in: 0..<Int64(bytes))
        #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
        return (path, content)
    }

    /// How many of this process's descriptors are open on `path` (immune to other tests'
    /// descriptors, unlike a plain count).
    private func descriptors(on path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path }.count
    }

    @Test func closeTwiceNeverClosesAReusedDescriptor() throws {
        let first = try makeFile("a.bin", seed: 1)
        let second = try makeFile("b.bin", seed: 2)
        let a = try FileByteSource(path: first.path)
        a.close()
        #expect(a.isClosed)
        // The lowest free number: very likely the one `a` just gave back.
        let b = try FileByteSource(path: second.path)
        defer { b.close() }
        a.close()
        a.close()
        #expect(try b.bytes(in: 0..<b.length) == second.bytes)
        #expect(throws: ByteSourceError.system(operation: "read", path: first.path, errno: EBADF)) {
            try a.bytes(in: 0..<1)
        }
        #expect(descriptors(on: first.path) == 0)
    }

    @Test func closeWhileReadsAreInFlightWaitsForThem() async throws {
        let file = try makeFile("c.bin", bytes: 1 << 20, seed: 3)
        let source = try FileByteSource(path: file.path)
        let ready = AsyncStream<Void>.makeStream()
        let readers = (0..<4).map { _ in
            Task {
                await onThread { () -> Int in
                    ready.continuation.yield()
                    var good = 0
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let offset = Int64.random(in: 0..<(source.length - 4096))
                        do {
                            let count = try buffer.withUnsafeMutableBytes { try source.readFully(into: $0, at: offset) }
                            // Never bytes from another file: every completed read is exact.
                            guard count == 4096, buffer[...] == file.bytes[Int(offset)..<Int(offset) + 4096] else { return -1 }
                            good += 1
                        } catch {
                            return good
                        }
                    }
                }
            }
        }
        var iterator = ready.stream.makeAsyncIterator()
        for _ in 0..<4 { _ = await iterator.next() }
        source.close()
        for reader in readers { #expect(await reader.value >= 0) }
        #expect(descriptors(on: file.path) == 0)
    }

    @Test func filesAreClosedWhenTheirLastOwnerGoesAway() throws {
        let file = try makeFile("d.bin", seed: 4)
        for _ in 0..<300 {
            let source = try FileByteSource(path: file.path)
            _ = try source.bytes(in: 0..<10)
            let body = try MultipartBody(parts: [try .file("f", path: file.path), try .field("x", "y")])
            _ = try body.bytes(in: 0..<body.length)
            let tus = try TusSource.open(.file(path: file.path))
            _ = try tus.bytes.bytes(in: 0..<10)
            let opened = try SourceSpecification.file(path: file.path).open()
            _ = try opened.source?.bytes(in: 0..<10)
            // None closed explicitly.
        }
        #expect(descriptors(on: file.path) == 0)
    }

    @Test func ownersCloseWhatTheyOpenedAndOnlyThat() throws {
        let file = try makeFile("e.bin", seed: 5)
        let callers = try FileByteSource(path: file.path)
        defer { callers.close() }
        let body = try MultipartBody(parts: [try .file("own", path: file.path), try .source("theirs", callers)])
        #expect(descriptors(on: file.path) == 2)
        body.close()
        body.close()
        // The body's own file is closed; the caller's source is not.
        #expect(descriptors(on: file.path) == 1)
        #expect(!callers.isClosed)
        #expect(throws: ByteSourceError.self) { try body.bytes(in: 0..<body.length) }
        let tus = try TusSource.open(.file(path: file.path))
        #expect(descriptors(on: file.path) == 2)
        tus.close()
        tus.close()
        #expect(descriptors(on: file.path) == 1)
        let borrowed = TusSource(callers, identity: "x")
        borrowed.close()
        #expect(!callers.isClosed)
    }

    @Test func offsetsAndLengthsOutOfRangeAreTypedErrors() throws {
        let source = SyntheticByteSource(length: 100)
        for bad: Int64 in [101, -1, .max] {
            do {
                _ = try UploadBody.bytes(source, from: bad)
                Issue.record("offset \(bad) accepted")
            } catch {
                // Typed: `bytes(_:from:)` throws only `UploadError`.
                #expect(error.code == .invalidOption)
            }
        }
        #expect(try UploadBody.bytes(source, from: 100).length == .known(0))
        #expect(try UploadBody.bytes(source, from: 0).length == .known(100))
        #expect(throws: ByteSourceError.self) {
            try ConcatenatedByteSource([SyntheticByteSource(length: .max), SyntheticByteSource(length: 1)])
        }
        #expect(try ConcatenatedByteSource([SyntheticByteSource(length: .max - 1), SyntheticByteSource(length: 1)]).length == .max)
        #expect(throws: ByteSourceError.offsetOutOfRange(offset: -1, length: 100)) { try SliceByteSource(source, range: -1..<5) }
        #expect(throws: ByteSourceError.offsetOutOfRange(offset: 101, length: 100)) { try SliceByteSource(source, range: 5..<101) }
        #expect(throws: ByteSourceError.offsetOutOfRange(offset: 101, length: 100)) {
            _ = try source.read(into: UnsafeMutableRawBufferPointer(start: nil, count: 0), at: 101)
        }
    }
}
