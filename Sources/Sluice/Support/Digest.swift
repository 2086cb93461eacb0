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

    /// SHA-256 of a whole source, read in `chunkSize` pieces the way uploads read it.
    ///
    /// - Throws: The source's error, or `ByteSourceError.endedEarly` if it is short.
    public static func sha256(of source: any ByteSource, chunkSize: Int = 1 << 20) throws -> String {
        let digest = Digest(.sha256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < source.length {
            let want = Int(min(Int64(chunkSize), source.length - offset))
            let count = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: offset)
            if count == 0 { throw ByteSourceError.endedEarly(offset: offset, expected: source.length) }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += Int64(count)
        }
        return digest.finalizeHex()
    }

    /// SHA-256 of a sequential source, read to its end.
    public static func sha256(of source: any SequentialByteSource, chunkSize: Int = 1 << 20) throws -> (hex: String, count: Int64) {
        let digest = Digest(.sha256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let count = try source.read(into: buffer)
            if count == 0 { break }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            total += Int64(count)
        }
        return (digest.finalizeHex(), total)
    }
}

/// The digits of `hexString`.
private let lowercaseHexDigits = Array("0123456789abcdef".utf8)

extension Sequence where Element == UInt8 {
    /// Lowercase hex.
    public var hexString: String {
        var out: [UInt8] = []
        out.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            out.append(lowercaseHexDigits[Int(byte >> 4)])
            out.append(lowercaseHexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
