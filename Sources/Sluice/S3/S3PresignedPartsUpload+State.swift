import Foundation

/// What a presigned-parts upload keeps between runs: the parts S3 accepted.
struct S3PresignedPartsRecord: Codable, Sendable, Equatable {
    static let currentVersion = 1

    var version = Self.currentVersion
    var uploadID: String
    /// The source's identity (`file:/path`, `synthetic:LEN:SEED`).
    var source: String
    var fingerprint: S3SourceFingerprint
    var partSize: Int64
    var checksum: S3ChecksumAlgorithm?
    /// The accepted parts, in the order they were accepted.
    var parts: [S3PartETag]

    /// Whether the record is the one of `upload` (the same upload, source, plan and checksum).
    func matches(_ upload: S3PresignedPartsUpload) -> Bool {
        version == Self.currentVersion && uploadID == upload.uploadID && source == upload.source.identity
            && fingerprint == upload.source.fingerprint && partSize == upload.plan.partSize
            && checksum == upload.checksum?.s3Algorithm
    }
}

/// The durable list of accepted parts of one presigned-parts upload.
///
/// - Important: Each accepted part rewrites the record (temporary file, `fsync`, `rename`,
///   `fsync` of the directory) before the part counts as done, under the journal's lock, so
///   records are written one at a time and the file never goes back to a shorter list.
final class S3PresignedPartsJournal: Sendable {
    private let store: RecordStore<S3PresignedPartsRecord>
    private let path: String
    private let record: Lock<S3PresignedPartsRecord>
    /// The parts recorded by earlier runs, by number.
    let recorded: [Int: S3PartETag]

    /// Opens the record of `upload`; a record that cannot be read, or is another upload's,
    /// is replaced (its parts are sent again).
    init(_ upload: S3PresignedPartsUpload) {
        store = Self.store(in: upload.stateDirectory)
        path = Self.path(of: upload)
        let fresh = S3PresignedPartsRecord(uploadID: upload.uploadID, source: upload.source.identity,
                                           fingerprint: upload.source.fingerprint, partSize: upload.plan.partSize,
                                           checksum: upload.checksum?.s3Algorithm, parts: [])
        var loaded = fresh
        if let stored = try? store.load(at: path), stored.matches(upload) {
            let count = upload.plan.partCount ?? 1
            loaded.parts = stored.parts.filter { (1...count).contains($0.partNumber) && !$0.eTag.isEmpty }
        }
        record = Lock(loaded)
        recorded = Dictionary(loaded.parts.map { ($0.partNumber, $0) }, uniquingKeysWith: { _, last in last })
    }

    static func store(in directory: String?) -> RecordStore<S3PresignedPartsRecord> {
        RecordStore(directory: directory ?? S3PresignedPartsUpload.defaultStateDirectory)
    }

    /// The record file: keyed by the upload id and the source's identity and fingerprint.
    static func path(of upload: S3PresignedPartsUpload) -> String {
        let fingerprint = (try? JSONEncoder.sorted.encode(upload.source.fingerprint)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return store(in: upload.stateDirectory).path(upload.uploadID, upload.source.identity, fingerprint)
    }

    /// Makes sure the directory takes records before the first part is sent.
    ///
    /// - Throws: `S3Error` with code `.stateDirectory` (the directory) or `.state` (the record).
    func prepare() throws {
        try S3StateStore(directory: store.directory).prepare()
        try record.withLock { try save($0) }
    }

    /// Records part `part` as accepted, durably.
    ///
    /// - Throws: `S3Error` with code `.state`.
    func accepted(_ part: S3PartETag) throws {
        try record.withLock { record in
            record.parts.removeAll { $0.partNumber == part.partNumber }
            record.parts.append(part)
            try save(record)
        }
    }

    /// Removes the record: its parts are not to be trusted.
    func discard() {
        record.withLock { _ in _ = store.remove(at: path) }
    }

    private func save(_ record: S3PresignedPartsRecord) throws {
        do { try store.save(record, at: path) } catch {
            throw S3Error(.state, "cannot write the resume state \(path): \(error)", uploadID: record.uploadID, underlying: error)
        }
    }
}

extension JSONEncoder {
    /// Keys sorted: the same value always gives the same bytes.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
