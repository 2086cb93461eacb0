import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory of JSON records, one file per key, written durably: to a temporary file in the
/// same directory, `fsync`ed, renamed over the old one, and the directory `fsync`ed. After
/// SIGKILL or a power cut a record is the old one or the new one, never a torn one.
///
/// The one store of the resume records of tus and S3 uploads: `TusStateStore` and
/// `S3StateStore` are this store of each protocol's `StoredRecord` (`RecordStore+Records`);
/// the journals of jobs and presigned parts are named by it (`path(_:extension:)`).
public struct RecordStore<Record: Codable & Sendable>: Sendable {
    /// The directory the records live in.
    public let directory: String

    /// A store of records in `directory`.
    public init(directory: String) {
        self.directory = directory
    }

    /// `$XDG_CACHE_HOME/sluice/<name>`, else `$HOME/.cache/sluice/<name>`.
    package static func defaultDirectory(_ name: String) -> String {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/sluice/" + name }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.cache/sluice/" + name
    }

    /// The file for the record keyed by `parts` (a hash of them: any text is a safe key).
    package func path(_ parts: String...) -> String { path(parts) }

    /// The file for the record keyed by `parts` (a hash of them: any text is a safe key).
    ///
    /// - Parameter extension: The file's extension: `json` for a record, `journal` for a
    ///   journal (`Journal`) named the same way.
    package func path(_ parts: [String], extension: String = "json") -> String {
        let digest = Digest(.sha256)
        digest.update(Array(parts.joined(separator: "\n").utf8))
        return directory + "/" + digest.finalizeHex().prefix(32) + "." + `extension`
    }

    /// The most bytes a record file may hold: records are a few KiB; a larger file (a symlink
    /// to `/dev/zero`, an edit gone wrong) is refused before it is read.
    package static var recordLimit: Int { 1 << 20 }

    /// The record at `path`, or nil when there is none.
    ///
    /// - Throws: `SmallFile.Failure` when the file exists but cannot be read (not a regular
    ///   file, larger than `recordLimit`), or the decoding error.
    package func load(at path: String) throws -> Record? {
        guard let bytes = try SmallFile.read(path, limit: Self.recordLimit) else { return nil }
        return try JSONDecoder().decode(Record.self, from: Data(bytes))
    }

    /// Every record in the directory that can be read, in file-name order.
    package func all() -> [(path: String, record: Record)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.sorted().compactMap { name in
            let path = directory + "/" + name
            guard name.hasSuffix(".json"), let record = (try? load(at: path)) ?? nil else { return nil }
            return (path, record)
        }
    }

    /// Makes sure records can be written here before anything is done that would need one:
    /// the directory exists (it is created) and is a writable directory.
    ///
    /// - Throws: `RecordStoreError` whose description is the reason in a few words.
    package func prepareDirectory() throws(RecordStoreError) {
        guard !directory.isEmpty else { throw RecordStoreError(call: nil, code: ENOENT) }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw RecordStoreError(call: nil, code: FileSystemReason.errno(of: error) ?? EIO)
        }
        guard access(directory, W_OK | X_OK) == 0 else { throw RecordStoreError(call: nil, code: errno) }
    }

    /// Stores `record` at `path` durably and atomically.
    ///
    /// - Throws: `RecordStoreError` naming the system call that failed, or the encoding error.
    package func save(_ record: Record, at path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        do {
            try prepareDirectory()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try Self.writeSynced(try encoder.encode(record), to: temporary)
            guard rename(temporary, path) == 0 else { throw RecordStoreError(call: "rename", code: errno) }
            try Self.syncDirectory(directory)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Removes the record at `path`, if any, and syncs the directory.
    ///
    /// - Returns: Whether a record was removed.
    @discardableResult
    package func remove(at path: String) -> Bool {
        guard unlink(path) == 0 else { return false }
        try? Self.syncDirectory(directory)
        return true
    }

    private static func writeSynced(_ data: Data, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw RecordStoreError(call: "open", code: errno) }
        defer { close(descriptor) }
        let failure: Errno? = data.withUnsafeBytes { raw in
            do throws(Errno) { try Syscall.writeAll(descriptor, raw) } catch { return error }
            return nil
        }
        if let failure { throw RecordStoreError(call: "write", code: failure.code) }
        guard fsync(descriptor) == 0 else { throw RecordStoreError(call: "fsync", code: errno) }
    }

    private static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw RecordStoreError(call: "open directory", code: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw RecordStoreError(call: "fsync directory", code: errno) }
    }
}

/// A system call of `RecordStore` failed.
package struct RecordStoreError: Error, CustomStringConvertible {
    /// The call that failed, when it says more than the reason (`fsync directory`).
    package var call: String?
    package var code: Int32
    package var description: String {
        let reason = FileSystemReason.text(errno: code)
        return call.map { "\($0): \(reason)" } ?? reason
    }
}
