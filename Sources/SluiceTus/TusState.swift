import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams
import SluiceTransport

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

/// A directory of `TusRecord`s, one JSON file per (endpoint, source identity).
///
/// - Important: A record is written to a temporary file, `fsync`ed, renamed over the old one,
///   and the directory is `fsync`ed: after SIGKILL or a power cut the record is the old one
///   or the new one, never a torn one.
public struct TusStateStore: Sendable {
    /// The directory the records live in.
    public let directory: String
    private let store: RecordStore<TusRecord>

    /// A store of records in `directory`.
    ///
    /// - Parameter directory: `nil` for `defaultDirectory`.
    public init(directory: String? = nil) {
        self.directory = directory ?? Self.defaultDirectory
        store = RecordStore(directory: self.directory)
    }

    /// `$XDG_CACHE_HOME/sluice/tus`, else `$HOME/.cache/sluice/tus`.
    public static var defaultDirectory: String { RecordStore<TusRecord>.defaultDirectory("tus") }

    /// The record file for (endpoint, identity).
    public func path(endpoint: String, identity: String) -> String {
        store.path(endpoint, identity)
    }

    /// The stored record, or nil when there is none.
    ///
    /// - Throws: `TusError` with code `.state` when the file exists but cannot be read or parsed.
    public func load(endpoint: String, identity: String) throws -> TusRecord? {
        let path = path(endpoint: endpoint, identity: identity)
        do {
            return try store.load(at: path)
        } catch {
            let reason = error is DecodingError ? "it is not a resume record (truncated or edited)" : FileSystemReason.text(for: error)
            throw TusError(.state, "cannot read the resume state \(path): \(reason) (remove it to start over)", underlying: error)
        }
    }

    /// Stores `record` durably and atomically.
    ///
    /// - Throws: `TusError` with code `.state`.
    public func save(_ record: TusRecord) throws {
        let path = path(endpoint: record.endpoint, identity: record.identity)
        do {
            try store.save(record, at: path)
        } catch {
            throw TusError(
                .state, "cannot write the resume state \(path): \(FileSystemReason.text(for: error))", uploadURL: record.uploadURL,
                underlying: error)
        }
    }

    /// Makes sure records can be written here, before an upload exists that would need one:
    /// the directory exists (it is created) and is a writable directory.
    ///
    /// - Throws: `TusError` with code `.state`, naming the directory and what is wrong.
    public func prepare() throws {
        do { try store.prepare() } catch {
            throw TusError(.state, "cannot use the resume state directory \(directory): \(error)", underlying: error)
        }
    }

    /// Takes the lock of the record for (endpoint, identity) for this run (the directory must
    /// exist: `prepare`). Hold it until the upload ends.
    ///
    /// - Throws: `TusError` with code `.inUse` (another run holds it, named by its pid) or `.state`.
    package func lock(endpoint: String, identity: String) throws -> RecordLock {
        let path = path(endpoint: endpoint, identity: identity)
        do throws(RecordLockError) { return try RecordLock.acquire(path) } catch {
            let held = if case .held = error.problem { true } else { false }
            throw TusError(held ? .inUse : .state, "the resume state \(path) of \(identity) to \(endpoint): \(error)", underlying: error)
        }
    }

    /// Removes the record for (endpoint, identity), if any.
    public func remove(endpoint: String, identity: String) {
        store.remove(at: path(endpoint: endpoint, identity: identity))
    }

    /// Removes every record that points at `uploadURL`.
    ///
    /// - Returns: How many records were removed.
    @discardableResult
    public func remove(uploadURL: String) -> Int {
        store.all().filter { $0.record.uploadURL == uploadURL && store.remove(at: $0.path) }.count
    }
}
