import Testing

@testable import SluiceCLI
import Sluice

/// An http(s) source's GETs keep to the run's source cap: `--limit-rate`'s, or the profile's
/// `max_bandwidth` where no flag gave one (as a streamed copy's reads of an `s3://` source do).
@Suite struct S3CopySourceCapTests {
    static let arguments = ["http://127.0.0.1:1/f", "s3://bucket/key", "--progress", "none"]

    @Test func theProfilesBandwidthCapsTheSourcesReads() throws {
        let command = try S3CopyCommand(arguments: Self.arguments)
        var settings = S3TransferSettings()
        settings.maximumBandwidth = 3 << 20
        let options = command.options(taking: settings)
        let cap = try #require(command.remote(for: options).rateLimit)
        // The source's own cap (the one S3Options keeps for reads), not the upload's.
        #expect(cap.bytesPerSecond == 3 << 20 && cap === options.sourceRateLimit && cap !== options.transfer.rateLimit)
        #expect(command.remote(for: command.options(taking: S3TransferSettings())).rateLimit == nil, "no cap without one")
    }

    @Test func theFlagWinsOverTheProfile() throws {
        let command = try S3CopyCommand(arguments: Self.arguments + ["--limit-rate", "1M"])
        var settings = S3TransferSettings()
        settings.maximumBandwidth = 3 << 20
        let cap = try #require(command.remote(for: command.options(taking: settings)).rateLimit)
        #expect(cap.bytesPerSecond == 1 << 20)
    }
}
