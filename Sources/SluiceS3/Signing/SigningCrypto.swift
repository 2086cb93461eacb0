import SluicePrimitives

/// The hashes SigV4 is built from: SHA-256 and HMAC-SHA256, on the platform's crypto library
/// (`SigningCrypto+OpenSSL.swift` on Linux, `SigningCrypto+CryptoKit.swift` on Apple platforms).
package enum SigningCrypto {
    /// Hex SHA-256 of a string's UTF-8 bytes.
    package static func sha256Hex(_ text: String) -> String {
        var text = text
        return text.withUTF8 { sha256(UnsafeRawBufferPointer($0)) }.hexString
    }

    /// SHA-256 of each range, hashed two at a time (`sha256(_:_:)`), an odd last one alone.
    package static func sha256(eachOf ranges: [UnsafeRawBufferPointer]) -> [[UInt8]] {
        var hashes: [[UInt8]] = []
        hashes.reserveCapacity(ranges.count)
        for pair in stride(from: 0, to: ranges.count - 1, by: 2) {
            let (first, second) = sha256(ranges[pair], ranges[pair + 1])
            hashes += [first, second]
        }
        if ranges.count % 2 == 1 { hashes.append(sha256(ranges[ranges.count - 1])) }
        return hashes
    }

    /// HMAC-SHA256 of a string's UTF-8 bytes.
    package static func hmacSHA256(key: [UInt8], _ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { hmacSHA256(key: key, UnsafeRawBufferPointer($0)) }
    }
}
