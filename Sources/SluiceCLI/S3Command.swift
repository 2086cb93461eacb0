import Foundation
import Sluice

/// `sluice s3 SUBCOMMAND`: S3 and S3-compatible stores.
struct S3Command {
    static let specification = CommandSpec(
        path: ["s3"],
        synopses: [Synopsis("SUBCOMMAND [options]", "S3 and S3-compatible stores: cp, sync, abort, presign, complete")],
        about: """
            Credentials and endpoint as the AWS CLI reads them: AWS_ACCESS_KEY_ID,
            AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION,
            AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_PROFILE and ~/.aws/{credentials,config}.
            A presigned multipart upload: the side with credentials creates it and prints its plan,
            `sluice upload --parts plan.json SOURCE > etags.json` sends it without credentials, the
            side with credentials completes it (sluice s3 presign --multipart --help, s3 complete --help).
            """,
        notes: "sluice s3 SUBCOMMAND --help lists a subcommand's options.")

    static var specifications: [CommandSpec] {
        [
            specification, S3CopyCommand.specification, S3SyncCommand.specification, S3AbortCommand.specification, S3PresignCommand.specification,
            S3PresignPartsCommand.specification, S3CompleteCommand.specification,
        ]
    }

    let arguments: [String]

    func run() async throws -> Int32 {
        try Self.refuseArgumentsThatAreNotUTF8()
        guard let subcommand = arguments.first else { throw UsageError("s3 needs a subcommand: cp, sync, abort, presign or complete (see sluice help)") }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h"), let help = CommandLineDescription.help(for: ["s3", subcommand], arguments: rest) {
            return printHelp(help)
        }
        switch subcommand {
        case "cp": return try await S3CopyCommand(arguments: rest).run()
        case "sync": return try await S3SyncCommand(arguments: rest).run()
        case "abort": return try await S3AbortCommand(arguments: rest).run()
        case "presign" where Arguments.mentions(S3PresignPartsCommand.specification.selector!, in: rest):
            return try await S3PresignPartsCommand(arguments: rest).run()
        case "presign": return try S3PresignCommand(arguments: rest).run()
        case "complete": return try await S3CompleteCommand(arguments: rest).run()
        default:
            let hint = Suggestion.hint(for: subcommand, among: ["cp", "sync", "abort", "presign", "complete"], quoted: true)
            throw UsageError("unknown s3 subcommand '\(subcommand)'\(hint) (use cp, sync, abort, presign or complete)")
        }
    }
}

extension S3Command {
    /// S3 keys are UTF-8, and Swift reads the process's arguments with bytes that are not
    /// UTF-8 replaced by U+FFFD: `s3://b/a\xFF` would silently name the key `a\u{FFFD}`.
    static func refuseArgumentsThatAreNotUTF8() throws {
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
            guard String(validating: bytes, as: UTF8.self) != nil else {
                throw UsageError("argument \(index) is not valid UTF-8 (\(String(decoding: bytes, as: UTF8.self).debugDescription)): S3 keys are UTF-8")
            }
        }
    }
}

/// `sluice s3 presign s3://BUCKET/KEY`: a presigned GET or PUT URL on stdout.
struct S3PresignCommand {
    static let specification = CommandSpec(
        path: ["s3", "presign"],
        synopses: [
            Synopsis("s3://BUCKET/KEY [--expires SECONDS] [--method GET|PUT] [--endpoint-url URL] [--region R] [--profile P]", "a presigned URL")
        ],
        about: """
            Prints a presigned URL (SigV4 query signing) valid for SECONDS (default 3600, at most
            604800 = 7 days). Credentials and endpoint as the AWS CLI reads them (sluice s3 --help).
            """,
        operands: [OperandSpec("s3://BUCKET/KEY")],
        options: options.map(\.spec))

    /// What the options set.
    struct Settings {
        var expires = 3600
        var method = "GET"
        var overrides = S3ConfigurationOverrides()
    }

    /// Every option of `s3 presign`, declared once.
    static var options: [Option<Settings>] {
        [
            Option(.expires) { $0.expires = try Arguments.expiry($1) },
            Option(.choice("--method", among: ["GET", "PUT"], help: "what the URL allows (default GET)")) {
                guard ["GET", "PUT"].contains($1.uppercased()) else { throw UsageError("--method '\($1)' must be GET or PUT") }
                $0.method = $1.uppercased()
            },
            .endpointURL(\.overrides),
            .region(\.overrides),
            .profile(\.overrides),
        ]
    }

    var location: S3Location
    var expires = 3600
    var method = "GET"
    var overrides = S3ConfigurationOverrides()

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var settings = Settings()
        try scanner.scan(Self.specification, Self.options, into: &settings)
        let (expires, method, overrides) = (settings.expires, settings.method, settings.overrides)
        guard scanner.positionals.count == 1 else { throw UsageError("s3 presign needs exactly one s3://BUCKET/KEY") }
        location = try S3Arguments.location(scanner.positionals[0], keyFor: "s3 presign")
        self.expires = expires
        self.method = method
        self.overrides = overrides
    }

    func run() throws -> Int32 {
        let configuration: S3Configuration
        do {
            configuration = try S3Configuration.resolve(overrides)
        } catch {
            throw UsageError("\(error)")
        }
        guard let credentials = configuration.credentials else {
            throw UsageError("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use a profile")
        }
        let request = try SigV4Request(method: method, url: configuration.url(for: location).absoluteString)
        let signer = SigV4Signer(credentials: credentials, region: configuration.region)
        try Terminal.output("\(try signer.presign(request, expires: expires).url)\n")
        return 0
    }
}
