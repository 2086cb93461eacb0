import Foundation
import SluiceByteSources

/// A caller's `InputStream` as a sequential byte source, so `InputStreamSource` can pump it
/// through a bound pair on Sluice's own queue and count its bytes.
///
/// Opens the stream at the first read; a read of -1 becomes `streamError` (or
/// `ByteSourceError.streamFailed`), 0 is the end. A read that blocks blocks only the pumping
/// queue: the request reads the pair, which a cancel or failure wakes at once.
///
/// - Important: Used from one serial queue only (the pump's), including `close()`.
package final class InputStreamByteSource: SequentialByteSource, @unchecked Sendable {
    // @unchecked: `stream` and `opened` are touched only on the pumping queue, one call at a time.
    package let length: BodyLength
    private let stream: InputStream
    private var opened = false
    private var closed = false

    package init(_ stream: InputStream, length: BodyLength) {
        self.stream = stream
        self.length = length
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !closed, let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        if !opened {
            opened = true
            stream.open()
        }
        let count = stream.read(base.assumingMemoryBound(to: UInt8.self), maxLength: buffer.count)
        if count < 0 {
            throw stream.streamError ?? StreamFailed()
        }
        return count
    }

    /// Closes the caller's stream once; later reads return 0.
    package func close() {
        guard !closed else { return }
        closed = true
        if opened { stream.close() }
    }

    /// The caller's stream returned -1 without an error of its own.
    package struct StreamFailed: Error, CustomStringConvertible {
        package var description: String { "the body stream failed without an error" }
    }
}
