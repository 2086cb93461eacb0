import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// One `ChecksumAlgorithm` for what Sluice computes and what S3 names (issue 40): its `Codable`
/// form is S3's name, the form resume records and presigned plans were written in when S3's
/// names were a type of their own, so records written before still resume.
struct ChecksumAlgorithmCodingTests {
    /// A resume record as the code before the merge of the two types wrote it (pretty, sorted
    /// keys, `"checksum" : "CRC32C"`) loads with its algorithm, and is written back in that form.
    @Test func aRecordWrittenInTheOldFormStillResumes() throws {
        let directory = try s3TemporaryDirectory("old-record")
        let store = S3StateStore(directory: directory)
        let old = """
            {
              "bucket" : "b",
              "checksum" : "CRC32C",
              "checksumType" : "FULL_OBJECT",
              "createdAt" : 1765000000.5,
              "endpoint" : "http:\\/\\/127.0.0.1:8333",
              "fingerprint" : {
                "changeTime" : 4,
                "device" : 1,
                "inode" : 2,
                "modificationTime" : 3,
                "size" : 20971520
              },
              "key" : "big.bin",
              "plan" : {
                "equalParts" : true,
                "length" : 20971520,
                "partSize" : 5242880
              },
              "source" : "file:\\/data\\/big.bin",
              "uploadID" : "U-old",
              "version" : 1
            }
            """
        var expected = S3UploadRecord(
            endpoint: "http://127.0.0.1:8333", bucket: "b", key: "big.bin", uploadID: "U-old", source: "file:/data/big.bin",
            fingerprint: S3SourceFingerprint(size: 20 << 20, device: 1, inode: 2, modificationTime: 3, changeTime: 4),
            plan: try S3PartPlan(length: 20 << 20, partSize: 5 << 20), checksum: .crc32c, createdAt: 1_765_000_000.5)
        expected.checksumType = .fullObject
        try store.prepare()
        try Data(old.utf8).write(to: URL(fileURLWithPath: store.path(of: expected)))
        let loaded = try #require(try store.load(endpoint: expected.endpoint, bucket: "b", key: "big.bin", source: "file:/data/big.bin"))
        #expect(loaded == expected)
        #expect(loaded.checksum == .crc32c)
        // Written back as it was: a binary from before the merge reads what this one writes.
        try store.save(loaded)
        let written = try String(contentsOfFile: store.path(of: expected), encoding: .utf8)
        #expect(written.contains(#""checksum" : "CRC32C""#), "\(written)")
    }

    /// A presigned upload (`plan.json`, the backend's stored copy) with S3's names, old and new,
    /// for every algorithm: decoded, and encoded back the same.
    @Test(arguments: ChecksumAlgorithm.allCases) func aPresignedPlanKeepsS3sName(_ algorithm: ChecksumAlgorithm) throws {
        let name = ["crc64nvme": "CRC64NVME", "crc32c": "CRC32C", "crc32": "CRC32", "sha1": "SHA1", "sha256": "SHA256"][algorithm.rawValue]!
        let old = #"{"bucket":"bucket","checksumAlgorithm":"\#(name)","key":"k","partSize":5242880,"size":12582912,"uploadId":"U"}"#
        let upload = try JSONDecoder().decode(S3PresignedUpload.self, from: Data(old.utf8))
        #expect(upload.checksum == algorithm)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let again = String(decoding: try encoder.encode(upload), as: UTF8.self)
        #expect(again.contains(#""checksumAlgorithm":"\#(name)""#), "\(again)")
        #expect(algorithm.s3Name == name)
        // The lowercase name reads too; a name that is no algorithm is a decoding error.
        #expect(try JSONDecoder().decode([ChecksumAlgorithm].self, from: Data(#"["\#(algorithm.rawValue)"]"#.utf8)) == [algorithm])
    }

    @Test func aNameThatIsNoAlgorithmIsRefused() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ChecksumAlgorithm].self, from: Data(#"["MD5"]"#.utf8)) }
    }
}
