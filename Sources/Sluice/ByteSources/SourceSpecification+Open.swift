#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SourceSpecification {
    /// An opened SOURCE: its upload body, and how to release it.
    public struct Opened: Sendable {
        public let body: UploadBody
        /// The random-access source, when there is one (regular files and synthetic).
        public let source: (any ByteSource)?
        /// The sequential source, when there is one: stdin, a FIFO, a file whose size is
        /// reported as 0 but that has content (`/proc/cpuinfo`).
        public let sequential: (any SequentialByteSource)?
        /// Releases file descriptors (idempotent; they are released when the last copy goes
        /// away in any case). Call after the upload.
        public let close: @Sendable () -> Void
    }

    /// Opens the source for reading. Never blocks: a FIFO is opened non-blocking and read as a
    /// sequential source whose first read waits for a writer.
    ///
    /// - A regular file: random access, exact length.
    /// - A regular file of size 0 that yields bytes (`/proc`), or any file on /proc, /sys and
    ///   the like: sequential, length unknown, read to its end. A regular file of size 0 that
    ///   yields nothing is empty.
    /// - A FIFO: sequential, length unknown.
    /// - Directories, devices (`/dev/zero`, `/dev/null`), sockets: refused.
    ///
    /// - Throws: `ByteSourceError` for a missing, unreadable or unsupported path.
    public func open() throws -> Opened {
        switch self {
        case .file(let path):
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
                let stream = FileStreamSource(adopting: fd, path: path, isFIFO: kind == S_IFIFO)
                return Opened(body: .sequential(stream), source: nil, sequential: stream, close: { stream.close() })
            }
            let file = try FileByteSource(adopting: fd, info: info, path: path, probed: true)
            return Opened(body: .bytes(file), source: file, sequential: nil, close: { file.close() })
        case .standardInput:
            let stdin = FileDescriptorStream.standardInput
            return Opened(body: .sequential(stdin), source: nil, sequential: stdin, close: {})
        case .synthetic(let length, let seed):
            let source = SyntheticByteSource(length: length, seed: seed)
            return Opened(body: .bytes(source), source: source, sequential: nil, close: {})
        }
    }
}
