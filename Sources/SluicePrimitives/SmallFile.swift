import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a small file whole — a configuration file, a resume record — up to a cap: real ones
/// are a few KiB, so one that says it is larger (a 100 MB line, a symlink to `/dev/zero`)
/// is refused before it is read, and one that grows while it is read stops at the cap.
package enum SmallFile {
    /// Why a small file could not be read.
    package enum Failure: Error, Sendable, CustomStringConvertible {
        /// Larger than `limit` bytes.
        case tooLarge(limit: Int)
        /// Not a regular file (a device, a FIFO, a directory, a socket): named.
        case notRegularFile(String)
        /// A system call failed with this `errno`.
        case system(Int32)

        package var description: String {
            switch self {
            case .tooLarge(let limit): return "it is larger than \(limit >> 10) KiB, more than such a file ever holds"
            case .notRegularFile(let kind): return "it is not a regular file (\(kind))"
            case .system(let code): return FileSystemReason.text(errno: code)
            }
        }
    }

    /// The bytes of `path`, or nil when there is no such file.
    ///
    /// - Parameter limit: The most bytes accepted.
    /// - Throws: `SmallFile.Failure`.
    package static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8]? {
        // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw .system(errno)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notRegularFile(kind(of: info.st_mode)) }
        guard info.st_size <= limit else { throw .tooLarge(limit: limit) }
        var bytes: [UInt8] = []
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 1)
        defer { block.deallocate() }
        while true {
            let got: Int
            do { got = try Syscall.read(descriptor, block) } catch { throw .system(error.code) }
            if got == 0 { return bytes }
            // A file that grows while it is read stops at the cap too.
            guard bytes.count + got <= limit else { throw .tooLarge(limit: limit) }
            bytes += block.prefix(got)
        }
    }

    /// `character device`, `FIFO`, … for a `st_mode`.
    package static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}
