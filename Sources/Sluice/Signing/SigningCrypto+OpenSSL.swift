#if !canImport(CryptoKit)
import CSluiceCrypto

extension SigningCrypto {
    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let digest = SHA256Hasher()
        digest.update(bytes)
        return digest.finalize()
    }

    /// HMAC-SHA256 of `bytes` under `key`.
    static func hmacSHA256(key: [UInt8], _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let count = key.withUnsafeBytes { key in
            out.withUnsafeMutableBufferPointer { out in
                sluice_hmac_sha256(key.baseAddress, key.count, bytes.baseAddress, bytes.count, out.baseAddress)
            }
        }
        precondition(count == 32, "OpenSSL HMAC-SHA256 failed")
        return out
    }
}

/// An incremental SHA-256 (OpenSSL's EVP, which uses SHA-NI where the CPU has it).
///
/// - Important: Not thread-safe; `finalize()` is called once.
final class SHA256Hasher {
    private let digest = Digest(.sha256)

    init() {}

    func update(_ bytes: UnsafeRawBufferPointer) { digest.update(bytes) }

    func finalize() -> [UInt8] { digest.finalize() }
}
#endif
