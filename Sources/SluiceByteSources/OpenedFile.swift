#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A path opened the way uploads read it: random access when its size is its length,
/// sequential otherwise. Opening never blocks.
///
/// - A regular file: random access, exact length.
/// - A regular file of size 0 that yields bytes (`/proc/cpuinfo`), or any file on /proc, /sys
///   and the like: sequential, length unknown, read to its end. A regular file of size 0 that
///   yields nothing is empty.
/// - A FIFO: opened non-blocking, sequential, length unknown; its first read waits for a writer.
/// - Directories, devices (`/dev/zero`, `/dev/null`), sockets: refused.
public enum OpenedFile: Sendable {
    /// A regular file: a known length, read at any offset, replayable.
    case randomAccess(FileByteSource)
    /// A FIFO or a file whose size says nothing (`/proc`, `/sys`): read once, to its end.
    case sequential(FileStreamSource)

    /// Opens `path`.
    ///
    /// - Throws: `ByteSourceError` for a missing, unreadable or unsupported path.
    public init(path: String) throws {
        let (fd, info) = try FileByteSource.openFile(path)
        let kind = info.st_mode & S_IFMT
        var sequential = kind == S_IFIFO
        if kind == S_IFREG {
            do { sequential = try FileByteSource.lengthIsUnknown(fd, info: info, path: path) } catch {
                _ = systemClose(fd)
                throw error
            }
        }
        if sequential {
            self = .sequential(FileStreamSource(adopting: fd, path: path, isFIFO: kind == S_IFIFO))
        } else {
            self = .randomAccess(try FileByteSource(adopting: fd, info: info, path: path, probed: true))
        }
    }

    /// Closes the descriptor; idempotent (it is also closed when the source goes away).
    public func close() {
        switch self {
        case .randomAccess(let file): file.close()
        case .sequential(let stream): stream.close()
        }
    }
}
