import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SluiceByteSources

/// Where one part of a presigned multipart upload goes: a URL signed in its query string
/// (SigV4, `X-Amz-Signature`) and the headers that were signed with it.
///
/// A backend makes it (`S3Client.presignPart`); a client that holds no credentials sends the
/// part's bytes to it with exactly these headers (a signed header that is missing, or has
/// another value, fails the signature).
public struct S3PresignedURL: Sendable, Codable, Equatable {
    /// The URL, `…?partNumber=N&uploadId=ID&X-Amz-…&X-Amz-Signature=…`.
    public var url: String
    /// Headers to send with it, besides `Host`: for instance `x-amz-checksum-crc32c`, whose
    /// value S3 then checks against the bytes it receives.
    public var headers: [String: String]

    /// A URL to send the part to, with the headers it was signed with.
    public init(url: String, headers: [String: String] = [:]) {
        self.url = url
        self.headers = headers
    }

    /// When the URL stops being accepted (`X-Amz-Date` + `X-Amz-Expires`), or nil when its
    /// query does not say.
    public var expiresAt: Date? {
        guard let items = URLComponents(string: url)?.queryItems,
            let date = items.first(where: { $0.name == "X-Amz-Date" })?.value.flatMap(Self.date(amzDate:)),
            let seconds = items.first(where: { $0.name == "X-Amz-Expires" })?.value.flatMap(Int.init)
        else { return nil }
        return date.addingTimeInterval(TimeInterval(seconds))
    }

    /// Whether the URL's own expiry has passed at `now`.
    public func hasExpired(at now: Date = Date()) -> Bool {
        expiresAt.map { $0 <= now } ?? false
    }

    /// The value of query item `name`, decoded.
    package func queryValue(_ name: String) -> String? {
        URLComponents(string: url)?.queryItems?.first(where: { $0.name == name })?.value
    }

    /// `20150830T123600Z` as a date (UTC).
    package static func date(amzDate text: String) -> Date? {
        guard let stamp = SigV4Timestamp(amzDate: text) else { return nil }
        let digits = Array(stamp.amzDate.utf8).map { Int32($0) - 0x30 }
        func number(_ range: Range<Int>) -> Int32 { digits[range].reduce(0) { $0 * 10 + $1 } }
        var parts = tm()
        parts.tm_year = number(0..<4) - 1900
        parts.tm_mon = number(4..<6) - 1
        parts.tm_mday = number(6..<8)
        parts.tm_hour = number(9..<11)
        parts.tm_min = number(11..<13)
        parts.tm_sec = number(13..<15)
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}

/// What a client asks its backend for: the URL of one part.
public struct S3PresignedPartRequest: Sendable {
    /// The multipart upload.
    public var uploadID: String
    /// The part's number, from 1.
    public var partNumber: Int
    /// The part's bytes in the source.
    public var range: Range<Int64>
    /// The part's checksum, when the upload has an algorithm: a backend that signs it
    /// (`x-amz-checksum-…` in the signed headers, `S3Client.presignPart(checksum:)`) makes S3
    /// check the bytes it receives against it.
    public var checksum: Checksum?
    /// True when the URL given before for this part has expired: this is the one request for
    /// a fresh one.
    public var renewal: Bool

    /// What the app's provider is asked for: the part, its byte range and checksum, and whether an
    /// earlier URL expired.
    public init(uploadID: String, partNumber: Int, range: Range<Int64>, checksum: Checksum?, renewal: Bool) {
        self.uploadID = uploadID
        self.partNumber = partNumber
        self.range = range
        self.checksum = checksum
        self.renewal = renewal
    }
}
