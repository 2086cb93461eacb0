import Foundation
import Sluice

/// Where an `s3://BUCKET/KEY` SOURCE is read from: `--source-endpoint-url`, `--source-region`,
/// `--source-profile` (credentials and settings from that AWS CLI profile). Without them the
/// source is read as the destination is (`s3 cp`), or as an `s3` command would read it
/// (`upload`, `tus`).
struct SourceStore: Sendable, Equatable {
    var endpointURL: String?
    var region: String?
    var profile: String?

    /// Whether a source option was given.
    var isGiven: Bool { endpointURL != nil || region != nil || profile != nil }

    /// The source's configuration overrides over the destination's: a `--source-profile`
    /// replaces the destination's profile, endpoint and region (the profile's own apply); each
    /// other source option replaces its own. Addressing style and CA bundle are the
    /// destination's.
    func overrides(over destination: S3ConfigurationOverrides) -> S3ConfigurationOverrides {
        var overrides = destination
        if let profile {
            overrides.profile = profile
            (overrides.endpointURL, overrides.region) = (nil, nil)
        }
        if let endpointURL { overrides.endpointURL = endpointURL }
        if let region { overrides.region = region }
        return overrides
    }

    /// The client that reads the source: `destination` itself when no source option was given,
    /// else a client of the source's configuration with the destination's options.
    ///
    /// - Throws: `S3Error` when the source's profile or endpoint cannot be resolved.
    func client(over overrides: S3ConfigurationOverrides, destination: S3Client, transport: TransportKind) throws -> S3Client {
        guard isGiven else { return destination }
        let configuration: S3Configuration
        do { configuration = try S3Configuration.resolve(self.overrides(over: overrides)) } catch var error as S3Error {
            error.message = "the source's configuration: \(error.message)"
            throw error
        }
        return S3Client(configuration: configuration, options: destination.options, transport: transport)
    }

    /// The options, declared once, that set a `SourceStore` at `path`.
    static func options<Settings>(_ path: WritableKeyPath<Settings, SourceStore>) -> [Option<Settings>] {
        [
            Option(.sourceEndpointURL) { $0[keyPath: path].endpointURL = try nonEmpty($1, "--source-endpoint-url") },
            Option(.sourceRegion) { $0[keyPath: path].region = try nonEmpty($1, "--source-region") },
            Option(.sourceProfile) { $0[keyPath: path].profile = try nonEmpty($1, "--source-profile") },
        ]
    }

    private static func nonEmpty(_ value: String, _ option: String) throws -> String {
        guard !value.isEmpty else { throw UsageError("\(option) needs a value") }
        return value
    }
}

extension OptionSpec {
    static let sourceEndpointURL = OptionSpec(
        "--source-endpoint-url", value: "URL", help: "an s3:// SOURCE's endpoint (else the destination's, or as --endpoint-url)")
    static let sourceRegion = OptionSpec("--source-region", value: "R", help: "an s3:// SOURCE's region (else as --region)")
    static let sourceProfile = OptionSpec(
        "--source-profile", value: "P",
        help: """
            read an s3:// SOURCE with this AWS CLI profile's credentials, endpoint and
            region (else the destination's); other stores are streamed through sluice
            """)
}
