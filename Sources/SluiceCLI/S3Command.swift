import Foundation
import Sluice

/// `sluice s3 SUBCOMMAND`: S3 and S3-compatible stores.
struct S3Command {
    static let usage = """
    usage: sluice s3 cp SOURCE s3://BUCKET/KEY [options]   an upload, multipart and resumable (sluice s3 cp --help)
           sluice s3 abort s3://BUCKET/KEY [--upload-id ID]  (sluice s3 abort --help)
           sluice s3 presign s3://BUCKET/KEY [--expires SECONDS] [--method GET|PUT]
                             [--endpoint-url URL] [--region R] [--profile P]
      Prints a presigned URL (SigV4 query signing) valid for SECONDS (default 3600, at most
      604800 = 7 days). Credentials and endpoint as the AWS CLI reads them: AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION,
      AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_PROFILE and ~/.aws/{credentials,config}.
           sluice s3 presign s3://BUCKET/KEY --multipart --size BYTES [--part-size S] [--expires SECONDS]  > plan.json
           sluice s3 complete s3://BUCKET/KEY --upload-id ID --parts etags.json
      A presigned multipart upload: the side with credentials creates it and prints its plan,
      `sluice upload --parts plan.json SOURCE > etags.json` sends it without credentials, the
      side with credentials completes it (sluice s3 presign --multipart --help, s3 complete --help).
    """

    let arguments: [String]

    func run() async throws -> Int32 {
        try Self.refuseArgumentsThatAreNotUTF8()
        guard let subcommand = arguments.first else { throw UsageError("s3 needs a subcommand: cp, abort, presign or complete (see sluice help)") }
        let rest = Array(arguments.dropFirst())
        switch subcommand {
        case "cp", "abort": return try await S3Subcommands.run(arguments)
        case "presign" where Arguments.mentions("--multipart", in: rest):
            if rest.contains("--help") || rest.contains("-h") { return printHelp(S3PresignPartsCommand.usage) }
            return try await S3PresignPartsCommand(arguments: rest).run()
        case "presign": return try S3PresignCommand(arguments: rest).run()
        case "complete":
            if rest.contains("--help") || rest.contains("-h") { return printHelp(S3CompleteCommand.usage) }
            return try await S3CompleteCommand(arguments: rest).run()
        default: throw UsageError("unknown s3 subcommand '\(subcommand)': use cp, abort, presign or complete")
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
    var location: S3Location
    var expires = 3600
    var method = "GET"
    var overrides = S3ConfigurationOverrides()

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var expires = 3600
        var method = "GET"
        var overrides = S3ConfigurationOverrides()
        try scanner.scan(valued: ["--expires", "--method", "--endpoint-url", "--region", "--profile"], flags: []) { name, value in
            let value = value ?? ""
            switch name {
            case "--expires": expires = try Arguments.expiry(value)
            case "--method":
                guard ["GET", "PUT"].contains(value.uppercased()) else { throw UsageError("--method '\(value)' must be GET or PUT") }
                method = value.uppercased()
            case "--endpoint-url": overrides.endpointURL = value
            case "--region": overrides.region = value
            default: overrides.profile = value
            }
        }
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
