#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The keyed operations of a store of a protocol's resume records: the one load, save, lock and
/// removal every protocol uses (`TusStateStore`, `S3StateStore`), each failure made the
/// protocol's error once (`StoredRecord.storeFailure`).
extension RecordStore where Record: StoredRecord {
    /// A store of records in `directory`.
    ///
    /// - Parameter directory: nil for `defaultDirectory`.
    public init(directory: String? = nil) {
        self.init(directory: directory ?? Self.defaultDirectory)
    }

    /// `$XDG_CACHE_HOME/sluice/<Record.storeName>`, else `$HOME/.cache/sluice/<Record.storeName>`.
    public static var defaultDirectory: String { defaultDirectory(Record.storeName) }

    /// The record file for `key` (`StoredRecord.storeKey`).
    public func path(key: [String]) -> String { path(key) }

    /// The record file for `record`'s key.
    public func path(of record: Record) -> String { path(record.storeKey) }

    /// Whether there is a file (readable or not) where the record for `key` goes: one `lstat`,
    /// no read.
    package func hasRecord(key: [String]) -> Bool {
        var info = stat()
        return lstat(path(key), &info) == 0
    }

    /// The stored record for `key`, or nil when there is none.
    ///
    /// - Throws: The protocol's error for `.read` when the file exists but cannot be read or
    ///   decoded, or holds a record that cannot be used (`StoredRecord.problem(forKey:)`).
    public func load(key: [String]) throws(Record.StoreFailure) -> Record? {
        let path = path(key)
        let record: Record?
        do { record = try load(at: path) } catch {
            let reason = error is DecodingError ? "it is not a resume record (truncated or edited)" : FileSystemReason.text(for: error)
            throw failure(.read, path: path, key: key, reason: reason, underlying: error)
        }
        if let record, let problem = record.problem(forKey: key) {
            throw failure(.read, path: path, key: key, reason: problem, underlying: nil)
        }
        return record
    }

    /// Stores `record` durably and atomically.
    ///
    /// - Throws: The protocol's error for `.write`.
    public func save(_ record: Record) throws(Record.StoreFailure) {
        let path = path(of: record)
        do { try save(record, at: path) } catch {
            throw failure(.write(record), path: path, key: record.storeKey, reason: FileSystemReason.text(for: error), underlying: error)
        }
    }

    /// Makes sure records can be written here, before anything is done that would need one:
    /// the directory exists (it is created) and is a writable directory.
    ///
    /// - Throws: The protocol's error for `.prepare`, naming the directory and what is wrong.
    public func prepare() throws(Record.StoreFailure) {
        do throws(RecordStoreError) { try prepareDirectory() } catch {
            throw failure(.prepare, path: directory, key: [], reason: "\(error)", underlying: error)
        }
    }

    /// Takes the lock of the record for `key` for this run (the directory must exist:
    /// `prepare`). Hold it until the upload ends.
    ///
    /// - Throws: The protocol's error for `.lock`: `held` when another run holds it (the
    ///   reason names its pid).
    package func lock(key: [String]) throws(Record.StoreFailure) -> RecordLock {
        let path = path(key)
        do throws(RecordLockError) { return try RecordLock.acquire(path) } catch {
            let held = if case .held = error.problem { true } else { false }
            throw failure(.lock(held: held), path: path, key: key, reason: "\(error)", underlying: error)
        }
    }

    /// Removes the record for `key`, whatever its file holds.
    ///
    /// - Returns: Whether a record was removed.
    @discardableResult
    public func remove(key: [String]) -> Bool {
        removeCompanions(key: key)
        return remove(at: path(key))
    }

    /// Removes `record`, if it is stored.
    public func remove(_ record: Record) { remove(key: record.storeKey) }

    private func removeCompanions(key: [String]) {
        for name in Record.companionExtensions { unlink(path(key, extension: name)) }
    }

    /// The file kept beside the record for `key` with extension `name` (one of
    /// `Record.companionExtensions`), removed with the record.
    package func companionPath(key: [String], extension name: String) -> String {
        precondition(Record.companionExtensions.contains(name), "\(name) is not a companion of \(Record.storeName) records")
        return path(key, extension: name)
    }

    /// Every record in the directory that can be read and that `isIncluded`.
    public func records(where isIncluded: (Record) -> Bool) -> [Record] {
        all().map(\.record).filter(isIncluded)
    }

    /// Removes every record that `isIncluded`.
    ///
    /// - Returns: How many records were removed.
    @discardableResult
    public func removeAll(where isIncluded: (Record) -> Bool) -> Int {
        all().filter { entry in
            guard isIncluded(entry.record) else { return false }
            removeCompanions(key: entry.record.storeKey)
            return remove(at: entry.path)
        }.count
    }

    private func failure(
        _ operation: RecordStoreFailure<Record>.Operation, path: String, key: [String], reason: String, underlying: (any Error)?
    ) -> Record.StoreFailure {
        Record.storeFailure(
            RecordStoreFailure(operation: operation, path: path, subject: Record.subject(ofKey: key), reason: reason, underlying: underlying))
    }
}
