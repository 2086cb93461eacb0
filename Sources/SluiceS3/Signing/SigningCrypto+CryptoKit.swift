#if canImport(CryptoKit)
import CryptoKit

extension SigningCrypto {
    /// SHA-256 of `bytes`.
    package static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        Array(CryptoKit.SHA256.hash(data: bytes))
    }

    /// SHA-256 of two byte ranges (one after the other here).
    package static func sha256(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> ([UInt8], [UInt8]) {
        (sha256(first), sha256(second))
    }

    /// Whether `sha256(_:_:)` interleaves the two: not here.
    package static var sha256PairIsInterleaved: Bool { false }

    /// HMAC-SHA256 of `bytes` under `key`.
    package static func hmacSHA256(key: [UInt8], _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        Array(HMAC<CryptoKit.SHA256>.authenticationCode(for: bytes, using: SymmetricKey(data: key)))
    }
}
#endif
