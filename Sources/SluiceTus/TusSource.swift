import Foundation
import SluicePrimitives
import SluiceByteSources

/// A random-access source with the identity a resumed upload is matched by.
///
/// The identity says *which* source this is (an absolute path, a synthetic spec, a name the
/// caller chooses); the fingerprint says whether its bytes are still the ones the stored
/// upload was started with.
///
/// Ownership: a source made with `init(file:...)` owns the `FileByteSource` it is given;
/// `close()` closes it (idempotent, thread-safe), and the file closes itself when the last
/// copy of the source goes away. A source made with `init(_:identity:...)` owns nothing: its
/// bytes belong to the caller, and `close()` does nothing.
public struct TusSource: Sendable {
    /// The bytes.
    public let bytes: any ByteSource
    /// Which source this is, stable across runs: `file:/absolute/path`, `synthetic:LEN:SEED`, ...
    public let identity: String
    /// The default `filename` metadata.
    public let name: String
    /// The file's modification time (seconds since 1970), a hint that it changed.
    public let modificationTime: Double?
    /// The file's device and inode numbers: a different pair means the path names another file.
    public let device: UInt64?
    /// The file's inode number, `nil` for a source that is not a file.
    public let inode: UInt64?
    /// The file's status change time (`ctime`, seconds since 1970): every write moves it, and
    /// unlike the modification time no `touch -r`, `cp -p` or `rsync -t` can set it back.
    public let changeTime: Double?

    private let file: FileByteSource?

    /// A source with what a resumed upload is matched by.
    ///
    /// - Parameters:
    ///   - bytes: The source.
    ///   - identity: Stable across runs for the same logical source.
    ///   - name: Sent as the `filename` metadata by default.
    ///   - modificationTime: When set, a different value on a later run counts as a change.
    ///   - device: With `inode`: when set, a different pair on a later run counts as a change.
    ///   - inode: See `device`.
    ///   - changeTime: When set, a different value on a later run counts as a change.
    public init(
        _ bytes: any ByteSource, identity: String, name: String? = nil, modificationTime: Double? = nil,
        device: UInt64? = nil, inode: UInt64? = nil, changeTime: Double? = nil
    ) {
        self.bytes = bytes
        self.identity = identity
        self.name = name ?? identity
        self.modificationTime = modificationTime
        self.device = device
        self.inode = inode
        self.changeTime = changeTime
        self.file = nil
    }

    /// A file, fingerprinted by its modification time, device, inode and status change time,
    /// and owned: `close()` closes it.
    ///
    /// - Parameters:
    ///   - file: The file; its path should be absolute, so that the identity is stable.
    ///   - identity: `file:` and the file's path by default.
    ///   - name: The last component of the file's path by default.
    public init(file: FileByteSource, identity: String? = nil, name: String? = nil) {
        self.bytes = file
        self.identity = identity ?? "file:\(file.path)"
        self.name = name ?? String(file.path.split(separator: "/").last ?? Substring(file.path))
        self.modificationTime = file.modificationTime
        self.device = file.device
        self.inode = file.inode
        self.changeTime = file.changeTime
        self.file = file
    }

    /// Closes the file a source made with `init(file:...)` holds; does nothing for others.
    /// Idempotent: a second call does nothing.
    public func close() {
        file?.close()
    }
}

/// What identifies a source's content cheaply: its length, SHA-256 of its first and last
/// MiB, and for a file its modification time, device and inode numbers and status change time
/// (`ctime`).
///
/// What it catches: a change of length; any change in the first or last MiB; a file replaced
/// by another (a new inode: editors that save by rename, `cp` over a moved file); any write,
/// truncation or `chmod`/`chown`/rename/link since the upload began, even when the
/// modification time was set back with `touch -r`, `cp -p` or `rsync -t` (the kernel sets
/// `ctime` to the current time and offers no call to set it back).
///
/// - Important: What it does not catch: a change in the middle of a file made by someone who
///   can set the clock back or edit the file system directly (root), a file system that does
///   not keep `ctime` or stable inode numbers (some FUSE and network mounts), and sources
///   with no file behind them (`TusSource(_:identity:)` with no times given: only length and
///   the two ends are compared). The checksum extension catches bytes changed in a chunk
///   that is still to be sent, when the server offers it; nothing re-reads what the server
///   already holds (tuspyserver keeps no checksum of it). It also refuses to resume after a
///   harmless `chmod` or rename: `--restart` starts over.
public struct TusFingerprint: Codable, Sendable, Equatable {
    /// The source's length in bytes.
    public var length: Int64
    /// SHA-256 of the source's first MiB, in hex.
    public var headSHA256: String
    /// SHA-256 of the source's last MiB, in hex.
    public var tailSHA256: String
    /// The file's modification time (seconds since 1970), `nil` for a source that is not a file.
    public var modificationTime: Double?
    /// Absent in records written before they were kept; then not compared.
    public var device: UInt64?
    /// The file's inode number; absent in records written before it was kept, then not compared.
    public var inode: UInt64?
    /// The file's inode change time (seconds since 1970); absent in older records, then not
    /// compared.
    public var changeTime: Double?

    /// How much of each end is hashed.
    public static let sampleSize: Int64 = 1 << 20

    /// Reads at most 2 MiB of `source`.
    ///
    /// - Throws: `TusError` with code `.source` when the source cannot be read.
    public init(of source: TusSource) throws {
        let bytes = source.bytes
        length = bytes.length
        let headCount = min(Self.sampleSize, length)
        let tailStart = max(0, length - Self.sampleSize)
        do {
            headSHA256 = try Self.sha256(bytes, 0..<headCount)
            tailSHA256 = try Self.sha256(bytes, tailStart..<length)
        } catch {
            throw TusError(.source, "cannot read the source to fingerprint it: \(error)", underlying: error)
        }
        modificationTime = source.modificationTime
        device = source.device
        inode = source.inode
        changeTime = source.changeTime
    }

    private static func sha256(_ source: any ByteSource, _ range: Range<Int64>) throws -> String {
        try Digest.sha256(of: SliceByteSource(source, range: range))
    }

    /// What differs from `other`, in words, or nil when nothing does.
    package func difference(from stored: TusFingerprint) -> String? {
        if length != stored.length { return "its length is \(length), was \(stored.length)" }
        if headSHA256 != stored.headSHA256 { return "its first MiB changed" }
        if tailSHA256 != stored.tailSHA256 { return "its last MiB changed" }
        if let now = modificationTime, let then = stored.modificationTime, now != then {
            return "its modification time changed"
        }
        if let now = inode, let then = stored.inode, now != then || device != stored.device {
            return "it is another file now (inode \(now), was \(then)): it was replaced"
        }
        if let now = changeTime, let then = stored.changeTime, now != then {
            return "its status change time (ctime) moved: it was written to, or its permissions, owner or links changed"
        }
        return nil
    }
}
