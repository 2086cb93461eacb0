/// An object's place in S3: `s3://BUCKET/KEY`.
///
/// The key is everything after the first `/` following the bucket, byte for byte: spaces,
/// unicode (kept in the form it was typed, not normalised), `//`, `%` and `+` are part of
/// the key and are never decoded. An empty key or one ending in `/` names a folder; for an
/// upload, `resolvingKey(forSourceNamed:)` appends the source's file name, as `aws s3 cp` does.
public struct S3Location: Sendable, Hashable, CustomStringConvertible {
    /// The bucket's name.
    public var bucket: String
    /// The object's key, as given: opaque bytes, `a//b` and `./x` included.
    public var key: String

    /// S3's limit on a key, in UTF-8 bytes.
    public static let maximumKeyLength = 1024

    /// The object `key` in `bucket`.
    public init(bucket: String, key: String) throws {
        try Self.validate(bucket: bucket)
        guard key.utf8.count <= Self.maximumKeyLength else {
            throw S3Error(.invalidLocation, "the key is \(key.utf8.count) bytes; S3 allows at most \(Self.maximumKeyLength)")
        }
        self.bucket = bucket
        self.key = key
    }

    /// Parses `s3://BUCKET`, `s3://BUCKET/` or `s3://BUCKET/KEY`.
    ///
    /// - Throws: `S3Error` with code `.invalidLocation`: no `s3://`, an empty or invalid
    ///   bucket name, a key longer than 1,024 bytes.
    public init(parsing text: String) throws {
        guard text.hasPrefix("s3://") else {
            throw S3Error(.invalidLocation, "'\(text)' is not an S3 location: expected s3://BUCKET/KEY")
        }
        let rest = text.dropFirst("s3://".count)
        let slash = rest.firstIndex(of: "/")
        let bucket = String(rest[..<(slash ?? rest.endIndex)])
        let key = slash.map { String(rest[rest.index(after: $0)...]) } ?? ""
        do { try self.init(bucket: bucket, key: key) } catch var error as S3Error {
            error.message = "invalid S3 location '\(text)': \(error.message)"
            throw error
        }
    }

    /// Whether the key names a folder: empty, or ending in `/`.
    public var namesFolder: Bool { key.isEmpty || key.hasSuffix("/") }

    /// The location an upload of a source named `name` goes to: this one, or, when the key
    /// names a folder, the folder plus `name`.
    ///
    /// - Parameter name: The source's file name; nil for stdin.
    /// - Throws: `S3Error.invalidLocation` when the key names a folder and there is no name.
    public func resolvingKey(forSourceNamed name: String?) throws -> S3Location {
        guard namesFolder else { return self }
        guard let name, !name.isEmpty else {
            throw S3Error(.invalidLocation, "\(self) names a folder; give the object's full key (s3://\(bucket)/\(key)NAME)")
        }
        return try S3Location(bucket: bucket, key: key + name)
    }

    /// `s3://BUCKET/KEY`, with control characters in the key (a newline, a tab, DEL) written
    /// as `\u{A}`: messages about the object stay one line.
    public var description: String { "s3://\(bucket)/\(key.controlCharactersEscaped)" }

    /// Bucket names as S3 and its look-alikes accept them: 3 to 63 characters (255 for
    /// legacy names), letters, digits, `.`, `-` and `_`.
    package static func validate(bucket: String) throws {
        guard !bucket.isEmpty else { throw S3Error(.invalidLocation, "the bucket name is empty") }
        let allowed = { (byte: UInt8) -> Bool in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                return true
            default:
                return false
            }
        }
        guard bucket.utf8.allSatisfy(allowed) else {
            throw S3Error(.invalidLocation, "bucket name '\(bucket)' may hold only letters, digits, '.', '-' and '_'")
        }
        guard (3...255).contains(bucket.utf8.count) else {
            throw S3Error(.invalidLocation, "bucket name '\(bucket)' must be 3 to 63 characters long")
        }
    }

    /// Whether virtual-hosted addressing can put the bucket in a host name (over `https`,
    /// a `.` would not match the wildcard certificate).
    package func isDNSCompatible(overTLS: Bool) -> Bool {
        let bytes = Array(bucket.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        let lowerDigitDotDash = bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D }
        guard lowerDigitDotDash, bytes.first != 0x2E, bytes.first != 0x2D, bytes.last != 0x2E, bytes.last != 0x2D else { return false }
        guard !bucket.contains(".."), !bucket.contains(".-"), !bucket.contains("-.") else { return false }
        if overTLS && bucket.contains(".") { return false }
        // Not an IPv4 address.
        let labels = bucket.split(separator: ".")
        if labels.count == 4, labels.allSatisfy({ UInt8($0) != nil }) { return false }
        return true
    }

    /// `text` with every byte except S3's unreserved ones (`A-Z a-z 0-9 - . _ ~`) and `/`
    /// percent-encoded: the way the key goes into a request path.
    package static func encodePath(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E, 0x2F:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
            }
        }
        return out
    }
}

extension String {
    /// This text with control characters (a newline, a tab, DEL) written as `\u{A}`: a message
    /// that quotes it stays one line.
    package var controlCharactersEscaped: String {
        // Most names hold none: the name itself (a control character is one UTF-8 byte).
        guard utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return self }
        var shown = ""
        for scalar in unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}
