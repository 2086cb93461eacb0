import SluiceRequests

/// SigV4's URI encoding: every byte outside `A-Z a-z 0-9 - . _ ~` becomes `%XX` (uppercase hex),
/// `/` kept in paths only. Also the decoding of URLs given by users.
package enum SigV4Encoding {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// Percent-encodes `text`'s UTF-8 bytes.
    package static func encode(_ text: String, keepSlash: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `%XX` escapes (nothing else: `+` stays a plus).
    ///
    /// - Throws: `SigV4Error.invalidURL` for a `%` not followed by two hex digits, or bytes
    ///   that are not UTF-8.
    package static func percentDecode(_ text: String) throws -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else { out.append(byte); continue }
            guard let high = bytes.next().flatMap(HTTPSyntax.hexValue), let low = bytes.next().flatMap(HTTPSyntax.hexValue) else {
                throw SigV4Error(.invalidURL, "'\(text)' has a '%' not followed by two hex digits")
            }
            out.append(high << 4 | low)
        }
        guard let decoded = String(validating: out, as: UTF8.self) else {
            throw SigV4Error(.invalidURL, "'\(text)' does not decode to UTF-8")
        }
        return decoded
    }

    /// Splits an encoded query into decoded items (`a=1&b&c=` gives `a=1`, `b=`, `c=`).
    package static func parseQuery(_ query: String) throws -> [SigV4QueryItem] {
        guard !query.isEmpty else { return [] }
        return try query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return SigV4QueryItem(try percentDecode(String(parts[0])), parts.count > 1 ? try percentDecode(String(parts[1])) : "")
        }
    }

    /// RFC 3986 dot-segment removal plus collapsing of empty segments, as services other than
    /// S3 canonicalise paths (the AWS suite's `normalize-path` cases; botocore's
    /// `remove_dot_segments`).
    package static func normalizePath(_ path: String) -> String {
        guard !path.isEmpty else { return "/" }
        var output: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            if segment == "." { continue }
            if segment == ".." {
                if !output.isEmpty { output.removeLast() }
                continue
            }
            output.append(segment)
        }
        let first = path.hasPrefix("/") ? "/" : ""
        let last = path.hasSuffix("/") && !output.isEmpty ? "/" : ""
        return first + output.joined(separator: "/") + last
    }
}
