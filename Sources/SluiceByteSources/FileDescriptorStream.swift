#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SluicePrimitives

/// Sequential bytes from a file descriptor: stdin, a pipe, a socket.
///
/// Its length is unknown unless given, and it cannot be replayed. The descriptor is
/// not closed by this type.
public struct FileDescriptorStream: SequentialByteSource {
    /// The descriptor read from; the caller owns it and closes it.
    public let fd: Int32
    public let length: BodyLength
    private let name: String

    /// A stream of what `fd` yields, read until its end.
    ///
    /// - Parameters:
    ///   - fd: An open descriptor to read from.
    ///   - length: The total when known in advance.
    ///   - name: How errors name it, e.g. `"stdin"`.
    public init(fd: Int32, length: BodyLength = .unknown, name: String = "stdin") {
        self.fd = fd
        self.length = length
        self.name = name
    }

    /// Standard input.
    public static var standardInput: FileDescriptorStream { FileDescriptorStream(fd: 0) }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(ByteSourceError) -> Int {
        do {
            return try Syscall.read(fd, buffer)
        } catch {
            throw ByteSourceError.system(operation: "read", path: name, errno: error.code)
        }
    }
}
