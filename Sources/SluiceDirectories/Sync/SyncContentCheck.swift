import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceS3

/// `s3 sync --checksum`: whether a file holds the bytes of the object of the same size the
/// listing shows for its key, from what the object carries, without reading the object.
///
/// In the order tried:
/// 1. A listed ETag of 32 hex digits (a single-part object) is compared with the file's MD5: a
///    match decides with no request. S3's ETag is the MD5 of the bytes unless the object is
///    SSE-KMS or SSE-C, which the listing cannot tell; on a mismatch one `HeadObject` says
///    whether it is: if not, the file differs; if it is, its stored checksum decides, or
///    nothing can.
/// 2. Any other ETag (a multipart object's `MD5-N`): one `HeadObject` with checksum mode, then
///    - a full-object checksum (CRC64NVME, CRC32C, CRC32; every new S3 object has CRC64NVME)
///      is compared with the file's;
///    - a composite checksum (`base64-N`: sluice's default, CRC32C) is recomputed with the
///      object's part size: part 1's length from `HeadObject ?partNumber=1`, else sluice's
///      default plan or the AWS CLI's 8 MiB where their part count is the object's;
///    - with no checksum, the ETag (the MD5 of the parts' MD5s, unless SSE-KMS or SSE-C) is
///      recomputed the same way.
/// 3. Otherwise the object cannot be compared by content (`.unknown`): the caller falls back
///    to size and time and counts it.
///
/// The file is read once for everything one step needs (with the MD5 of step 1 goes its
/// CRC64NVME, which an SSE-KMS object most likely stores), a second time only when a HEAD
/// asks for another checksum. Memory: the hashers and one checksum per part (at most 10,000).
public struct SyncContentCheck: Sendable {
    /// The client every request goes through (its retries, its request budget).
    public var client: S3Client
    /// The bucket listed.
    public var bucket: String

    /// A check of objects in `bucket` through `client`.
    public init(client: S3Client, bucket: String) {
        self.client = client
        self.bucket = bucket
    }

    /// What the check found.
    public enum Verdict: Sendable, Equatable {
        /// The file holds the object's bytes, as `basis` shows.
        case same(basis: String)
        /// The file's bytes differ from the object's (or the object is gone), as `basis` shows.
        case differs(basis: String)
        /// Nothing the object carries can be compared with the file.
        case unknown
    }

    /// The AWS CLI's default part size, which its multipart objects most likely have.
    package static let awsCLIPartSize: Int64 = 8 << 20

