/// The hashes SigV4 is built from: SHA-256 and HMAC-SHA256, on the platform's crypto library
/// (`SigningCrypto+OpenSSL.swift` on Linux, `SigningCrypto+CryptoKit.swift` on Apple platforms).
enum SigningCrypto {
    /// Hex SHA-256 of a string's UTF-8 bytes.
    static func sha256Hex(_ text: String) -> String {
        var text = text
        return text.withUTF8 { sha256(UnsafeRawBufferPointer($0)) }.hexString
    }

    /// HMAC-SHA256 of a string's UTF-8 bytes.
    static func hmacSHA256(key: [UInt8], _ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { hmacSHA256(key: key, UnsafeRawBufferPointer($0)) }
    }
}
