import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The instant a request is signed at, in SigV4's two spellings: `20150830T123600Z` and `20150830`.
public struct SigV4Timestamp: Sendable, Hashable, CustomStringConvertible {
    /// `YYYYMMDD'T'HHMMSS'Z'`, UTC: the `x-amz-date` value.
    public let amzDate: String
    /// `YYYYMMDD`: the credential scope's date.
    public var day: String { String(amzDate.prefix(8)) }

    /// The UTC time of `date`, to the second.
    public init(_ date: Date = Date()) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Written digit by digit (once a request: interpolating six numbers cost more than the signature's HMACs).
        var text: [UInt8] = []
        text.reserveCapacity(16)
        func digits(_ value: Int32, _ count: Int) {
            var divisor: Int32 = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        let year = parts.tm_year + 1900
        digits(year, year > 9999 ? String(year).count : 4); digits(parts.tm_mon + 1, 2); digits(parts.tm_mday, 2)
        text.append(UInt8(ascii: "T"))
        digits(parts.tm_hour, 2); digits(parts.tm_min, 2); digits(parts.tm_sec, 2)
        text.append(UInt8(ascii: "Z"))
        amzDate = String(decoding: text, as: UTF8.self)
    }

    /// Parses an `x-amz-date` value such as `20150830T123600Z`.
    public init?(amzDate: String) {
        let bytes = Array(amzDate.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z"),
            bytes.enumerated().allSatisfy({ $0.offset == 8 || $0.offset == 15 || (0x30...0x39).contains($0.element) })
        else { return nil }
        self.amzDate = amzDate
    }

    public var description: String { amzDate }
}
