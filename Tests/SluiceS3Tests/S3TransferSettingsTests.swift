import Testing
@testable import Sluice

/// The `s3 =` transfer settings read as the AWS CLI reads them (`human_readable_to_bytes`:
/// `KB` … `TB` in powers of 1,024, whole numbers only; a rate ends in `B/s`); the e2e test
/// `test_s3_profile_settings.py` checks the same values against the AWS CLI's own function.
struct S3TransferSettingsTests {
    static let sizes: [(String, Int64)] = [
        ("16MB", 16 << 20), ("16mb", 16 << 20), ("16MiB", 16 << 20), ("1KB", 1024), ("2kib", 2048), ("1GB", 1 << 30),
        ("1TiB", 1 << 40), ("6291456", 6_291_456), (" 8MB ", 8 << 20), ("16 MB", 16 << 20),
    ]

    @Test(arguments: sizes)
    func sizesAreTheAWSCLIs(text: String, bytes: Int64) {
        #expect(S3TransferSettings.size(text) == bytes)
    }

    @Test(arguments: ["", "abc", "1.5MB", "0", "-1", "MB", "16 MB x", "99999999999TB"])
    func sizesTheAWSCLIRefusesAreRefused(text: String) {
        #expect(S3TransferSettings.size(text) == nil)
    }

    @Test func ratesAreSizesPerSecond() {
        #expect(S3TransferSettings.rate("50MB/s") == 50 << 20)
        #expect(S3TransferSettings.rate("1000B/s") == 1000)
        #expect(S3TransferSettings.rate("800KB/s") == 800 << 10)
        #expect(S3TransferSettings.rate("1000") == nil)
        #expect(S3TransferSettings.rate("fast") == nil)
        #expect(S3TransferSettings.rate("-5") == nil)
    }

    @Test func aProfileSectionSetsEachAndRefusesWhatS3CannotTake() throws {
        let settings = try S3TransferSettings(
            ["multipart_chunksize": "16MB", "multipart_threshold": "64MB", "max_concurrent_requests": "20", "max_bandwidth": "50MB/s"],
            path: "/config")
        #expect(settings.multipartChunkSize == 16 << 20)
        #expect(settings.multipartThreshold == 64 << 20)
        #expect(settings.maximumConcurrentRequests == 20)
        #expect(settings.maximumBandwidth == 50 << 20)
        #expect(try S3TransferSettings([:], path: "/config") == S3TransferSettings())
        for (name, value) in [("multipart_chunksize", "1MB"), ("multipart_threshold", "6GB"), ("max_concurrent_requests", "0")] {
            #expect {
                try S3TransferSettings([name: value], path: "/config")
            } throws: { error in
                let error = error as? S3Error
                return error?.code == .configuration && error?.message.contains("\(name) = \(value) in /config") == true
            }
        }
    }
}
