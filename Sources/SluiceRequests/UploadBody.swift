import Foundation
import SluiceByteSources

/// What an upload sends: where the bytes come from, how many, and whether they can be
/// sent again from byte 0 (a redirect, an auth challenge, a retry).
public struct UploadBody: Sendable {
    package enum Storage: Sendable {
        case random(any ByteSource, startOffset: Int64)
        case sequential(any SequentialByteSource)
        case stream(length: BodyLength, make: @Sendable () -> InputStream)
    }

    package let storage: Storage

    /// A random-access source: replayable, length known.
    public static func bytes(_ source: any ByteSource) -> UploadBody {
        UploadBody(storage: .random(source, startOffset: 0))
    }

    /// A random-access source sent from `offset` on (a resumed upload): replayable, length known.
    ///
    /// - Parameters:
    ///   - source: The bytes.
    ///   - offset: The first byte sent, `0 ... source.length`.
    /// - Throws: `UploadError` with code `.invalidOption` when `offset` is outside `0 ... source.length`.
    public static func bytes(_ source: any ByteSource, from offset: Int64) throws(UploadError) -> UploadBody {
        guard offset >= 0, offset <= source.length else {
            throw UploadError(.invalidOption, "start offset \(offset) is outside the source's 0...\(source.length) bytes")
        }
        return UploadBody(storage: .random(source, startOffset: offset))
    }

    /// A sequential source (stdin, a pipe, a producer): sent once, never replayed.
    public static func sequential(_ source: any SequentialByteSource) -> UploadBody {
        UploadBody(storage: .sequential(source))
    }

    /// An `AsyncSequence` of byte chunks (`[UInt8]`, `ArraySlice<UInt8>`, `Data`, any
    /// collection of bytes), as AsyncHTTPClient's `HTTPClientRequest.Body.stream(_:length:)`
    /// takes a sequence of buffers: sent once, never replayed.
    ///
    /// The sequence is iterated once, by a task of Sluice's own that starts when the transport
    /// asks for the first byte, and only as fast as the connection takes the bytes: the next
    /// chunk is asked for when the previous one is used up and the transport has room. Memory:
    /// one chunk plus `UploadOptions.bufferSize`, whatever the body's size. Cancelling the
    /// upload cancels the iterating task.
    ///
    /// ```swift
    /// let chunks = AsyncStream<[UInt8]> { continuation in ... }
    /// try await uploader.upload(request, body: .stream(chunks, length: .known(total)))
    /// ```
    ///
    /// - Parameters:
    ///   - sequence: The chunks, in order; an empty chunk is skipped.
    ///   - length: Their total when known (sent as `Content-Length`): a sequence that ends
    ///     before it, or holds more, fails the upload with `.sourceFailed`, never a short
    ///     body. `.unknown` sends the body chunked.
    /// - Important: The body can be sent once: a redirect or an auth challenge that needs it
    ///   again fails with `.notReplayable`.
    public static func stream<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks, length: BodyLength) -> UploadBody
    where Chunks.Element: Collection<UInt8> {
        UploadBody(storage: .sequential(AsyncSequenceSource(sequence, length: length)))
    }

    /// An `InputStream` made on demand: sent once, never replayed.
    ///
    /// - Parameters:
    ///   - length: The stream's length when known.
    ///   - make: Called once, on the transport's thread; returns an unopened stream.
    public static func stream(length: BodyLength, _ make: @escaping @Sendable () -> InputStream) -> UploadBody {
        UploadBody(storage: .stream(length: length, make: make))
    }

    /// The number of bytes the body sends.
    public var length: BodyLength {
        switch storage {
        case .random(let source, let offset): return .known(source.length - offset)
        case .sequential(let source): return source.length
        case .stream(let length, _): return length
        }
    }

    /// Whether the body can be sent again from its first byte.
    public var isReplayable: Bool {
        if case .random = storage { return true }
        return false
    }
}
