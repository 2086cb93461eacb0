import Foundation

/// A random-access source with the identity a resumed upload is matched by.
///
/// The identity says *which* source this is (an absolute path, a synthetic spec, a name the
/// caller chooses); the fingerprint says whether its bytes are still the ones the stored
/// upload was started with.
///
/// Ownership: a source made by `open(_:)` from a path owns the `FileByteSource` it opened;
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
    public let inode: UInt64?
    /// The file's status change time (`ctime`, seconds since 1970): every write moves it, and
    /// unlike the modification time no `touch -r`, `cp -p` or `rsync -t` can set it back.
    public let changeTime: Double?

    private let file: FileByteSource?

    /// - Parameters:
    ///   - bytes: The source.
    ///   - identity: Stable across runs for the same logical source.
    ///   - name: Sent as the `filename` metadata by default.
    ///   - modificationTime: When set, a different value on a later run counts as a change.
    ///   - device: With `inode`: when set, a different pair on a later run counts as a change.
    ///   - inode: See `device`.
    ///   - changeTime: When set, a different value on a later run counts as a change.
    public init(_ bytes: any ByteSource, identity: String, name: String? = nil, modificationTime: Double? = nil,
                device: UInt64? = nil, inode: UInt64? = nil, changeTime: Double? = nil) {
        self.bytes = bytes
        self.identity = identity
        self.name = name ?? identity
        self.modificationTime = modificationTime
        self.device = device
        self.inode = inode
        self.changeTime = changeTime
        self.file = nil
    }

    private init(file: FileByteSource, identity: String, name: String) {
        self.bytes = file
        self.identity = identity
        self.name = name
        self.modificationTime = file.modificationTime
        self.device = file.device
        self.inode = file.inode
        self.changeTime = file.changeTime
        self.file = file
    }

    /// Opens what a command line's SOURCE names.
    ///
    /// A file whose size is reported as 0 but that has content (`/proc/cpuinfo`) is read into
    /// memory first, up to `FileStreamSource.snapshotLimit` (tus needs the length up front),
    /// and refused above; its fingerprint is then its content alone.
    ///
    /// - Returns: A source to pass to `TusClient.upload`; call `close()` after it.
    /// - Throws: `TusError` with code `.sourceNotRandomAccess` for stdin and FIFOs, `.source`
    ///   when the file cannot be opened.
    public static func open(_ specification: SourceSpecification) throws -> TusSource {
        switch specification {
        case .standardInput:
            throw TusError(.sourceNotRandomAccess, "tus needs a source it can read from any offset to resume; stdin is not one (save it to a file first)")
        case .synthetic(let length, let seed):
            return TusSource(SyntheticByteSource(length: length, seed: seed), identity: "synthetic:\(length):\(seed)",
                             name: "synthetic-\(length)-\(seed).bin")
        case .file(let path):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            let name = (absolute as NSString).lastPathComponent
            do {
                return TusSource(file: try FileByteSource(path: absolute), identity: "file:\(absolute)", name: name)
            } catch ByteSourceError.notRegularFile(_, let kind) where kind == "FIFO" {
                throw TusError(.sourceNotRandomAccess, "tus needs a source it can read from any offset to resume; \(path) is a FIFO (save what it yields to a file first)")
            } catch ByteSourceError.unknownLength {
                let bytes: [UInt8]
                do { bytes = try FileStreamSource.contents(ofUnknownLength: absolute) } catch {
                    throw TusError(.source, "\(path): its reported size is not its length (a /proc or /sys file) and it holds more than \(FileStreamSource.snapshotLimit >> 20) MiB; tus needs the length up front (copy it to a regular file first)", underlying: error)
                }
                return TusSource(MemoryByteSource(bytes), identity: "file:\(absolute)", name: name)
            } catch {
                throw TusError(.source, "\(error)", underlying: error)
            }
        }
    }

    /// Closes the file a source opened by `open(_:)` holds; does nothing for others.
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
    public var length: Int64
    public var headSHA256: String
    public var tailSHA256: String
    public var modificationTime: Double?
    /// Absent in records written before they were kept; then not compared.
    public var device: UInt64?
    public var inode: UInt64?
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
    func difference(from stored: TusFingerprint) -> String? {
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