    /// Compares the file at `path` (of `size` bytes, the object's size) with `object`.
    ///
    /// - Throws: `S3Error` when a `HeadObject` fails (other than 404, 400 and 403, which leave
    ///   the object `.unknown`: an SSE-C object without its key), the file's error when it
    ///   cannot be read.
    public func compare(file path: String, size: Int64, with object: S3ListedObject) async throws -> Verdict {
        let location = try S3Location(bucket: bucket, key: object.key)
        let listed = S3ObjectHead.unquoted(object.eTag)
        var first: FileHashes?
        if Self.isMD5(listed) {
            let read = try await hashes(path, [.whole(.md5), .whole(.checksum(.crc64nvme))])
            if read.whole(.md5)?.hexString == listed.lowercased() { return .same(basis: "ETag (MD5)") }
            first = read
        }
        let head: S3ObjectHead
        switch try await ask(location) {
        case .gone: return .differs(basis: "object gone")
        case .refused: return .unknown
        case .found(let found): head = found
        }
        if head.length != size { return .differs(basis: "size") }
        if let first {
            // A single-part object whose ETag is not the file's MD5: it differs, unless the ETag
            // is no MD5 (SSE-KMS, SSE-C), when only a stored checksum can tell.
            if !head.eTagIsNotMD5, S3ObjectHead.unquoted(head.eTag).lowercased() == listed.lowercased() {
                return .differs(basis: "ETag (MD5)")
            }
            guard let stored = head.wholeChecksum else { return .unknown }
            return try await compare(path, stored, earlier: first)
        }
        if let whole = head.wholeChecksum {
            // A multipart object's checksum with no type and no -N (moto's composite) may be
            // either: both are computed in the one read, and either match is the same bytes.
            let partCount = S3CompletedUpload.partCount(ofETag: head.eTag) ?? 1
            guard head.checksumType == nil, partCount > 1, let partSize = try await partSize(location, size: size, partCount: partCount)
            else { return try await compare(path, whole, earlier: nil) }
            let kind = FileHashes.Kind.checksum(whole.algorithm)
            let read = try await hashes(path, [.whole(kind), .parts(kind, size: partSize)])
            let composite = Self.composite(whole.algorithm, of: read.parts(kind, size: partSize))
            let basis = "\(whole.algorithm), whole or composite in parts of \(partSize) (the server does not say which)"
            return read.whole(kind) == whole.bytes || composite == whole ? .same(basis: basis) : .differs(basis: basis)
        }
        if let (composite, count) = head.compositeChecksum {
            guard let partSize = try await partSize(location, size: size, partCount: count ?? S3CompletedUpload.partCount(ofETag: head.eTag))
            else { return .unknown }
            let read = try await hashes(path, [.parts(.checksum(composite.algorithm), size: partSize)])
            let recomputed = Self.composite(composite.algorithm, of: read.parts(.checksum(composite.algorithm), size: partSize))
            let basis = "composite \(composite.algorithm) in parts of \(partSize)"
            return recomputed == composite ? .same(basis: basis) : .differs(basis: basis)
        }
        let tag = S3ObjectHead.unquoted(head.eTag).lowercased()
        guard !head.eTagIsNotMD5, let dash = tag.lastIndex(of: "-"), Self.isMD5(String(tag[..<dash])),
            let count = S3CompletedUpload.partCount(ofETag: tag),
            let partSize = try await partSize(location, size: size, partCount: count)
        else { return .unknown }
        let read = try await hashes(path, [.parts(.md5, size: partSize)])
        let parts = read.parts(.md5, size: partSize) ?? []
        let digest = Digest(.md5)
        for part in parts { digest.update(part) }
        let recomputed = "\(digest.finalizeHex())-\(parts.count)"
        let basis = "ETag (MD5 of the MD5s of parts of \(partSize))"
        return recomputed == tag ? .same(basis: basis) : .differs(basis: basis)
    }

    /// The composite checksum (without its `-N`) of parts whose checksums are `parts`.
    private static func composite(_ algorithm: ChecksumAlgorithm, of parts: [[UInt8]]?) -> Checksum? {
        Checksum.composite(of: (parts ?? []).map { Checksum(algorithm: algorithm, bytes: $0) })?.checksum
    }

    /// The file's `stored.algorithm` checksum (from `earlier` when that pass computed it) against
    /// `stored`.
    private func compare(_ path: String, _ stored: Checksum, earlier: FileHashes?) async throws -> Verdict {
        let want = FileHashes.Kind.checksum(stored.algorithm)
        let bytes: [UInt8]?
        if let known = earlier?.whole(want) { bytes = known } else { bytes = try await hashes(path, [.whole(want)]).whole(want) }
        let basis = "\(stored.algorithm)"
        return bytes == stored.bytes ? .same(basis: basis) : .differs(basis: basis)
    }

    /// `FileHashes.read` on the blocking pool (a file read is a blocking call).
    private func hashes(_ path: String, _ wants: [FileHashes.Want]) async throws -> FileHashes {
        try await BlockingPool.shared.run { try FileHashes.read(path, wanting: wants) }
    }

    /// What a `HeadObject` found.
    private enum HeadAnswer {
        /// No such object (404).
        case gone
        /// 400 or 403: an SSE-C object asked for without its key, a policy that allows listing
        /// but not reading; nothing to compare.
        case refused
        case found(S3ObjectHead)
    }

    /// `HeadObject` with checksum mode.
    private func ask(_ location: S3Location, partNumber: Int? = nil) async throws -> HeadAnswer {
        do {
            return try await client.headObject(location, partNumber: partNumber).map(HeadAnswer.found) ?? .gone
        } catch let error as S3Error where error.status == 400 || error.status == 403 {
            return .refused
        }
    }

