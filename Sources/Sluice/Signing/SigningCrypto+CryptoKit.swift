#if canImport(CryptoKit)
import CryptoKit

extension SigningCrypto {
    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        Array(CryptoKit.SHA256.hash(data: bytes))
    }

    /// HMAC-SHA256 of `bytes` under `key`.
    static func hmacSHA256(key: [UInt8], _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        Array(HMAC<CryptoKit.SHA256>.authenticationCode(for: bytes, using: SymmetricKey(data: key)))
    }
}
#endif
