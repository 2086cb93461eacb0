import Foundation

/// The byte classes and small grammars of HTTP/1.1 (RFC 9110 §5.6, RFC 9112): what request
/// methods, header names and values are made of, for the headers Sluice sends and for the
/// loopback receiver, which checks what it is sent strictly.
package enum HTTPSyntax {
    /// `authority` (`host[:port]`) with its host in the dotted-decimal form libcurl sends when
    /// it is an IPv4 address written in one of the other forms URL parsers accept (libcurl,
    /// WHATWG URL): fewer parts (`127.1`), hexadecimal (`0x7f000001`), octal (`0177.0.0.1`),
    /// one number (`2130706433`). Anything else (a name, an IPv6 literal, an address out of
    /// range) comes back unchanged. What signs the `Host` of a request uses this, so that it
    /// signs the host that is sent.
    package static func canonicalIPv4(authority: String) -> String {
        if authority.hasPrefix("[") { return authority }
        guard let colon = authority.lastIndex(of: ":") else { return canonicalIPv4(authority) }
        return canonicalIPv4(String(authority[..<colon])) + authority[colon...]
    }

    /// `canonicalIPv4` of a bare host (no port).
    package static func canonicalIPv4(_ host: String) -> String {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return host }
        var values: [UInt64] = []
        for part in parts {
            let (digits, radix): (Substring, Int)
            if part.hasPrefix("0x") || part.hasPrefix("0X") {
                (digits, radix) = (part.dropFirst(2), 16)
            } else if part.hasPrefix("0") && part.count > 1 {
                (digits, radix) = (part.dropFirst(), 8)
            } else {
                (digits, radix) = (part, 10)
            }
            guard !digits.isEmpty, digits.count <= 12, let value = UInt64(digits, radix: radix) else { return host }
            values.append(value)
        }
        // Every part but the last is one byte; the last fills the bytes that are left.
        guard values.dropLast().allSatisfy({ $0 <= 255 }), values.last! < 1 << (8 * UInt64(5 - values.count)) else { return host }
        var address = values.last!
        for (index, value) in values.dropLast().enumerated() { address |= value << (8 * UInt64(3 - index)) }
        return (0..<4).map { String((address >> (8 * UInt64(3 - $0))) & 255) }.joined(separator: ".")
    }

    /// Whether two header names are equal ignoring case, as `caseInsensitiveCompare` says:
    /// ASCII names (every token) byte by byte, Foundation asked only for others.
    package static func namesMatch(_ a: String, _ b: String) -> Bool {
        // Over the strings' UTF-8 in place (every name a request or an answer holds is a
        // native string): one loop, not iterators over each view (a lookup per header per answer).
        let ascii = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in asciiNamesMatch(x, y) } ?? nil
        }
        if let ascii, let matched = ascii { return matched }
        return a.caseInsensitiveCompare(b) == .orderedSame
    }

    /// Whether two ASCII names are equal ignoring case; nil when either is not ASCII.
    private static func asciiNamesMatch(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard x.count == y.count else {
            return x.contains(where: { $0 >= 0x80 }) || y.contains(where: { $0 >= 0x80 }) ? nil : false
        }
        var matched = true
        for index in 0..<x.count {
            let (p, q) = (x[index], y[index])
            if (p | q) >= 0x80 { return nil }
            let folded = p | 0x20
            if !(p == q || (folded == q | 0x20 && folded >= UInt8(ascii: "a") && folded <= UInt8(ascii: "z"))) { matched = false }
        }
        return matched
    }

    /// `tchar`: the characters of a token.
    @inline(__always)
    package static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `text` is a token: one or more `tchar`s (methods, header names, media types).
    package static func isToken(_ text: String) -> Bool {
        !text.isEmpty && (text.utf8.withContiguousStorageIfAvailable(isToken) ?? text.utf8.allSatisfy(isTokenCharacter))
    }

    /// Whether every byte is a `tchar`: one loop over the buffer (each header of each request
    /// and answer comes here).
    private static func isToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes where !isTokenCharacter(byte) { return false }
        return true
    }

    /// Whether `text` is a token. Not generic, as `isToken(_:)` of a `String` is not: each
    /// header line of each answer is checked from another module, where a generic one ran
    /// unspecialized, its bytes walked through witness-table calls.
    package static func isToken(_ text: Substring) -> Bool {
        !text.isEmpty && (text.utf8.withContiguousStorageIfAvailable(isToken) ?? text.utf8.allSatisfy(isTokenCharacter))
    }

    /// Whether `text` holds a CR, LF or NUL (what no field value may hold). Like `isToken`, over
    /// the bytes in place where they are contiguous (every native string): a loop over a
    /// buffer, not the view's iterator, for every header of every request.
    package static func breaksFieldValue(_ text: String) -> Bool {
        func breaks(_ byte: UInt8) -> Bool { byte == 0x0D || byte == 0x0A || byte == 0x00 }
        return text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where breaks(byte) { return true }
            return false
        } ?? text.utf8.contains(where: breaks)
    }

    /// SP or HTAB.
    @inline(__always)
    package static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// A byte allowed inside a field value: HTAB, SP, VCHAR, obs-text.
    @inline(__always)
    package static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\t") || (byte >= 0x20 && byte != 0x7F)
    }

    /// The value of a hex digit, or nil.
    @inline(__always)
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The index of the first non-blank byte at or after `index`.
    package static func skipBlanks<C: Collection<UInt8>>(_ bytes: C, from index: C.Index) -> C.Index {
        var index = index
        while index < bytes.endIndex, isBlank(bytes[index]) { index = bytes.index(after: index) }
        return index
    }

    /// The end of the token starting at `index` (equal to `index` when there is none).
    package static func tokenEnd<C: Collection<UInt8>>(_ bytes: C, from index: C.Index) -> C.Index {
        var index = index
        while index < bytes.endIndex, isTokenCharacter(bytes[index]) { index = bytes.index(after: index) }
        return index
    }

    /// The index just past the quoted-string that starts with the `"` at `index`, or nil when
    /// it is malformed or unterminated.
    package static func quotedStringEnd<C: Collection<UInt8>>(_ bytes: C, from index: C.Index) -> C.Index? {
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
    package static func parseFieldLine(_ line: ArraySlice<UInt8>) -> HTTPHeader? {
        let nameEnd = tokenEnd(line, from: line.startIndex)
        guard nameEnd > line.startIndex, nameEnd < line.endIndex, line[nameEnd] == UInt8(ascii: ":") else {
            return nil
        }
        var start = skipBlanks(line, from: nameEnd + 1)
        var end = line.endIndex
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        for byte in line[start..<end] where !isFieldValueByte(byte) { return nil }
        if start > end { start = end }
        return HTTPHeader(
            name: String(decoding: line[line.startIndex..<nameEnd], as: UTF8.self),
            value: String(decoding: line[start..<end], as: UTF8.self)
        )
    }

}
