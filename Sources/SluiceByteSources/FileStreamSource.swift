#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import SluicePrimitives

/// A path read once, front to back, whose length is learned only at its end: a FIFO
/// (`mkfifo`), or a file whose reported size is not its length (`/proc/cpuinfo`, a /sys attribute).
///
/// A FIFO is opened non-blocking, so opening it never waits. The first `read(into:)` waits
/// for a writer, as `cat FIFO` does, but in slices of 100 ms: `close()` from any thread
/// ends the wait (and any later wait for bytes) within one slice with `EBADF`. A writer that
/// connects and closes without writing gives an empty body, exactly what it sent.
///
/// Ownership: the instance owns its descriptor. `close()` is idempotent and thread-safe; the
/// descriptor is closed when no read is in flight, and by `deinit` at the latest.
public final class FileStreamSource: SequentialByteSource {
    /// The path the stream was opened at.
    public let path: String
    public var length: BodyLength { .unknown }
    /// Whether the path is a FIFO (else a regular file of unknown length).
    public let isFIFO: Bool
    private let descriptor: OwnedDescriptor
    /// A FIFO's writer has shown up (data or hang-up seen): from then on a read of 0 is the end.
    private let writerSeen = Atomic<Bool>(false)

    /// How long one wait for a FIFO's writer or bytes lasts before `close()` is checked.
    package static let pollSlice: Int32 = 100

    /// Opens `path`, which must be a FIFO or a regular file.
    ///
    /// - Throws: `ByteSourceError` as `FileByteSource.init(path:)`, except that a FIFO and a
    ///   file of size 0 with content are accepted.
    public convenience init(path: String) throws {
        let (fd, info) = try FileByteSource.openFile(path)
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFIFO || kind == S_IFREG else {
            _ = systemClose(fd)
            throw FileByteSource.notRegular(path, mode: info.st_mode)
        }
        self.init(adopting: fd, path: path, isFIFO: kind == S_IFIFO)
    }

    /// Takes over `fd`, open on `path` (non-blocking for a FIFO).
    package init(adopting fd: Int32, path: String, isFIFO: Bool) {
        self.descriptor = OwnedDescriptor(fd, path: path)
        self.path = path
        self.isFIFO = isFIFO
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if buffer.isEmpty { return 0 }
        return try descriptor.use { fd in try read(fd, into: buffer) }
    }

    private func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        do {
            guard isFIFO else { return try Syscall.read(fd, buffer) }
            while true {
                if writerSeen.load(ordering: .relaxed) {
                    do { return try Syscall.read(fd, buffer) } catch  where error.code == EAGAIN || error.code == EWOULDBLOCK {
                        // The writer is there but has not written yet: wait below.
                    }
                }
                try waitForFIFO(fd)
            }
        } catch {
            throw ByteSourceError.system(operation: "read", path: path, errno: error.code)
        }
    }

    /// Waits (in slices, checking `close()`) until the FIFO has bytes or its writer hung up.
    private func waitForFIFO(_ fd: Int32) throws(Errno) {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            if descriptor.isClosed { throw Errno(code: EBADF) }
            let ready = poll(&entry, 1, Self.pollSlice)
            if ready < 0 {
                if errno == EINTR { continue }
                throw Errno(code: errno)
            }
            if ready > 0 {
                writerSeen.store(true, ordering: .relaxed)
                return
            }
        }
    }

    /// Closes the descriptor once no read is in flight; a waiting read returns within 100 ms.
    public func close() { descriptor.close() }

    /// The most `contents(ofUnknownLength:)` reads.
    public static let snapshotLimit = 16 << 20

    /// Reads a regular file whose size is reported as 0 but that has content (`/proc/cpuinfo`)
    /// to its end, into memory, for callers that need an exact length up front (a form part,
    /// a tus upload).
    ///
    /// - Throws: `ByteSourceError.unknownLength` when it holds more than `limit` bytes or is
    ///   not a regular file; the read's error.
    public static func contents(ofUnknownLength path: String, limit: Int = snapshotLimit) throws -> [UInt8] {
        let stream = try FileStreamSource(path: path)
        defer { stream.close() }
        guard !stream.isFIFO else { throw ByteSourceError.unknownLength(path: path) }
        var bytes: [UInt8] = []
        var block = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = try block.withUnsafeMutableBytes { try stream.read(into: $0) }
            if count == 0 { return bytes }
            bytes += block[..<count]
            guard bytes.count <= limit else { throw ByteSourceError.unknownLength(path: path) }
        }
    }
}
