#if !canImport(CryptoKit)
import CSluiceCrypto

/// `Digest` on OpenSSL's EVP interface.
package struct DigestBackend {
    private let context: Context

    /// Owns the EVP context.
    private final class Context {
        package let pointer: UnsafeMutableRawPointer

        package init(_ algorithm: Digest.Algorithm) {
            guard let pointer = sluice_digest_new(algorithm.rawValue) else {
                fatalError("OpenSSL has no \(algorithm.rawValue)")
            }
            self.pointer = pointer
        }

        deinit { sluice_digest_free(pointer) }
    }

    package init(_ algorithm: Digest.Algorithm) {
        context = Context(algorithm)
    }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        _ = sluice_digest_update(context.pointer, base, bytes.count)
    }

    package mutating func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        let count = Int(sluice_digest_final(context.pointer, &out))
        return Array(out.prefix(count))
    }
}
#endif
