#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file read with `pread`, any size (files over 4 GiB included).
///
/// The file is opened once; its length is taken at open. A file that shrinks while it
/// is read makes `read(into:at:)` return 0 before `length`, which every reader in Sluice
/// turns into `ByteSourceError.endedEarly`.
///
/// - Important: `close()` must be called exactly once when no read is in flight.
public final class FileByteSource: ByteSource {
    public let path: String
    public let length: Int64
    private let fd: Int32

    /// Opens `path` for reading.
    ///
    /// - Throws: `ByteSourceError.notFound`, `.permissionDenied`, `.isDirectory`,
    ///   `.notRegularFile`, or `.system` for other failures.
    public init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw ByteSourceError.notFound(path: path)
            case EACCES, EPERM: throw ByteSourceError.permissionDenied(path: path)
            default: throw ByteSourceError.system(operation: "open", path: path, errno: code)
            }
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let code = errno
            _ = Glibc_close(fd)
            throw ByteSourceError.system(operation: "fstat", path: path, errno: code)
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG else {
            _ = Glibc_close(fd)
            if kind == S_IFDIR { throw ByteSourceError.isDirectory(path: path) }
            throw ByteSourceError.notRegularFile(path: path)
        }
        self.fd = fd
        self.length = Int64(info.st_size)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        let count = min(Int64(buffer.count), length - offset)
        if count == 0 { return 0 }
        do {
            return try Syscall.pread(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(count)]), offset)
        } catch {
            throw ByteSourceError.system(operation: "read", path: path, errno: error.code)
        }
    }

    /// Closes the file descriptor.
    ///
    /// - Important: Call exactly once, after the last read.
    public func close() {
        _ = Glibc_close(fd)
    }
}

@inline(__always) private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }
