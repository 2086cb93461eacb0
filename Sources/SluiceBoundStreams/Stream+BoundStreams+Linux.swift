#if !canImport(Darwin)
import Foundation

extension Stream {
    /// Apple's `Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)`, which
    /// swift-corelibs-foundation lacks: a bound pair whose output writes are read from its
    /// input, through a buffer of `bufferSize` bytes (a `BoundStreamPair`).
    ///
    /// Compiled only where Foundation has no such method, so code written for Apple platforms
    /// (`var input: InputStream?; Stream.getBoundStreams(withBufferSize: n, inputStream: &input,
    /// outputStream: &output)`) compiles and runs unchanged. The input stream is meant for
    /// `URLRequest.httpBodyStream`; its `read` waits for the writer (see `BoundStreamPair`).
    ///
    /// - Parameter bufferSize: The buffer's size in bytes; less than 1 counts as 1.
    public static func getBoundStreams(
        withBufferSize bufferSize: Int,
        inputStream: UnsafeMutablePointer<InputStream?>?,
        outputStream: UnsafeMutablePointer<OutputStream?>?
    ) {
        let pair = BoundStreamPair(capacity: max(1, bufferSize))
        inputStream?.pointee = pair.inputStream
        outputStream?.pointee = pair.outputStream
    }
}
#endif
