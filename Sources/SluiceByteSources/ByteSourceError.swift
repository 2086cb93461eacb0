/// Why a byte source could not deliver its bytes.
public enum ByteSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The path does not exist.
    case notFound(path: String)
    /// The path exists but could not be opened for reading.
    case permissionDenied(path: String)
    /// The path names a directory.
    case isDirectory(path: String)
    /// The path is not a regular file (`kind`: "FIFO", "character device", "socket", ...),
    /// so its length is unknown.
    case notRegularFile(path: String, kind: String)
    /// The file's reported size is not its length (size 0 but bytes: a `/proc` file; any file
    /// on /sys): its length is known only once it has been read to its end.
    case unknownLength(path: String)
    /// A system call failed.
    case system(operation: String, path: String, errno: Int32)
    /// The source holds fewer bytes than it promised.
    case endedEarly(offset: Int64, expected: Int64)
    /// A sequential source gave more bytes than the length it declared.
    case longerThanDeclared(expected: Int64)
    /// An offset outside `0 ... length` was asked for.
    case offsetOutOfRange(offset: Int64, length: Int64)
    /// A size, range or source description could not be parsed.
    case invalidSpecification(String)

    /// The path the error names, when it names one (its description starts with it).
    public var path: String? {
        switch self {
        case .notFound(let path), .permissionDenied(let path), .isDirectory(let path), .notRegularFile(let path, _),
            .unknownLength(let path), .system(_, let path, _):
            return path
        case .endedEarly, .longerThanDeclared, .offsetOutOfRange, .invalidSpecification: return nil
        }
    }

    public var description: String {
        switch self {
        case .notFound(let path): return "\(path): no such file"
        case .permissionDenied(let path): return "\(path): permission denied"
        case .isDirectory(let path): return "\(path): is a directory"
        case .notRegularFile(let path, let kind): return "\(path): is a \(kind), not a regular file"
        case .unknownLength(let path):
            return "\(path): its reported size is not its length (a /proc or /sys file), so its length is not known in advance"
        case .system(let operation, let path, let code):
            return "\(path): \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .endedEarly(let offset, let expected):
            return "source ended at byte \(offset) of \(expected)"
        case .longerThanDeclared(let expected):
            return "the source holds more than its declared \(expected) bytes"
        case .offsetOutOfRange(let offset, let length):
            return "offset \(offset) is outside 0...\(length)"
        case .invalidSpecification(let text): return text
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
