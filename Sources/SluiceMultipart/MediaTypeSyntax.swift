import SluiceRequests

/// Content type checks and guesses for form parts.
package enum MediaTypeSyntax {
    /// What curl sends for a file part whose type it cannot guess.
    package static let defaultFileType = "application/octet-stream"

    /// curl's extension table (lib/mime.c), compared case-insensitively.
    private static let byExtension: [(String, String)] = [
        (".gif", "image/gif"), (".jpg", "image/jpeg"), (".jpeg", "image/jpeg"),
        (".png", "image/png"), (".svg", "image/svg+xml"), (".txt", "text/plain"),
        (".htm", "text/html"), (".html", "text/html"), (".pdf", "application/pdf"),
        (".xml", "application/xml"),
    ]

    /// The content type curl guesses for `filename`, or nil.
    package static func guessed(forFilename filename: String) -> String? {
        let lowered = filename.lowercased()
        return byExtension.first { lowered.hasSuffix($0.0) }?.1
    }

    /// The part of `path` after its last `/`.
    package static func lastPathComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Checks `text` against RFC 9110's `media-type`:
    /// `type "/" subtype *( OWS ";" OWS [ token "=" ( token / quoted-string ) ] )`.
    ///
    /// - Returns: `text` without leading and trailing spaces and tabs.
    /// - Throws: `MultipartError.invalidContentType` naming what is wrong.
    package static func validated(_ text: String) throws -> String {
        func fail(_ reason: String) -> MultipartError { .invalidContentType(text, reason: reason) }
        if text.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
            throw fail("it contains a CR, LF or NUL")
        }
        var bytes = Array(text.utf8)[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        let trimmed = String(decoding: bytes, as: UTF8.self)
        var index = bytes.startIndex
        func token() -> Bool {
            let start = index
            while index < bytes.endIndex, HTTPSyntax.isTokenCharacter(bytes[index]) { index += 1 }
            return index > start
        }
        func skipSpaces() {
            while index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        }
        guard token() else { throw fail("expected type/subtype, such as text/plain") }
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "/") else {
            throw fail("expected '/' after the type, as in text/plain")
        }
        index += 1
        guard token() else { throw fail("expected a subtype after '/'") }
        while true {
            skipSpaces()
            if index == bytes.endIndex { return trimmed }
            guard bytes[index] == UInt8(ascii: ";") else {
                throw fail("unexpected character at offset \(index - bytes.startIndex); parameters follow ';'")
            }
            index += 1
            skipSpaces()
            if index == bytes.endIndex || bytes[index] == UInt8(ascii: ";") { continue }
            guard token() else { throw fail("expected a parameter name at offset \(index - bytes.startIndex)") }
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "=") else {
                throw fail("expected '=' after a parameter name")
            }
            index += 1
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                var closed = false
                while index < bytes.endIndex {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") { closed = true; index += 1; break }
                    if byte == UInt8(ascii: "\\") {
                        index += 1
                        guard index < bytes.endIndex else { break }
                    } else if byte < 0x20 && byte != 0x09 || byte == 0x7F {
                        throw fail("control character in a quoted parameter value")
                    }
                    index += 1
                }
                guard closed else { throw fail("unterminated quoted parameter value") }
            } else {
                guard token() else { throw fail("expected a parameter value (a token or a quoted string)") }
            }
        }
    }
}