    /// The part size of a multipart object of `size` bytes in `partCount` parts: part 1's
    /// length (`HeadObject ?partNumber=1`), else sluice's default plan's or the AWS CLI's 8 MiB,
    /// whichever cuts `size` into `partCount` parts; nil when none does.
    private func partSize(_ location: S3Location, size: Int64, partCount: Int?) async throws -> Int64? {
        guard let partCount, partCount >= 1 else { return nil }
        func fits(_ partSize: Int64?) -> Bool {
            guard let partSize, partSize > 0 else { return false }
            return (size + partSize - 1) / partSize == Int64(partCount) || (size == 0 && partCount == 1)
        }
        if case .found(let first) = try await ask(location, partNumber: 1), first.partsCount == nil || first.partsCount == partCount,
            fits(first.length)
        {
            return first.length
        }
        let sluiceDefault = try? S3PartPlan(length: size).partSize
        if fits(sluiceDefault) { return sluiceDefault }
        return fits(Self.awsCLIPartSize) ? Self.awsCLIPartSize : nil
    }

    /// 32 hex digits.
    package static func isMD5(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0 | 0x20) }
    }
}

/// Checksums of one file computed in one read: of the whole file, or of each part of a size.
package struct FileHashes: Sendable {
    /// A hash function.
    package enum Kind: Hashable, Sendable {
        case md5
        case checksum(ChecksumAlgorithm)
    }

    /// What to compute.
    package enum Want: Hashable, Sendable {
        case whole(Kind)
        case parts(Kind, size: Int64)
    }

    private var results: [Want: [[UInt8]]] = [:]

    /// The whole file's `kind` hash, if it was asked for.
    package func whole(_ kind: Kind) -> [UInt8]? { results[.whole(kind)]?.first }

    /// Each part's `kind` hash, if it was asked for.
    package func parts(_ kind: Kind, size: Int64) -> [[UInt8]]? { results[.parts(kind, size: size)] }

    /// Reads the file at `path` once and computes `wants`.
    ///
    /// - Throws: The file's error (`ByteSourceError`).
    package static func read(_ path: String, wanting wants: [Want]) throws -> FileHashes {
        let file = try FileByteSource(path: path)
        defer { file.close() }
        let hashers = wants.map(RangeHasher.init)
        try file.forEachChunk { chunk in
            for hasher in hashers { hasher.update(chunk) }
        }
        var hashes = FileHashes()
        for (want, hasher) in zip(wants, hashers) { hashes.results[want] = hasher.finish() }
        return hashes
    }
}

/// One `FileHashes.Want`: a hash of the whole input, or one per `size` bytes of it.
private final class RangeHasher {
    private let kind: FileHashes.Kind
    private let partSize: Int64?
    private var current: AnyHasher
    private var inPart: Int64 = 0
    private var parts: [[UInt8]] = []

    package init(_ want: FileHashes.Want) {
        switch want {
        case .whole(let kind): (self.kind, partSize) = (kind, nil)
        case .parts(let kind, let size): (self.kind, partSize) = (kind, size)
        }
        current = AnyHasher(kind)
    }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let partSize else { return current.update(bytes) }
        var rest = bytes[...]
        while !rest.isEmpty {
            let take = Int(min(Int64(rest.count), partSize - inPart))
            current.update(UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            rest = rest.dropFirst(take)
            inPart += Int64(take)
            if inPart == partSize {
                parts.append(current.finish())
                current = AnyHasher(kind)
                inPart = 0
            }
        }
    }

    package func finish() -> [[UInt8]] {
        if partSize == nil || inPart > 0 || parts.isEmpty { parts.append(current.finish()) }
        return parts
    }
}

/// An MD5 or a `ChecksumHasher`, behind one face.
private enum AnyHasher {
    case md5(Digest)
    case checksum(ChecksumHasher)

    package init(_ kind: FileHashes.Kind) {
        switch kind {
        case .md5: self = .md5(Digest(.md5))
        case .checksum(let algorithm): self = .checksum(ChecksumHasher(algorithm))
        }
    }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .md5(let digest): digest.update(bytes)
        case .checksum(let hasher): hasher.update(bytes)
        }
    }

    package func finish() -> [UInt8] {
        switch self {
        case .md5(let digest): return digest.finalize()
        case .checksum(let hasher): return hasher.finalize().bytes
        }
    }
}
