import Foundation
import SluicePrimitives
import SluiceByteSources

extension S3UploadRecord {
    /// A multipart upload's record keeps a journal of its parts beside it (`S3PartsJournal`),
    /// removed with it.
    public static var companionExtensions: [String] { [S3PartsJournal.fileExtension] }
}

/// What the runs of one multipart upload learned of the parts they sent that `ListParts` may
/// not say: each accepted part's ETag and checksum, a line appended as S3 accepts it, beside the
/// upload's record (`S3UploadRecord.companionExtensions`; removed with it).
///
/// A resumed upload must name every held part's checksum in `CompleteMultipartUpload`. Where
/// the store lists none (SeaweedFS), a source that can change (a file) has its held parts read
/// and hashed again, which also proves them its bytes; a pinned source (`ByteSource.isPinned`:
/// a remote source read by its validator) cannot have changed, so the checksum recorded when
/// the part was accepted is taken instead, and a resumed copy reads from the source only what
/// is missing.
///
/// - Important: The journal only saves reads: a part whose line is missing (a kill between
///   S3's answer and the append, a full disk, a journal that cannot be opened) is read again,
///   never trusted. Lines are for the upload the header names; another upload's or a damaged
///   journal is started afresh.
package final class S3PartsJournal: Sendable {
    package static let fileExtension = "parts"

    private let journal: Journal<S3PartETag>?
    /// The parts earlier runs recorded, by number.
    package let recorded: [Int: S3PartETag]

    /// Opens (creating) the journal of `record`'s upload in `store`; a journal that cannot be
    /// opened leaves this run without one (`recorded` empty, appends dropped).
    package init(store: S3StateStore, record: S3UploadRecord) {
        let path = store.companionPath(key: record.storeKey, extension: Self.fileExtension)
        let job = "upload \(record.uploadID) in parts of \(record.plan.partSize) bytes, checksum \(record.checksum?.s3Name ?? "none")"
        var opened: Journal<S3PartETag>?
        do { opened = try Journal(path: path, job: job) } catch {
            switch error.problem {
            case .anotherJob, .corrupt: opened = try? Journal(path: path, job: job, forgetting: true)
            default: opened = nil
            }
        }
        journal = opened
        recorded = Dictionary(
            (opened?.takeAll() ?? []).map { ($0.partNumber, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The checksum under `algorithm` recorded for part `number` when S3 accepted it with
    /// `eTag` (quotes or not); nil when none was, or with another ETag.
    package func checksum(ofPart number: Int, eTag: String, algorithm: ChecksumAlgorithm) -> String? {
        guard let part = recorded[number], S3ObjectHead.unquoted(part.eTag) == S3ObjectHead.unquoted(eTag) else { return nil }
        return part.checksum.flatMap { Checksum(algorithm: algorithm, base64: $0) != nil ? $0 : nil }
    }

    /// Records `part`, accepted by S3, with its checksum under `algorithm`: one `write(2)` to the
    /// page cache, synced when the run ends (`close`), not as it goes. A line that cannot be
    /// written, or is lost to a power cut, is dropped: the part is read again by a later run.
    package func accepted(_ part: S3CompletedPart, algorithm: ChecksumAlgorithm?) {
        _ = try? journal?.appendLeavingSync(
            S3PartETag(partNumber: part.partNumber, eTag: part.eTag, checksum: algorithm.flatMap { part.checksums[$0] }))
    }

    /// Syncs what was appended and releases the journal's lock.
    package func close() {
        try? journal?.close()
    }
}
