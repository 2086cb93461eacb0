import Foundation
#if canImport(Glibc)
import Glibc
#endif
@_spi(Floors) import SluicePrimitives
import SluiceByteSources

/// What identifies a source file's content cheaply: device, inode, size, modification and
/// change times (nanoseconds). A rewrite in place changes `mtime`/`ctime`; a replacement by
/// rename changes the inode. For a synthetic source, only the size (and the identity's seed).
public struct S3SourceFingerprint: Codable, Sendable, Equatable {
    /// The size in bytes.
    public var size: Int64
    /// The device number, `nil` for a source that is not a file.
    public var device: UInt64?
    /// The inode number, `nil` for a source that is not a file.
    public var inode: UInt64?
    /// The modification time in nanoseconds since 1970, `nil` for a source that is not a file.
    public var modificationTime: Int64?
    /// The inode change time in nanoseconds since 1970, `nil` for a source that is not a file.
    public var changeTime: Int64?

    /// A fingerprint of these values.
    public init(size: Int64, device: UInt64? = nil, inode: UInt64? = nil, modificationTime: Int64? = nil, changeTime: Int64? = nil) {
        self.size = size
        self.device = device
        self.inode = inode
        self.modificationTime = modificationTime
        self.changeTime = changeTime
    }

    /// `stat(2)` of `path`.
    ///
    /// - Throws: `S3Error` with code `.source`.
    public init(path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            throw S3Error(.source, "cannot stat \(path): \(String(cString: strerror(code)))")
        }
        self.init(
            size: Int64(info.st_size), device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
            modificationTime: info.st_mtim.nanosecondsSince1970, changeTime: info.st_ctim.nanosecondsSince1970)
    }

    /// The file as it was when `file` opened it (its `fstat`): the bytes the upload reads,
    /// whatever the path names since.
    package init(file: FileByteSource) {
        self.init(
            size: file.length, device: file.device, inode: file.inode,
            modificationTime: file.timesInNanoseconds.modification, changeTime: file.timesInNanoseconds.change)
    }

    /// What differs from `stored`, in words, or nil when nothing does.
    public func difference(from stored: S3SourceFingerprint) -> String? {
        if size != stored.size { return "its size is \(size), was \(stored.size)" }
        if inode != stored.inode || device != stored.device {
            return "it is another file now (inode \(inode.map(String.init) ?? "-"), was \(stored.inode.map(String.init) ?? "-"))"
        }
        if modificationTime != stored.modificationTime { return "its modification time changed" }
        if changeTime != stored.changeTime { return "its inode change time changed" }
        return nil
    }
}

/// What Sluice keeps about one multipart upload between runs, written before the first part.
public struct S3UploadRecord: Codable, Sendable, Equatable {
    /// The format; a record of another version is not read.
    public var version: Int
    /// The endpoint (or `aws:REGION`) the upload lives at.
    public var endpoint: String
    /// The bucket.
    public var bucket: String
    /// The object's key.
    public var key: String
    /// The multipart upload's id.
    public var uploadID: String
    /// Which source: `file:/absolute/path`, `synthetic:LEN:SEED`.
    public var source: String
    /// What the source was when the upload began; a different one is refused.
    public var fingerprint: S3SourceFingerprint
    /// The part size and count the upload was made with.
    public var plan: S3PartPlan
    /// The checksum algorithm the parts are sent with, if any.
    public var checksum: ChecksumAlgorithm?
    /// The checksum type the upload was created with (nil in records written before it was kept).
    public var checksumType: S3ChecksumType?
    /// `S3CustomerKey.fingerprint` of the SSE-C key the upload was created with, never the key.
    public var customerKeyFingerprint: String?
    /// When the upload was created (seconds since 1970).
    public var createdAt: Double

    /// The record format written now; a record of another version is refused.
    public static let currentVersion = 1

    /// A record of an upload begun at `createdAt` (seconds since 1970).
    public init(
        endpoint: String, bucket: String, key: String, uploadID: String, source: String,
        fingerprint: S3SourceFingerprint, plan: S3PartPlan, checksum: ChecksumAlgorithm?, createdAt: Double
    ) {
        self.version = Self.currentVersion
        self.endpoint = endpoint
        self.bucket = bucket
        self.key = key
        self.uploadID = uploadID
        self.source = source
        self.fingerprint = fingerprint
        self.plan = plan
        self.checksum = checksum
        self.createdAt = createdAt
    }
}

extension S3UploadRecord {
    /// Why the record cannot be the one asked for, or be resumed: another object's or
    /// source's record (a copied file), or a plan S3 would refuse (an edited file). Nil when
    /// it is sound.
    package func problem(endpoint: String, bucket: String, key: String, source: String) -> String? {
        guard self.endpoint == endpoint, self.bucket == bucket, self.key == key, self.source == source else {
            return "it is the record of \(self.source) to s3://\(self.bucket)/\(self.key) at \(self.endpoint)"
        }
        guard !uploadID.isEmpty else { return "it names no upload" }
        guard let length = plan.length, length == fingerprint.size, length >= 0, plan.equalParts,
            (S3PartPlan.minimumPartSize...S3PartPlan.maximumPartSize).contains(plan.partSize),
            let count = plan.partCount, count <= S3PartPlan.maximumParts
        else {
            return "its part plan (\(plan.partSize)-byte parts of \(plan.length.map(String.init) ?? "?") bytes) is not one S3 accepts"
        }
        return nil
    }
}

extension S3UploadRecord: StoredRecord {
    /// Records live in `sluice/s3` under the cache directory.
    public static var storeName: String { "s3" }

