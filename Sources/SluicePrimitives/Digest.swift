/// An incremental SHA-256 or SHA-1, on the platform's crypto library: OpenSSL's libcrypto
/// on Linux (`Digest+OpenSSL.swift`, SHA-NI where the CPU has it), CryptoKit on Apple
/// platforms (`Digest+CryptoKit.swift`).
///
/// - Important: Not thread-safe; `finalize()` is called once.
public final class Digest {
    /// The hash functions a `Digest` computes.
    public enum Algorithm: String, Sendable {
        /// SHA-256.
        case sha256 = "SHA256"
        /// SHA-1 (for tus `Upload-Checksum`).
        case sha1 = "SHA1"
        /// Only where a protocol names it (SSE-C's key MD5), never for integrity.
        case md5 = "MD5"
    }

    private var backend: DigestBackend

    /// A fresh hash of `algorithm`.
    public init(_ algorithm: Algorithm) {
        backend = DigestBackend(algorithm)
    }

    /// Hashes `bytes` after what came before.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        backend.update(bytes)
    }

    /// Hashes `bytes` after what came before.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest's bytes.
    public func finalize() -> [UInt8] {
        backend.finalize()
    }

    /// The digest as lowercase hex.
    public func finalizeHex() -> String {
        finalize().hexString
    }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hex.
    ///
    /// Inlinable: called from every other module (a signature, a record's name, a request's
    /// SHA-256), where an unspecialized generic walked the bytes through witness-table calls
    /// (2 % of the CPU of `s3 cp -r` of many small files).
    @inlinable
    public var hexString: String {
        let count = underestimatedCount * 2
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for byte in self {
            out.append(Self.hexDigit(byte >> 4))
            out.append(Self.hexDigit(byte & 0x0F))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The lowercase hex digit of `value` (0-15).
    @inlinable
    static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") &+ value : UInt8(ascii: "a") &+ (value &- 10)
    }
}
