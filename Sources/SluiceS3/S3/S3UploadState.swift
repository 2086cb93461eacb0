import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams
import SluiceTransport

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

/// A directory of `S3UploadRecord`s, one JSON file per (endpoint, bucket, key, source).
///
/// - Important: A record is written to a temporary file in the same directory, `fsync`ed,
///   renamed over the old one, and the directory is `fsync`ed: after SIGKILL or a power cut
///   the record is the old one or the new one, never a torn one.
public struct S3StateStore: Sendable {
    /// The directory the records live in.
    public let directory: String
    private let store: RecordStore<S3UploadRecord>

    /// A store of records in `directory`.
    ///
    /// - Parameter directory: nil for `defaultDirectory`.
    public init(directory: String? = nil) {
        self.directory = directory ?? Self.defaultDirectory
        store = RecordStore(directory: self.directory)
    }

    /// `$XDG_CACHE_HOME/sluice/s3`, else `$HOME/.cache/sluice/s3`.
    public static var defaultDirectory: String { RecordStore<S3UploadRecord>.defaultDirectory("s3") }

    /// The record file for an object and a source.
    public func path(endpoint: String, bucket: String, key: String, source: String) -> String {
        store.path(endpoint, bucket, key, source)
    }

    /// The record file for `record`'s object and source.
    public func path(of record: S3UploadRecord) -> String {
        path(endpoint: record.endpoint, bucket: record.bucket, key: record.key, source: record.source)
    }

    /// Whether there is a file (readable or not) where the record for an object and a source
    /// goes: one `lstat`, no read.
    package func hasRecord(endpoint: String, bucket: String, key: String, source: String) -> Bool {
        var info = stat()
        return lstat(path(endpoint: endpoint, bucket: bucket, key: key, source: source), &info) == 0
    }

    /// The stored record, or nil when there is none.
    ///
    /// - Throws: `S3Error` with code `.state` when the file exists but cannot be read.
    public func load(endpoint: String, bucket: String, key: String, source: String) throws -> S3UploadRecord? {
        let path = path(endpoint: endpoint, bucket: bucket, key: key, source: source)
        do {
            guard let record = try store.load(at: path) else { return nil }
            guard record.version == S3UploadRecord.currentVersion else {
                throw S3Error(.state, "format version \(record.version), this sluice reads \(S3UploadRecord.currentVersion)")
            }
            if let problem = record.problem(endpoint: endpoint, bucket: bucket, key: key, source: source) {
                throw S3Error(.state, problem)
            }
            return record
        } catch {
            let reason = error is DecodingError ? "it is not a resume record (truncated or edited)" : FileSystemReason.text(for: error)
            throw S3Error(.state, "cannot read the resume state \(path): \(reason); restart the upload to forget it", underlying: error)
        }
    }

    /// Takes the lock of the record for an object and a source for this run (the directory
    /// must exist: `prepare`). Hold it until the upload ends.
    ///
    /// - Throws: `S3Error` with code `.inUse` (another run holds it, named by its pid) or `.state`.
    package func lock(endpoint: String, bucket: String, key: String, source: String) throws -> RecordLock {
        let path = path(endpoint: endpoint, bucket: bucket, key: key, source: source)
        do throws(RecordLockError) { return try RecordLock.acquire(path) } catch {
            let held = if case .held = error.problem { true } else { false }
            throw S3Error(held ? .inUse : .state, "the resume state \(path) of \(source) to s3://\(bucket)/\(key): \(error)", underlying: error)
        }
    }

    /// Makes sure records can be written here: the directory exists (it is created) and is a
    /// writable directory.
    ///
    /// - Throws: `S3Error` with code `.stateDirectory`, naming the directory and what is wrong.
    public func prepare() throws {
        do { try store.prepare() } catch {
            throw S3Error(.stateDirectory, "cannot use the resume state directory \(directory): \(error)", underlying: error)
        }
    }

    /// Removes the record file for an object and a source, whatever it holds.
    public func removeRecord(endpoint: String, bucket: String, key: String, source: String) {
        store.remove(at: path(endpoint: endpoint, bucket: bucket, key: key, source: source))
    }

    /// Every record in the directory for `bucket`/`key` at `endpoint`, whatever the source.
    public func records(endpoint: String, bucket: String, key: String) -> [S3UploadRecord] {
        store.all().map(\.record).filter { $0.endpoint == endpoint && $0.bucket == bucket && $0.key == key }
    }

    /// Stores `record` durably and atomically.
    ///
    /// - Throws: `S3Error` with code `.state`.
    public func save(_ record: S3UploadRecord) throws {
        let path = path(of: record)
        do {
            try store.save(record, at: path)
        } catch {
            throw S3Error(
                .state, "cannot write the resume state \(path): \(FileSystemReason.text(for: error))", uploadID: record.uploadID,
                underlying: error)
        }
    }

    /// Removes the record, if any (and syncs the directory).
    public func remove(_ record: S3UploadRecord) {
        store.remove(at: path(of: record))
    }
}
