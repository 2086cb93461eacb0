#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keys kept on disk in the order they were added, then read back once in that order: what a
/// sync is to delete, held until the walk has ended without an error, in a few KiB of memory
/// however many keys there are.
///
/// The file is an unnamed temporary file (`tmpfile`): it goes when the spool is closed or the
/// process ends, whatever way it ends.
///
/// - Important: Not thread-safe: one owner (`S3SyncPlanner`) uses it.
final class KeySpool {
    private var file: UnsafeMutablePointer<FILE>?
    /// Keys added.
    private(set) var count = 0
    private var reading = false

    /// Opens an empty spool.
    ///
    /// - Throws: `KeySpoolError` when no temporary file can be made.
    init() throws(KeySpoolError) {
        guard let file = tmpfile() else { throw KeySpoolError(operation: "tmpfile", errno: errno) }
        self.file = file
    }

    /// Adds `key` at the end.
    func append(_ key: String) throws(KeySpoolError) {
        guard let file, !reading else { preconditionFailure("KeySpool.append after reading began or after close") }
        var length = UInt32(key.utf8.count).littleEndian
        var bytes = Array(key.utf8)
        let ok =
            withUnsafeBytes(of: &length) { fwrite($0.baseAddress, 1, 4, file) == 4 }
            && bytes.withUnsafeMutableBytes { $0.isEmpty || fwrite($0.baseAddress, 1, $0.count, file) == $0.count }
        guard ok else { throw KeySpoolError(operation: "write", errno: errno) }
        count += 1
    }

    /// The next key, from the first added; nil after the last.
    func next() throws(KeySpoolError) -> String? {
        guard let file else { return nil }
        if !reading {
            reading = true
            guard fflush(file) == 0, fseek(file, 0, SEEK_SET) == 0 else { throw KeySpoolError(operation: "seek", errno: errno) }
        }
        var length: UInt32 = 0
        let got = withUnsafeMutableBytes(of: &length) { fread($0.baseAddress, 1, 4, file) }
        if got == 0, feof(file) != 0 { return nil }
        guard got == 4 else { throw KeySpoolError(operation: "read", errno: errno) }
        var bytes = [UInt8](repeating: 0, count: Int(UInt32(littleEndian: length)))
        let read = bytes.withUnsafeMutableBytes { $0.isEmpty ? 0 : fread($0.baseAddress, 1, $0.count, file) }
        guard read == bytes.count else { throw KeySpoolError(operation: "read", errno: errno) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Closes and removes the file; called once, when the spool is done with.
    func close() {
        if let file { fclose(file) }
        file = nil
    }
}

/// A `KeySpool`'s file could not be made, written or read.
struct KeySpoolError: Error, Sendable, CustomStringConvertible {
    var operation: String
    var errno: Int32

    var description: String { "the list of objects to delete: \(operation) of a temporary file failed: \(String(cString: strerror(errno)))" }
}
