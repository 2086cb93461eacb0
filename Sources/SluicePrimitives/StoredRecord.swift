/// A record a `RecordStore` keeps between runs (a tus upload's, an S3 multipart upload's): it
/// says what it is the record of, and what its protocol's error is when the store fails.
///
/// Each protocol brings its record type; the store, its files, their names and their locks are
/// the same for all of them (`RecordStore`'s keyed operations).
public protocol StoredRecord: Codable, Sendable {
    /// The error a store of these records throws: the protocol's own (`TusError`, `S3Error`).
    associatedtype StoreFailure: Error

    /// The store's folder under the cache directory (`tus`, `s3`).
    static var storeName: String { get }

    /// What the record is of, as the texts its file is named by (hashed: any text is a safe key).
    var storeKey: [String] { get }

    /// What a key is the record of, in words for messages ("FILE to s3://BUCKET/KEY").
    static func subject(ofKey key: [String]) -> String

    /// What a message about a record that cannot be read ends with: what to do, with its
    /// punctuation ("; restart the upload to forget it").
    static var unreadableAdvice: String { get }

    /// Why a record read back for `key` cannot be used (another format version, another
    /// object's record), or nil when it can. By default every record that decodes can.
    func problem(forKey key: [String]) -> String?

    /// The protocol's error for a failure of the store: made once, here, from its typed account.
    static func storeFailure(_ failure: RecordStoreFailure<Self>) -> StoreFailure

    /// The extensions of files kept beside a record under its name (`RecordStore.path(_:extension:)`:
    /// a journal of its parts), removed with it. By default none.
    static var companionExtensions: [String] { get }
}

extension StoredRecord {
    public static var companionExtensions: [String] { [] }

    public func problem(forKey key: [String]) -> String? { nil }
}

/// What went wrong with a `RecordStore` of `Record`s, in fields: which operation, the file (or
/// the directory), the reason in a few words and the error behind it.
public struct RecordStoreFailure<Record: StoredRecord>: Error, CustomStringConvertible {
    /// The store's operations that can fail.
    public enum Operation: Sendable {
        /// A record file exists but cannot be read, decoded, or used (`StoredRecord.problem`).
        case read
        /// A record cannot be written (the record it was to hold).
        case write(Record)
        /// The directory cannot be created or written to.
        case prepare
        /// The record's lock cannot be taken; `held` when another run holds it.
        case lock(held: Bool)
    }

    /// What the store was doing.
    public var operation: Operation
    /// The record file, or for `.prepare` the directory.
    public var path: String
    /// What the record is of (`StoredRecord.subject(ofKey:)`).
    public var subject: String
    /// The reason in a few words.
    public var reason: String
    /// The error behind it (`SmallFile.Failure`, `RecordStoreError`, `RecordLockError`, a
    /// `DecodingError`), nil for a record that decodes but cannot be used.
    public var underlying: (any Error)?

    /// Another run holds the record's lock.
    public var isHeld: Bool { if case .lock(held: true) = operation { true } else { false } }

    /// The record a `.write` was to store.
    public var record: Record? { if case .write(let record) = operation { record } else { nil } }

    /// "cannot read the resume state PATH: REASON ADVICE", and likewise for each operation.
    public var description: String {
        switch operation {
        case .read: "cannot read the resume state \(path): \(reason)\(Record.unreadableAdvice)"
        case .write: "cannot write the resume state \(path): \(reason)"
        case .prepare: "cannot use the resume state directory \(path): \(reason)"
        case .lock: "the resume state \(path) of \(subject): \(reason)"
        }
    }
}
