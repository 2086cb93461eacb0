#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// An object as `ListObjectsV2` shows it.
public struct S3ListedObject: Sendable, Equatable {
    /// The object's key (decoded when the listing was URL-encoded).
    public var key: String
    /// The object's size in bytes.
    public var size: Int64
    /// `LastModified`, in nanoseconds since 1970 (S3 writes whole seconds or milliseconds).
    public var lastModified: Int64
    /// The ETag, quotes included, as the server wrote it.
    public var eTag: String

    /// A listed object.
    public init(key: String, size: Int64, lastModified: Int64, eTag: String = "") {
        self.key = key
        self.size = size
        self.lastModified = lastModified
        self.eTag = eTag
    }

    /// Whether this is a folder marker the AWS CLI's sync passes over: an empty object whose
    /// key ends in `/` (made by consoles for "folders"; never a file's key).
    public var isFolderMarker: Bool { size == 0 && key.hasSuffix("/") }
}

/// One page of `ListObjectsV2` (`ListBucketResult`), asked for with `encoding-type=url` so that
/// any key (control characters included) comes through XML.
public struct S3ObjectsPage: Sendable, Equatable {
    /// The objects on this page, in the server's order.
    public var objects: [S3ListedObject]
    /// Whether there are more; ask again with `nextContinuationToken`.
    public var isTruncated: Bool
    /// Where the next page starts, when there is one.
    public var nextContinuationToken: String?

    /// Parses a `ListObjectsV2` answer.
    ///
    /// - Throws: `S3Error` (`.malformedResponse`, or `.server` for an error document).
    public init(xml data: Data) throws {
        let root = try S3XMLElement.parseAnswer(data, what: "ListObjectsV2", expected: "ListBucketResult")
        let encoded = root.value("EncodingType")?.lowercased() == "url"
        objects = try root.children("Contents").map { item in
            guard let raw = item.child("Key")?.text, let size = item.value("Size").flatMap(Int64.init), size >= 0 else {
                throw S3Error(.malformedResponse, "the server's ListObjectsV2 answer has an object without a Key or Size")
            }
            guard let key = encoded ? Self.decodeURLEncoded(raw) : raw else {
                throw S3Error(.malformedResponse, "the server's ListObjectsV2 answer has a key that does not decode: \(raw.debugDescription)")
            }
            guard let text = item.value("LastModified"), let modified = Self.nanoseconds(iso8601: text) else {
                throw S3Error(.malformedResponse, "the server's ListObjectsV2 answer has \(key.debugDescription) without a LastModified it can read")
            }
            return S3ListedObject(key: key, size: size, lastModified: modified, eTag: item.value("ETag") ?? "")
        }
        isTruncated = root.value("IsTruncated")?.lowercased() == "true"
        nextContinuationToken = root.child("NextContinuationToken")?.text
        if isTruncated, nextContinuationToken?.isEmpty ?? true {
            throw S3Error(.malformedResponse, "the server's ListObjectsV2 answer is truncated but has no NextContinuationToken")
        }
    }

    /// `text` as `encoding-type=url` writes it (`%XX` escapes, `+` for a space, as botocore
    /// reads it with `unquote_plus`); nil when an escape is broken or the bytes are not UTF-8.
    package static func decodeURLEncoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        func hex(_ byte: UInt8?) -> UInt8? {
            switch byte {
            case .some(let b) where (0x30...0x39).contains(b): return b - 0x30
            case .some(let b) where (0x41...0x46).contains(b): return b - 0x41 + 10
            case .some(let b) where (0x61...0x66).contains(b): return b - 0x61 + 10
            default: return nil
            }
        }
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// `2026-12-03T10:56:17Z` or `2026-12-03T10:56:17.123Z` (UTC) in nanoseconds since 1970;
    /// nil for any other form.
    package static func nanoseconds(iso8601 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        let separators: [(Int, Unicode.Scalar)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == UInt8(ascii: $0.1) }),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var fraction: Int64 = 0
        let rest = bytes[19..<(bytes.count - 1)]
        if !rest.isEmpty {
            guard rest.first == UInt8(ascii: "."), rest.count >= 2, rest.count <= 10,
                let digits = number((rest.startIndex + 1)..<rest.endIndex)
            else { return nil }
            fraction = Int64(digits)
            for _ in 0..<(9 - (rest.count - 1)) { fraction *= 10 }
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Int64(timegm(&parts)) * 1_000_000_000 + fraction
    }
}
