#if canImport(CryptoKit)
import CryptoKit

/// `Digest` on CryptoKit (Apple platforms; not built by this repository's CI, which runs on Linux).
package struct DigestBackend {
    private enum Hasher {
        case sha256(CryptoKit.SHA256)
        case sha1(Insecure.SHA1)
        case md5(Insecure.MD5)
    }

    private var hasher: Hasher

    package init(_ algorithm: Digest.Algorithm) {
        switch algorithm {
        case .sha256: hasher = .sha256(CryptoKit.SHA256())
        case .sha1: hasher = .sha1(Insecure.SHA1())
        case .md5: hasher = .md5(Insecure.MD5())
        }
    }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch hasher {
        case .sha256(var state):
            state.update(bufferPointer: bytes)
            hasher = .sha256(state)
        case .sha1(var state):
            state.update(bufferPointer: bytes)
            hasher = .sha1(state)
        case .md5(var state):
            state.update(bufferPointer: bytes)
            hasher = .md5(state)
        }
    }

    package mutating func finalize() -> [UInt8] {
        switch hasher {
        case .sha256(let state): return Array(state.finalize())
        case .sha1(let state): return Array(state.finalize())
        case .md5(let state): return Array(state.finalize())
        }
    }
}
#endif
