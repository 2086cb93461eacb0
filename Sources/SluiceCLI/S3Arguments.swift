import Sluice

/// The configuration options every `sluice s3` subcommand takes.
struct S3CommonOptions {
    var overrides = S3ConfigurationOverrides()
    /// Timeouts of every request (`--stall-timeout`).
    var transfer = UploadOptions()

    /// The options every `s3` command takes, declared once (first in most commands' `--help`).
    static var options: [Option<S3CommonOptions>] {
        [
            .endpointURL(\.overrides),
            .region(\.overrides),
            .profile(\.overrides),
            Option(
                .choice(
                    "--addressing-style", among: ["auto", "path", "virtual"],
                    help: "auto: path style for custom endpoints, virtual-hosted for AWS")
            ) {
                guard let style = S3AddressingStyle(rawValue: $1) else {
                    throw UsageError("unknown addressing style '\($1)': use auto, path or virtual")
                }
                $0.overrides.addressingStyle = style
            },
            Option(
                OptionSpec("--ca-bundle", value: "FILE", completion: .file, help: "CAs to trust for https (PEM); else AWS_CA_BUNDLE, the profile's ca_bundle")
            ) { $0.overrides.caBundle = $1 },
            .stallTimeout(\.transfer),
            .limitRate(\.transfer),
        ]
    }
}

/// The arguments of an `s3` subcommand: the options every one takes (`S3CommonOptions`), the
/// command's own (handed to it as they come) and the positionals.
struct S3Arguments {
    var common = S3CommonOptions()
    var positionals: [String] = []
    /// The options given, by name (`Arguments.given`).
    var given: Set<String> = []

    /// A command's settings and the common options, as one scan fills them.
    struct Scanned<Settings> {
        var common = S3CommonOptions()
        var own: Settings
    }

    /// Scans `arguments` for the options `command` takes: the common ones into `common`, the
    /// command's own (`options`, declared once) into `settings`.
    init<Settings>(_ arguments: [String], command: CommandSpec, options: [Option<Settings>], into settings: inout Settings) throws {
        var scanner = Arguments(arguments)
        var scanned = Scanned(own: settings)
        let all = S3CommonOptions.options.within(\Scanned<Settings>.common) + options.within(\Scanned<Settings>.own)
        try scanner.scan(command, all, into: &scanned)
        settings = scanned.own
        common = scanned.common
        positionals = scanner.positionals
        given = scanner.given
    }

    /// The `s3://BUCKET/KEY` positional at `index`; a usage error when it does not parse, or
    /// when `keyFor` names a command and the location has no key.
    func location(at index: Int, keyFor command: String? = nil) throws -> S3Location {
        do { return try Self.location(positionals[index], keyFor: command) } catch let error as UsageError {
            // `s3 cp s3://b/k ./file`: a download, which sluice does not do.
            guard index > 0, positionals[0].hasPrefix("s3://"), !positionals[index].hasPrefix("s3://") else { throw error }
            throw UsageError("\(error.description) (sluice sends data to servers; it does not download objects)")
        }
    }

    /// `text` as an `s3://BUCKET/KEY`; a usage error when it does not parse, or when `keyFor`
    /// names a command and the location has no key.
    static func location(_ text: String, keyFor command: String? = nil) throws -> S3Location {
        let location: S3Location
        do { location = try S3Location(parsing: text) } catch { throw UsageError("\(error)") }
        if let command, location.key.isEmpty {
            throw UsageError("\(command) needs the object's key: s3://\(location.bucket)/KEY")
        }
        return location
    }
}

extension OptionSpec {
    static let endpointURL = OptionSpec(
        "--endpoint-url", value: "URL",
        help: """
            a custom endpoint (MinIO, SeaweedFS, R2 …); else AWS_ENDPOINT_URL_S3,
            AWS_ENDPOINT_URL, the profile's endpoint_url, then AWS
            """)
    static let expires = OptionSpec("--expires", value: "SECONDS", help: "how long the URL is valid, 1 ... 604800 (default 3600)")
    static let region = OptionSpec("--region", value: "R", help: "else AWS_REGION, AWS_DEFAULT_REGION, the profile's region, us-east-1")
    static let profile = OptionSpec("--profile", value: "P", help: "a profile of ~/.aws/credentials and ~/.aws/config (else AWS_PROFILE)")
}

extension Option {
    /// `--endpoint-url` into the overrides at `path`.
    static func endpointURL(_ path: WritableKeyPath<Settings, S3ConfigurationOverrides>) -> Option {
        Option(.endpointURL) { $0[keyPath: path].endpointURL = $1 }
    }
    /// `--region` into the overrides at `path`.
    static func region(_ path: WritableKeyPath<Settings, S3ConfigurationOverrides>) -> Option {
        Option(.region) { $0[keyPath: path].region = $1 }
    }
    /// `--profile` into the overrides at `path`.
    static func profile(_ path: WritableKeyPath<Settings, S3ConfigurationOverrides>) -> Option {
        Option(.profile) { $0[keyPath: path].profile = $1 }
    }
}
