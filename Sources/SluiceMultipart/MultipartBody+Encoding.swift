import SluiceRequests

// How parts become bytes.
//
// Layout, as curl and browsers send it:
//
//     --BOUNDARY CRLF
//     Content-Disposition: form-data; name="NAME"[; filename="FILENAME"] CRLF
//     [Content-Type: TYPE CRLF]
//     [Extra: header CRLF ...]
//     CRLF
//     <part bytes> CRLF
//     --BOUNDARY CRLF ... (next part)
//     --BOUNDARY-- CRLF
//
// The CRLF before each delimiter belongs to the delimiter (RFC 2046), so it is written at
// the start of the next header block.
//
// Names and filenames: WHATWG's multipart/form-data encoding, as curl 7.81+ does for
// HTTP forms: `"` -> %22, CR -> %0D, LF -> %0A; nothing else is escaped (no backslash
// escapes, `%` itself is not escaped), non-ASCII goes as raw UTF-8. Receivers see what
// they see from a browser (checked with python-multipart 0.0.34, Werkzeug 3.1.8 and
// Python 3.11's `email` with `policy.HTTP`): python-multipart and `email` keep %22, %0D,
// %0A as text; Werkzeug (Flask) turns %22 back into `"` and keeps %0D, %0A. All three
// read raw UTF-8 names and filenames intact (python-multipart hands back the raw bytes
// for the application to decode as UTF-8). nginx does not parse form bodies; it passes
// them to the application unchanged.
// `filename*=UTF-8''...` is not sent: RFC 7578 section 4.2 forbids it for form data, and
// python-multipart ignores it.
//
// A backslash is sent as is (as browsers and curl do). Parsers that undo RFC 822
// quoted-pairs (python-multipart turns `\\` into `\` and `\"` into `"`) may then see a
// name with backslashes differently; no header line can be added either way.

extension MultipartBody {
    /// Letters and digits for the random part of a boundary.
    private static let boundaryAlphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// `----SluiceBoundary` and 32 characters drawn from `SystemRandomNumberGenerator`
    /// (getrandom on Linux, arc4random on Darwin): about 190 random bits.
    package static func makeBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = Array("----SluiceBoundary".utf8)
        for _ in 0..<32 {
            bytes.append(boundaryAlphabet.randomElement(using: &generator)!)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// RFC 2046 `boundary`: 1 to 70 of `bchars`, not ending in a space.
    package static func isValidBoundary(_ boundary: String) -> Bool {
        let allowed = Set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'()+_,-./:=? ".utf8)
        let bytes = Array(boundary.utf8)
        return (1...70).contains(bytes.count) && bytes.allSatisfy(allowed.contains) && bytes.last != 0x20
    }

    /// `text` escaped for a quoted `name=` or `filename=` value.
    package static func escapedParameter(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case 0x22: out.append(contentsOf: Array("%22".utf8))
            case 0x0D: out.append(contentsOf: Array("%0D".utf8))
            case 0x0A: out.append(contentsOf: Array("%0A".utf8))
            default: out.append(byte)
            }
        }
        return out
    }

    /// The delimiter and headers that go before a part's bytes.
    package static func headerBlock(for part: MultipartPart, boundary: String, isFirst: Bool) -> [UInt8] {
        var out: [UInt8] = isFirst ? [] : Array("\r\n".utf8)
        out += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"".utf8)
        out += escapedParameter(part.name)
        out.append(0x22)
        if let filename = part.filename {
            out += Array("; filename=\"".utf8)
            out += escapedParameter(filename)
            out.append(0x22)
        }
        out += Array("\r\n".utf8)
        if let contentType = part.contentType {
            out += Array("Content-Type: \(contentType)\r\n".utf8)
        }
        for header in part.headers {
            out += Array("\(header.name): \(header.value)\r\n".utf8)
        }
        out += Array("\r\n".utf8)
        return out
    }

    /// The final delimiter.
    package static func closingDelimiter(boundary: String, hasParts: Bool) -> [UInt8] {
        Array("\(hasParts ? "\r\n" : "")--\(boundary)--\r\n".utf8)
    }
}
