import Foundation
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

    @Test func optionsTakeTheProfileButForWhatTheCallerKept() throws {
        var settings = S3TransferSettings()
        (settings.multipartChunkSize, settings.multipartThreshold) = (16 << 20, 64 << 20)
        (settings.maximumConcurrentRequests, settings.maximumBandwidth) = (3, 1 << 20)
        var given = S3Options()
        given.concurrency = 20
        let options = given.applying(settings, keeping: [.maximumConcurrentRequests])
        #expect(options.partSize == 16 << 20 && options.multipartThreshold == 64 << 20)
        #expect(options.concurrency == 20 && options.transfer.rateLimit != nil)
        // A streamed copy's source reads keep to `max_bandwidth` too, from a cap of their own.
        let sourceCap = try #require(options.sourceRateLimit)
        #expect(sourceCap.bytesPerSecond == 1 << 20 && sourceCap !== options.transfer.rateLimit)
        #expect(S3Options().applying(S3TransferSettings()).partSize == nil)
    }

    /// `S3Client()` is configured as the AWS CLI is: the profile's `s3 =` settings too, unless
    /// options are given.
    @Test func theOneCallClientTakesTheProfilesSettings() throws {
        let directory = NSTemporaryDirectory() + "sluice-transfer-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "[default]\ns3 =\n  multipart_chunksize = 16MB\n  max_concurrent_requests = 3\n".write(
            toFile: directory + "/config", atomically: true, encoding: .utf8)
        let environment = [
            "HOME": directory, "AWS_CONFIG_FILE": directory + "/config", "AWS_SHARED_CREDENTIALS_FILE": directory + "/none",
            "AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S",
        ]
        let client = try S3Client(environment: environment)
        #expect(client.options.partSize == 16 << 20 && client.options.concurrency == 3)
        let told = try S3Client(options: S3Options(), environment: environment)
        #expect(told.options.partSize == nil && told.options.concurrency == 8)
    }
}