    /// (endpoint, bucket, key, source).
    public var storeKey: [String] { [endpoint, bucket, key, source] }

    /// "SOURCE to s3://BUCKET/KEY".
    public static func subject(ofKey key: [String]) -> String {
        key.count == 4 ? "\(key[3]) to s3://\(key[1])/\(key[2])" : key.joined(separator: " ")
    }

    /// Another format version, or `problem(endpoint:bucket:key:source:)`.
    public func problem(forKey key: [String]) -> String? {
        guard version == Self.currentVersion else { return "format version \(version), this sluice reads \(Self.currentVersion)" }
        guard key.count == 4 else { return "it is not the record asked for" }
        return problem(endpoint: key[0], bucket: key[1], key: key[2], source: key[3])
    }

    /// What to do with a record that cannot be read.
    public static var unreadableAdvice: String { "; restart the upload to forget it" }

    /// `S3Error` with code `.state` (`.stateDirectory` for a directory that cannot be used,
    /// `.inUse` when another run holds the record's lock).
    public static func storeFailure(_ failure: RecordStoreFailure<S3UploadRecord>) -> S3Error {
        let code: S3Error.Code = if failure.isHeld { .inUse } else if case .prepare = failure.operation { .stateDirectory } else { .state }
        return S3Error(code, "\(failure)", uploadID: failure.record?.uploadID, underlying: failure.underlying)
    }
}

/// The store of `S3UploadRecord`s, one JSON file per (endpoint, bucket, key, source):
/// `RecordStore`'s keyed operations, `$XDG_CACHE_HOME/sluice/s3` by default.
///
/// - Important: A record is written to a temporary file in the same directory, `fsync`ed,
///   renamed over the old one, and the directory is `fsync`ed: after SIGKILL or a power cut
///   the record is the old one or the new one, never a torn one.
public typealias S3StateStore = RecordStore<S3UploadRecord>

extension RecordStore where Record == S3UploadRecord {
    /// The record file for an object and a source.
    public func path(endpoint: String, bucket: String, key: String, source: String) -> String {
        path(key: [endpoint, bucket, key, source])
    }

    /// Whether there is a file (readable or not) where the record for an object and a source
    /// goes: one `lstat`, no read; with `listing` (this store's directory, listed once for a
    /// job), no call at all, and no record name computed when the directory held none.
    package func hasRecord(endpoint: String, bucket: String, key: String, source: String, listing: Listing? = nil) -> Bool {
        if let listing, let names = listing.names(of: directory) {
            return !names.isEmpty && names.contains(path(endpoint: endpoint, bucket: bucket, key: key, source: source))
        }
        return hasRecord(key: [endpoint, bucket, key, source])
    }

    /// The record files a state directory held when first asked (one listing, taken at the
    /// first question, not when it is made), for a job that asks once a file whether a small
    /// file has a record to settle (`hasRecord`): a `PutObject` job of 5,000 files of 16 KiB
    /// spent 5 % of its CPU naming each file's record and looking for it on the disk.
    ///
    /// - Important: What it answers is the directory as it was at the first question. A
    ///   record that question can miss is one written later by another run sending the same
    ///   file to the same key at the same time, which a look per file misses as well when it
    ///   comes a moment after the look; a record the job writes itself is a larger file's,
    ///   under another key.
    package final class Listing: Sendable {
        private let listed = Lock<(directory: String, names: Set<String>?)?>(nil)

        /// A listing not yet taken.
        package init() {}

        /// The paths of the record files (`*.json`) in `directory` (none when it does not
        /// exist), listed the first time; nil when it cannot be listed (each question then goes
        /// to the disk), or when it was listed for another directory.
        package func names(of directory: String) -> Set<String>? {
            listed.withLock { listed in
                if let listed { return listed.directory == directory ? listed.names : nil }
                let names = Self.recordPaths(in: directory)
                listed = (directory, names)
                return names
            }
        }

        private static func recordPaths(in directory: String) -> Set<String>? {
            guard let stream = opendir(directory) else { return errno == ENOENT ? [] : nil }
            defer { closedir(stream) }
            var paths: Set<String> = []
            while true {
                errno = 0
                guard let entry = readdir(stream) else { return errno == 0 ? paths : nil }
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasSuffix(".json") { paths.insert(directory + "/" + name) }
            }
        }
    }

    /// The stored record, or nil when there is none.
    ///
    /// - Throws: `S3Error` with code `.state` when the file exists but cannot be read, or holds
    ///   a record of another version, object or source, or a plan S3 would refuse.
    public func load(endpoint: String, bucket: String, key: String, source: String) throws(S3Error) -> S3UploadRecord? {
        try load(key: [endpoint, bucket, key, source])
    }

    /// Takes the lock of the record for an object and a source for this run (the directory
    /// must exist: `prepare`). Hold it until the upload ends.
    ///
    /// - Throws: `S3Error` with code `.inUse` (another run holds it, named by its pid) or `.state`.
    package func lock(endpoint: String, bucket: String, key: String, source: String) throws(S3Error) -> RecordLock {
        try lock(key: [endpoint, bucket, key, source])
    }

    /// Removes the record file for an object and a source, whatever it holds.
    public func removeRecord(endpoint: String, bucket: String, key: String, source: String) {
        remove(key: [endpoint, bucket, key, source])
    }

    /// Every record in the directory for `bucket`/`key` at `endpoint`, whatever the source.
    public func records(endpoint: String, bucket: String, key: String) -> [S3UploadRecord] {
        records { $0.endpoint == endpoint && $0.bucket == bucket && $0.key == key }
    }
}
