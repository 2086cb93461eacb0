import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// The record of a presigned-parts upload: a line appended per accepted part, so 10,000 parts
/// write O(parts) bytes and read back whole; a record that cannot be read is an error naming
/// it, never an empty one; one run at a time.
struct S3PresignedRecordTests {
    func upload(state: String) throws -> S3PresignedPartsUpload {
        let source = S3Source.synthetic(length: 10_000 * (5 << 20), seed: 3)
        var upload = try S3PresignedPartsUpload(
            uploadID: "U-\(UUID().uuidString.prefix(8))", source: source, partSize: 5 << 20,
            checksum: .crc32c
        ) { _ in throw CancellationError() }
        upload.stateDirectory = state
        return upload
    }

    func part(_ number: Int) -> S3PartETag {
        S3PartETag(partNumber: number, eTag: "\"0123456789abcdef0123456789abcdef\"", checksum: "AAAAAA==")
    }

    /// 10,000 parts accepted, one after the other: the file holds one line per part (written
    /// once each, not the whole list per part), and a rerun reads all 10,000 back (before: past
    /// 1 MiB, about 8,400 parts, the record read as none and every part was sent again).
    @Test func tenThousandPartsAreWrittenOnceEachAndReadBackWhole() throws {
        let state = try s3TemporaryDirectory("presigned-record")
        let upload = try upload(state: state)
        let journal = try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts())
        #expect(journal.recorded.isEmpty)
        var lines = 0
        for number in 1...10_000 {
            try journal.accepted(part(number))
            lines += part(number).line.count
        }
        try journal.close()
        let path = S3PresignedPartsJournal.path(of: upload)
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let header = try String(contentsOfFile: path, encoding: .utf8).prefix { $0 != "\n" }.utf8.count + 1
        #expect(size == header + lines)
        let again = try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts())
        #expect(again.recorded.count == 10_000)
        #expect(again.recorded[9_999] == part(9_999))
        try again.close()
    }

    /// A record that cannot be read (damaged, or of another plan) stops the run with its name.
    @Test func anUnreadableRecordIsAnErrorNamingIt() throws {
        let state = try s3TemporaryDirectory("presigned-record")
        let upload = try upload(state: state)
        let journal = try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts())
        try journal.accepted(part(1))
        try journal.close()
        let path = S3PresignedPartsJournal.path(of: upload)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("not a part\n".utf8))
        try handle.close()
        do {
            _ = try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts())
            Issue.record("a damaged record was read")
        } catch let error as S3Error {
            #expect(error.code == .state)
            #expect(error.message.contains(path) && error.message.contains("line 3"), "\(error)")
        }
    }

    @Test func aSecondRunIsRefusedNamingThePid() throws {
        let state = try s3TemporaryDirectory("presigned-record")
        let upload = try upload(state: state)
        let journal = try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts())
        do {
            _ = try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts())
            Issue.record("a second run went on")
        } catch let error as S3Error {
            #expect(error.code == .inUse)
            #expect(error.message.contains("sluice pid \(getpid())"), "\(error)")
        }
        try journal.close()
        try S3PresignedPartsJournal(upload, chosen: try upload.chosenParts()).close()
    }
}
