import Foundation

/// A random-access source with the identity a resumed upload is matched by.
///
/// The identity says *which* source this is (an absolute path, a synthetic spec, a name the
/// caller chooses); the fingerprint says whether its bytes are still the ones the stored
/// upload was started with.
public struct TusSource: Sendable {
    /// The bytes.
    public let bytes: any ByteSource
    /// Which source this is, stable across runs: `file:/absolute/path`, `synthetic:LEN:SEED`, ...
    public let identity: String
    /// The default `filename` metadata.
    public let name: String
    /// The file's modification time (seconds since 1970), a hint that it changed.
    public let modificationTime: Double?

    private let file: FileByteSource?

    /// - Parameters:
    ///   - bytes: The source.
    ///   - identity: Stable across runs for the same logical source.
    ///   - name: Sent as the `filename` metadata by default.
    ///   - modificationTime: When set, a different value on a later run counts as a change.
    public init(_ bytes: any ByteSource, identity: String, name: String? = nil, modificationTime: Double? = nil) {
        self.bytes = bytes
        self.identity = identity
        self.name = name ?? identity
        self.modificationTime = modificationTime
        self.file = nil
    }

    private init(file: FileByteSource, identity: String, name: String, modificationTime: Double?) {
        self.bytes = file
        self.identity = identity
        self.name = name
        self.modificationTime = modificationTime
        self.file = file
    }

    /// Opens what a command line's SOURCE names.
    ///
    /// - Returns: A source to pass to `TusClient.upload`; call `close()` after it.
    /// - Throws: `TusError` with code `.sourceNotRandomAccess` for stdin, `.source` when
    ///   the file cannot be opened.
    public static func open(_ specification: SourceSpecification) throws -> TusSource {
        switch specification {
        case .standardInput:
            throw TusError(.sourceNotRandomAccess, "tus needs a source it can read from any offset to resume; stdin is not one (save it to a file first)")
        case .synthetic(let length, let seed):
            return TusSource(SyntheticByteSource(length: length, seed: seed), identity: "synthetic:\(length):\(seed)",
                             name: "synthetic-\(length)-\(seed).bin")
        case .file(let path):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            let file: FileByteSource
            do { file = try FileByteSource(path: absolute) } catch {
                throw TusError(.source, "\(error)", underlying: error)
            }
            let attributes = try? FileManager.default.attributesOfItem(atPath: absolute)
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970
            return TusSource(file: file, identity: "file:\(absolute)", name: (absolute as NSString).lastPathComponent,
                             modificationTime: modified)
        }
    }

    /// Closes the file a source opened by `open(_:)` holds; does nothing for others.
    ///
    /// - Important: Call once, after the upload returned.
    public func close() {
        file?.close()
    }
}

/// What identifies a source's content cheaply: its length, SHA-256 of its first and last
/// MiB, and the file's modification time when there is one.
///
/// - Important: Bytes changed in the middle of a file without a change of length or
///   modification time go unnoticed; the checksum extension catches them per chunk when
///   the server offers it.
public struct TusFingerprint: Codable, Sendable, Equatable {
    public var length: Int64
    public var headSHA256: String
    public var tailSHA256: String
    public var modificationTime: Double?

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
        return nil
    }
}
