import Foundation
import SluicePrimitives
import SluiceByteSources

/// One accepted part is one line of a presigned-parts record.
extension S3PartETag: JournalEntry {
    package static let recordName = "presigned-parts record"
    package var key: String { String(partNumber) }
}

/// The durable list of accepted parts of one presigned-parts upload: a `Journal` whose header
/// names the upload, its source and plan, and a line appended per part S3 accepted (O(parts)
/// bytes in all: 10,000 parts write about a megabyte once, not the whole list per part).
///
/// - Important: An accepted part is appended (one `write`, `O_APPEND`) before it counts as
///   done, so after `kill -9` every part reported accepted is in the file; the file is synced
///   at most every `Journal.syncInterval` and when the run ends. The run holds the record's
///   lock: a second run of the same upload is refused at once, naming the holder's pid. A
///   record that cannot be read is an error naming it, never taken for an empty one.
package final class S3PresignedPartsJournal: Sendable {
    private let journal: Journal<S3PartETag>
    /// The parts recorded by earlier runs, by number.
    package let recorded: [Int: S3PartETag]

    /// Takes the lock of the record of `upload` and reads it (creating it when there is none),
    /// keeping the recorded parts among `chosen` (`upload.chosenParts()`).
    ///
    /// - Throws: `S3Error` with code `.stateDirectory` (the directory cannot be used),
    ///   `.inUse` (another run holds the record) or `.state` (the record cannot be read or
    ///   written: the message names it).
    package init(_ upload: S3PresignedPartsUpload, chosen: ClosedRange<Int>) throws {
        let directory = upload.stateDirectory ?? S3PresignedPartsUpload.defaultStateDirectory
        try S3StateStore(directory: directory).prepare()
        let path = Self.path(of: upload)
        do {
            journal = try Journal(path: path, job: Self.identity(of: upload))
        } catch {
            switch error.problem {
            case .locked(.held): throw S3Error(.inUse, "\(error)", uploadID: upload.uploadID, underlying: error)
            case .corrupt, .anotherJob: throw S3Error(.state, "\(error): remove it to send every part again", uploadID: upload.uploadID, underlying: error)
            default: throw S3Error(.state, "\(error)", uploadID: upload.uploadID, underlying: error)
            }
        }
        recorded = Dictionary(
            journal.takeAll().filter { chosen.contains($0.partNumber) && !$0.eTag.isEmpty }.map { ($0.partNumber, $0) },
            uniquingKeysWith: { _, last in last })
    }

    /// The record file: keyed by the upload id, the source's identity and fingerprint, and the
    /// range of parts when the run sends one (`partNumbers`: each range its own record and lock).
    package static func path(of upload: S3PresignedPartsUpload) -> String {
        let fingerprint = fingerprintText(of: upload)
        let store = RecordStore<S3PartETag>(directory: upload.stateDirectory ?? S3PresignedPartsUpload.defaultStateDirectory)
        let range = upload.partNumbers.map { ["parts \($0.lowerBound)-\($0.upperBound)"] } ?? []
        return store.path([upload.uploadID, upload.source.identity, fingerprint] + range, extension: "journal")
    }

    /// What the record's header names: the upload, its source and fingerprint, the part size
    /// and checksum (a record of another plan is refused, not resumed with).
    package static func identity(of upload: S3PresignedPartsUpload) -> String {
        let fingerprint = fingerprintText(of: upload)
        let range = upload.partNumbers.map { ", parts \($0.lowerBound)-\($0.upperBound)" } ?? ""
        return
            "upload \(upload.uploadID) of \(upload.source.identity) \(fingerprint) in parts of \(upload.plan.partSize) bytes, checksum \(upload.checksum?.s3Name ?? "none")\(range)"
    }

    /// The source's fingerprint as sorted JSON, as the path and the header name it.
    private static func fingerprintText(of upload: S3PresignedPartsUpload) -> String {
        (try? JSONEncoder.sorted.encode(upload.source.fingerprint)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Records part `part` as accepted.
    ///
    /// - Throws: `S3Error` with code `.state` (the record cannot be written: a full disk).
    package func accepted(_ part: S3PartETag) throws {
        do { try journal.append(part) } catch {
            throw S3Error(.state, "\(error)", underlying: error)
        }
    }

    /// Syncs the record and releases its lock; it stays for a rerun.
    ///
    /// - Throws: `S3Error` with code `.state` when the sync fails.
    package func close() throws {
        do { try journal.close() } catch {
            throw S3Error(.state, "\(error)", underlying: error)
        }
    }

    /// Removes the record (its parts are not to be trusted) and releases its lock.
    package func discard() {
        journal.remove()
    }
}

extension JSONEncoder {
    /// Keys sorted: the same value always gives the same bytes.
    package static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
