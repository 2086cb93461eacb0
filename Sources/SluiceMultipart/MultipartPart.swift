import SluiceByteSources
import SluiceRequests

/// One part of a multipart/form-data body: a name, its bytes, and optionally a filename,
/// a content type and extra headers.
///
/// Every initializer validates what goes into the part's headers, so a built part can
/// always be encoded: names and filenames have no NUL byte (quotes, CR and LF are
/// percent-escaped when encoded, see `MultipartBody`), the content type is
/// `type/subtype` with optional parameters, extra headers hold no CR, LF or NUL.
public struct MultipartPart: Sendable {
    /// Where a part's bytes come from.
    public enum Content: Sendable {
        /// Bytes held in memory: a text field, a small generated file.
        case bytes([UInt8])
        /// Any random-access source; its `length` is read when the body is built.
        case source(any ByteSource)
        /// A regular file, opened (and its length taken) when the body is built.
        case file(path: String)
    }

    /// The form field name (`name=` in `Content-Disposition`).
    public let name: String
    /// The file name sent with the part (`filename=`), or nil for a plain field.
    public let filename: String?
    /// The part's `Content-Type`, or nil to send none (a plain text field).
    public let contentType: String?
    /// Extra headers written after `Content-Disposition` and `Content-Type`.
    public let headers: [HTTPHeader]
    /// The part's bytes.
    public let content: Content

    /// Makes a part from its pieces.
    ///
    /// - Parameters:
    ///   - name: The field name; any string without NUL (escaped when encoded).
    ///   - content: The part's bytes.
    ///   - filename: The file name to send, or nil; any string without NUL.
    ///   - contentType: `type/subtype` with optional `; name=value` parameters, or nil.
    ///   - headers: Extra part headers; `Content-Disposition` and `Content-Type` are
    ///     written by Sluice and refused here.
    /// - Throws: `MultipartError.nulInName`, `.nulInFilename`, `.invalidContentType`,
    ///   `.invalidPartHeader`.
    public init(
        name: String, content: Content, filename: String? = nil,
        contentType: String? = nil, headers: [HTTPHeader] = []
    ) throws {
        guard !name.utf8.contains(0) else { throw MultipartError.nulInName(name) }
        if let filename, filename.utf8.contains(0) { throw MultipartError.nulInFilename(filename) }
        var trimmedType: String?
        if let contentType {
            trimmedType = try MediaTypeSyntax.validated(contentType)
        }
        for header in headers {
            let lowered = header.name.lowercased()
            if lowered == "content-disposition" || lowered == "content-type" {
                throw MultipartError.invalidPartHeader(
                    header.description, reason: "Sluice writes \(header.name) itself; use the filename or content type instead")
            }
        }
        self.name = name
        self.content = content
        self.filename = filename
        self.contentType = trimmedType
        self.headers = headers
    }

    /// A text field, sent as its UTF-8 bytes with no filename and, by default, no content type.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field's text.
    ///   - contentType: An optional content type, e.g. `text/plain; charset=utf-8`.
    /// - Throws: As `init(name:content:filename:contentType:headers:)`.
    public static func field(_ name: String, _ value: String, contentType: String? = nil) throws -> MultipartPart {
        try MultipartPart(name: name, content: .bytes(Array(value.utf8)), contentType: contentType)
    }

    /// A file part read from `path` when the body is built, streamed, never held in memory.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - path: The file to send.
    ///   - filename: The name to send; by default the last component of `path`.
    ///   - contentType: By default guessed from the filename's extension as curl does
    ///     (`.txt`, `.html`, `.png`, `.jpg`, `.pdf`, ...), else `application/octet-stream`.
    ///   - headers: Extra part headers, after `Content-Disposition` and `Content-Type`.
    /// - Throws: As `init(name:content:filename:contentType:headers:)`; a missing file
    ///   is reported when the body is built.
    public static func file(
        _ name: String, path: String, filename: String? = nil, contentType: String? = nil,
        headers: [HTTPHeader] = []
    ) throws -> MultipartPart {
        let base = MediaTypeSyntax.lastPathComponent(path)
        let sent = filename ?? base
        let type =
            contentType
            ?? MediaTypeSyntax.guessed(forFilename: sent)
            ?? MediaTypeSyntax.guessed(forFilename: base)
            ?? MediaTypeSyntax.defaultFileType
        return try MultipartPart(name: name, content: .file(path: path), filename: sent, contentType: type, headers: headers)
    }

    /// A part whose bytes come from any random-access source (synthetic, decrypted, a slice...).
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - source: The bytes; read at upload time, from any offset, possibly more than once.
    ///   - filename: The file name to send, or nil for a plain field.
    ///   - contentType: The content type; nil sends `application/octet-stream` when a
    ///     filename is given and no `Content-Type` otherwise.
    /// - Throws: As `init(name:content:filename:contentType:headers:)`.
    public static func source(
        _ name: String, _ source: any ByteSource, filename: String? = nil, contentType: String? = nil
    ) throws -> MultipartPart {
        let type = contentType ?? (filename == nil ? nil : MediaTypeSyntax.defaultFileType)
        return try MultipartPart(name: name, content: .source(source), filename: filename, contentType: type)
    }

    /// A part whose bytes are held in memory.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - bytes: The part's bytes.
    ///   - filename: The file name to send, or nil for a plain field.
    ///   - contentType: The content type; nil sends `application/octet-stream` when a
    ///     filename is given and no `Content-Type` otherwise.
    /// - Throws: As `init(name:content:filename:contentType:headers:)`.
    public static func bytes(
        _ name: String, _ bytes: [UInt8], filename: String? = nil, contentType: String? = nil
    ) throws -> MultipartPart {
        let type = contentType ?? (filename == nil ? nil : MediaTypeSyntax.defaultFileType)
        return try MultipartPart(name: name, content: .bytes(bytes), filename: filename, contentType: type)
    }
}
