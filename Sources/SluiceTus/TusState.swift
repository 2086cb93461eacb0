import Foundation
import SluicePrimitives

/// What Sluice keeps about one upload between runs.
public struct TusRecord: Codable, Sendable, Equatable {
    /// The creation endpoint the upload was made at.
    public var endpoint: String
    /// `TusSource.identity` of the source.
    public var identity: String
    /// The upload's URL, absolute.
    public var uploadURL: String
    /// The source's fingerprint when the upload was created.
    public var fingerprint: TusFingerprint
    /// When the upload was created (seconds since 1970).
    public var createdAt: Double

    /// A record of an upload created at `uploadURL` for this source and endpoint.
    public init(endpoint: String, identity: String, uploadURL: String, fingerprint: TusFingerprint, createdAt: Double) {
        self.endpoint = endpoint
        self.identity = identity
        self.uploadURL = uploadURL
        self.fingerprint = fingerprint
        self.createdAt = createdAt
    }
}

extension TusRecord: StoredRecord {
    /// Records live in `sluice/tus` under the cache directory.
    public static var storeName: String { "tus" }

    /// (endpoint, source identity).
    public var storeKey: [String] { [endpoint, identity] }

    /// "IDENTITY to ENDPOINT".
    public static func subject(ofKey key: [String]) -> String {
        key.count == 2 ? "\(key[1]) to \(key[0])" : key.joined(separator: " ")
    }

    /// What to do with a record that cannot be read.
    public static var unreadableAdvice: String { " (remove it to start over)" }

    /// `TusError` with code `.state` (`.inUse` when another run holds the record's lock).
    public static func storeFailure(_ failure: RecordStoreFailure<TusRecord>) -> TusError {
        TusError(failure.isHeld ? .inUse : .state, "\(failure)", uploadURL: failure.record?.uploadURL, underlying: failure.underlying)
    }
}

/// The store of `TusRecord`s, one JSON file per (endpoint, source identity): `RecordStore`'s
/// keyed operations, `$XDG_CACHE_HOME/sluice/tus` by default.
///
/// - Important: A record is written to a temporary file, `fsync`ed, renamed over the old one,
///   and the directory is `fsync`ed: after SIGKILL or a power cut the record is the old one
///   or the new one, never a torn one.
public typealias TusStateStore = RecordStore<TusRecord>

extension RecordStore where Record == TusRecord {
    /// The record file for (endpoint, identity).
    public func path(endpoint: String, identity: String) -> String {
        path(key: [endpoint, identity])
    }

    /// The stored record, or nil when there is none.
    ///
    /// - Throws: `TusError` with code `.state` when the file exists but cannot be read or parsed.
    public func load(endpoint: String, identity: String) throws(TusError) -> TusRecord? {
        try load(key: [endpoint, identity])
    }

    /// Takes the lock of the record for (endpoint, identity) for this run (the directory must
    /// exist: `prepare`). Hold it until the upload ends.
    ///
    /// - Throws: `TusError` with code `.inUse` (another run holds it, named by its pid) or `.state`.
    package func lock(endpoint: String, identity: String) throws(TusError) -> RecordLock {
        try lock(key: [endpoint, identity])
    }

    /// Removes the record for (endpoint, identity), if any.
    public func remove(endpoint: String, identity: String) {
        remove(key: [endpoint, identity])
    }

    /// Removes every record that points at `uploadURL`.
    ///
    /// - Returns: How many records were removed.
    @discardableResult
    public func remove(uploadURL: String) -> Int {
        removeAll { $0.uploadURL == uploadURL }
    }
}
