/// The byte classes and small grammars of HTTP/1.1 (RFC 9110 §5.6, RFC 9112) that the
/// loopback receiver checks strictly.
enum HTTPSyntax {
    /// `tchar`: the characters of a token.
    @inline(__always)
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"),
             UInt8(ascii: "0") ... UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// SP or HTAB.
    @inline(__always)
    static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// A byte allowed inside a field value: HTAB, SP, VCHAR, obs-text.
    @inline(__always)
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\t") || (byte >= 0x20 && byte != 0x7F)
    }

    /// The value of a hex digit, or nil.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The index of the first non-blank byte at or after `index`.
    static func skipBlanks<C: Collection<UInt8>>(_ bytes: C, from index: C.Index) -> C.Index {
        var index = index
        while index < bytes.endIndex, isBlank(bytes[index]) { index = bytes.index(after: index) }
        return index
    }

    /// The end of the token starting at `index` (equal to `index` when there is none).
    static func tokenEnd<C: Collection<UInt8>>(_ bytes: C, from index: C.Index) -> C.Index {
        var index = index
        while index < bytes.endIndex, isTokenCharacter(bytes[index]) { index = bytes.index(after: index) }
        return index
    }

    /// The index just past the quoted-string that starts with the `"` at `index`, or nil when
    /// it is malformed or unterminated.
    static func quotedStringEnd<C: Collection<UInt8>>(_ bytes: C, from index: C.Index) -> C.Index? {
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { return nil }
        var index = bytes.index(after: index)
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { return bytes.index(after: index) }
            if byte == UInt8(ascii: "\\") {
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                index = bytes.index(after: index)
                guard index < bytes.endIndex, isFieldValueByte(bytes[index]) else { return nil }
            } else if !isFieldValueByte(byte) {
                return nil
            }
            index = bytes.index(after: index)
        }
        return nil
    }

    /// Parses `field-name ":" OWS field-value OWS` (no CRLF, no folding).
    ///
    /// - Returns: The field, or nil when the line is malformed (including blanks before the
    ///   colon, which RFC 9112 §5.1 says must be rejected).
    static func parseFieldLine(_ line: ArraySlice<UInt8>) -> HTTPHeader? {
        let nameEnd = tokenEnd(line, from: line.startIndex)
        guard nameEnd > line.startIndex, nameEnd < line.endIndex, line[nameEnd] == UInt8(ascii: ":") else {
            return nil
        }
        var start = skipBlanks(line, from: nameEnd + 1)
        var end = line.endIndex
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        for byte in line[start ..< end] where !isFieldValueByte(byte) { return nil }
        if start > end { start = end }
        return try? HTTPHeader(
            name: String(decoding: line[line.startIndex ..< nameEnd], as: UTF8.self),
            value: String(decoding: line[start ..< end], as: UTF8.self)
        )
    }

    /// Escapes `text` as a JSON string literal, quotes included.
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
