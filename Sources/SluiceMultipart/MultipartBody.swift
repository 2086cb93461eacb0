import SluiceByteSources

/// A multipart/form-data body (RFC 7578) that streams any number of parts of any size
/// with an exact length known before a byte is read.
///
/// The body is a random-access `ByteSource`: a concatenation of small in-memory header
/// blocks and the parts' own sources. Nothing is spooled or copied: a 100 GiB file part
/// costs the same memory as a 1 KiB one, and the body can be replayed (redirect, auth
/// challenge) or resumed from any offset with identical bytes, because its boundary is
/// drawn once, from the system's secure random source, when the body is built.
///
/// ```swift
/// let body = try MultipartBody(parts: [
///     .field("title", "holiday"),
///     .file("photo", path: "/data/IMG_0001.jpg"),
/// ])
/// defer { body.close() }
/// let request = try UploadRequest(url: url, headers: [HTTPHeader(name: "Content-Type", value: body.contentType)])
/// let response = try await Uploader().upload(request, body: .bytes(body))
/// ```
///
/// Encoding of names and filenames follows the WHATWG form encoding (what browsers and
/// curl send): inside the quoted string `"` becomes `%22`, CR `%0D` and LF `%0A`, so no
/// name can end its header or start another; other bytes, non-ASCII included, are sent
/// as raw UTF-8, which python-multipart, Werkzeug and Python's `email` parser read intact.
/// `filename*=` (RFC 5987) is never sent: RFC 7578 section 4.2 forbids it in form data.
/// See `MultipartBody+Encoding.swift` for what each parser makes of the escapes.
///
/// Ownership of files: the body owns the `FileByteSource` of every `.file` part it opened
/// (and nothing else: sources passed in with `.source` belong to the caller). `close()`
/// closes them; it is idempotent, and a read after it fails with `EBADF` rather than reading
/// a descriptor number that was handed out again. A body that is never closed releases its
/// descriptors when its last copy goes away (`FileByteSource` closes in `deinit`). A `.file`
/// part whose size is reported as 0 but that has content (`/proc/cpuinfo`) is read into
/// memory when the body is built, up to `FileStreamSource.snapshotLimit`, and refused above.
///
/// - Important: Call `close()` after the last read, from any thread. Reads are thread-safe,
///   as for every `ByteSource`.
public struct MultipartBody: ByteSource {
    /// The boundary between parts: `----SluiceBoundary` and 32 random letters and digits.
    public let boundary: String
    /// The parts, in the order they are sent.
    public let parts: [MultipartPart]
    /// The exact number of bytes the body holds.
    public let length: Int64
    private let layout: ConcatenatedByteSource
    private let openedFiles: [FileByteSource]

    /// The value for the request's `Content-Type` header.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Builds a body with a fresh random boundary, opening every file part.
    ///
    /// - Parameter parts: The parts, in order; an empty list gives a body with only the
    ///   closing delimiter.
    /// - Throws: `MultipartError.cannotOpen` when a file part is missing, a directory,
    ///   unreadable or not a regular file (files opened before it are closed again).
    public init(parts: [MultipartPart]) throws {
        try self.init(parts: parts, boundary: MultipartBody.makeBoundary())
    }

    /// Builds a body with a given boundary; for tests that check exact bytes.
    package init(parts: [MultipartPart], boundary: String) throws {
        precondition(MultipartBody.isValidBoundary(boundary), "invalid multipart boundary \(boundary.debugDescription)")
        var opened: [FileByteSource] = []
        var pieces: [any ByteSource] = []
        pieces.reserveCapacity(parts.count * 2 + 1)
        do {
            for (index, part) in parts.enumerated() {
                pieces.append(MemoryByteSource(MultipartBody.headerBlock(for: part, boundary: boundary, isFirst: index == 0)))
                switch part.content {
                case .bytes(let bytes):
                    pieces.append(MemoryByteSource(bytes))
                case .source(let source):
                    pieces.append(source)
                case .file(let path):
                    do {
                        let file = try FileByteSource(path: path)
                        opened.append(file)
                        pieces.append(file)
                    } catch ByteSourceError.unknownLength {
                        // A /proc file: its bytes, read now, are the part (one snapshot, so a
                        // replay sends the same bytes).
                        do {
                            pieces.append(MemoryByteSource(try FileStreamSource.contents(ofUnknownLength: path)))
                        } catch let error as ByteSourceError {
                            throw MultipartError.cannotOpen(path: path, cause: error)
                        }
                    } catch let error as ByteSourceError {
                        throw MultipartError.cannotOpen(path: path, cause: error)
                    }
                }
            }
        } catch {
            for file in opened { file.close() }
            throw error
        }
        pieces.append(MemoryByteSource(MultipartBody.closingDelimiter(boundary: boundary, hasParts: !parts.isEmpty)))
        self.boundary = boundary
        self.parts = parts
        do {
            self.layout = try ConcatenatedByteSource(pieces)
        } catch {
            for file in opened { file.close() }
            throw error
        }
        self.length = layout.length
        self.openedFiles = opened
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try layout.read(into: buffer, at: offset)
    }

    /// Closes the files this body opened. Idempotent and thread-safe; sources passed in with
    /// `.source` are not closed: they belong to the caller.
    public func close() {
        for file in openedFiles { file.close() }
    }
}
