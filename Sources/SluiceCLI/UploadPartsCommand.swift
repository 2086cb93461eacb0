import Foundation
import Sluice

/// `sluice upload --parts plan.json SOURCE`: the client half of a presigned multipart upload.
/// Sends SOURCE's parts to the plan's URLs (no credentials), prints every part's ETag and
/// checksum (`etags.json`, for `sluice s3 complete`); run again after a crash, it sends only
/// the parts not yet accepted.
struct UploadPartsCommand {
    static let specification = CommandSpec(
        path: ["upload"],
        selector: "--parts",
        synopses: [Synopsis("--parts plan.json SOURCE [options]   > etags.json", "send SOURCE by a presigned plan, no credentials")],
        about: """
            Sends SOURCE (PATH or synthetic:SIZE[:SEED]; it must have the plan's size) by a plan from
            `sluice s3 presign --multipart`: each part to its presigned URL, no credentials needed.
            Prints the parts' ETags and checksums for `sluice s3 complete`. Run the same command
            again after a failure or kill -9: only the parts not yet accepted are sent.
            """,
        operands: [OperandSpec("SOURCE", completion: .file)],
        options: options.map(\.spec))

    /// How the parts are sent.
    struct Settings {
        var transport = TransportKind.platformDefault
        var progress = ProgressPrinter.Style.auto
        var concurrency = 8
        var retries = 5
        /// `--part-numbers A-B`; nil for every part.
        var partNumbers: ClosedRange<Int>?
        var stateDirectory: String?
        var transfer = UploadOptions()
        /// `--sse-c-key-file` (else `SLUICE_SSE_C_KEY_FILE` when the plan needs a key).
        var customerKeyFile: String?
        /// `--parts plan.json`.
        var planPath: String?
    }

    /// Every option of `upload --parts`, declared once: shown by `--help`, the man page and the
    /// completions, and applied by the parser.
    static var options: [Option<Settings>] {
        [
            Option(OptionSpec("--parts", value: "plan.json", completion: .file, help: "the plan `sluice s3 presign --multipart` printed")) {
                $0.planPath = $1
            },
            Option(
                OptionSpec(
                    "--part-numbers", value: "A-B",
                    help: "send only parts A to B (or one part N): several machines send one upload, each a range; complete with every range's list")
            ) { $0.partNumbers = try Self.partNumbers($1) },
            Option(OptionSpec("--concurrency", value: "N", help: "parts in flight (default 8)")) {
                $0.concurrency = try Arguments.count($1, option: "--concurrency", in: 1...256)
            },
            Option(OptionSpec("--retries", value: "N", help: "attempts after the first per part, 0 ... 1000 (default 5)")) {
                $0.retries = try Arguments.count($1, option: "--retries", in: 0...1000)
            },
            Option(
                OptionSpec("--state", value: "DIR", completion: .directory, help: "where accepted parts are recorded (default ~/.cache/sluice/s3-presigned)")
            ) {
                guard !$1.isEmpty else { throw UsageError("--state needs a directory") }
                $0.stateDirectory = $1
            },
            Option(
                OptionSpec(
                    "--sse-c-key-file", value: "PATH", completion: .file,
                    help: "for a plan with SSE-C: the 32-byte key (or $SLUICE_SSE_C_KEY_FILE; never printed or stored)")
            ) { $0.customerKeyFile = $1 },
            Option.transport(\.transport).with(help: "as for a plain upload"),
            Option.progress(\.progress).with(help: "as for a plain upload"),
            .noProgress(\.progress),
            // The connect too, as every command (before: 30 s whatever --stall-timeout said).
            .stallTimeout(\.transfer),
            .limitRate(\.transfer),
            .cacert(\.transfer),
            .insecure(\.transfer),
        ]
    }

    var planPath: String
    var source: SourceSpecification
    var settings = Settings()

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var settings = Settings()
        try scanner.scan(Self.specification, Self.options, into: &settings)
        guard let planPath = settings.planPath, !planPath.isEmpty else { throw UsageError("--parts needs the plan file") }
        guard scanner.positionals.count == 1 else { throw UsageError("upload --parts plan.json takes one SOURCE, got \(scanner.positionals.count) arguments") }
        self.planPath = planPath
        source = try SourceSpecification(parsing: scanner.positionals[0])
        if case .standardInput = source {
            throw UsageError("upload --parts needs a SOURCE it can read from any offset (a file or synthetic:), not stdin")
        }
        self.settings = settings
    }

    func run() async -> Int32 {
        await S3PresignedDocuments.run("upload --parts", describe: Self.describe) {
            let plan = try S3PresignedDocuments.read(S3PresignedPlan.self, from: planPath, what: "plan")
            try plan.validate()
            let renew = "ask the backend for new URLs for the same upload (sluice s3 presign --multipart --upload-id \(plan.upload.uploadID))"
            if let expiry = plan.parts.compactMap({ S3PresignedURL(url: $0.url).expiresAt }).min(), expiry <= Date() {
                throw S3Error(
                    .server, "the plan's URLs expired at \(SigV4Timestamp(expiry).amzDate); nothing was sent: \(renew)",
                    status: 403, serverCode: "AccessDenied")
            }
            let keyFile = settings.customerKeyFile ?? (plan.upload.customerKeyMD5 == nil ? nil : ProcessInfo.processInfo.environment["SLUICE_SSE_C_KEY_FILE"])
            let customerKey = try keyFile.map(S3ObjectArguments.customerKey(file:))
            let opened = try Self.open(source)
            defer { opened.close() }
            var upload = try plan.upload(opened.source, customerKey: customerKey)
            upload.concurrency = settings.concurrency
            upload.retryPolicy.retries = settings.retries
            upload.stateDirectory = settings.stateDirectory
            upload.partNumbers = settings.partNumbers
            upload.transfer = settings.transfer
            let chosen = settings.transport
            let parts = upload
            let result: S3PresignedPartsResult
            do {
                result = try await ProgressPrinter.run(style: settings.progress) { report in
                    try await parts.run(over: chosen.makeTransport(), progress: report)
                }.get()
            } catch var error as S3Error where error.partNumber.map({ S3PresignedURL(url: plan.parts[$0 - 1].url).hasExpired() }) == true {
                error.message += ": \(renew)"
                throw error
            }
            try S3PresignedDocuments.write(S3PresignedPartList(plan: plan, result: result))
            let which = settings.partNumbers.map { "\($0.count) parts (\($0.lowerBound)-\($0.upperBound))" } ?? "\(plan.upload.partCount) parts"
            let sent = result.parts.count - result.partsSkipped
            var line = "sent \(sent) of \(which) of \(plan.upload.location) (upload \(plan.upload.uploadID))"
            if result.partsSkipped > 0 { line += ", \(result.partsSkipped) accepted before" }
            line += ", \(result.bytesSent) bytes, \(result.retries) retries"
            if result.renewedURLs > 0 { line += ", \(result.renewedURLs) expired URLs asked for again" }
            let lists = settings.partNumbers == nil ? "--parts FILE" : "--parts FILE for every range's list"
            Terminal.error("sluice: \(line); complete with: sluice s3 complete \(plan.upload.location) --upload-id \(plan.upload.uploadID) \(lists)")
            return 0
        }
    }

    /// `A-B` (or `N`): part numbers from 1 to 10,000, A not above B.
    ///
    /// - Throws: `UsageError` naming what is wrong.
    static func partNumbers(_ text: String) throws -> ClosedRange<Int> {
        let ends = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let numbers = ends.map { end in end.allSatisfy(\.isASCII) ? Int(end).flatMap { (1...10_000).contains($0) ? $0 : nil } : nil }
        guard (1...2).contains(numbers.count), let first = numbers.first!, let last = numbers.last! else {
            throw UsageError("--part-numbers needs A-B (or N), part numbers from 1 to 10000, got '\(text)'")
        }
        guard first <= last else { throw UsageError("--part-numbers \(text): A must not be above B") }
        return first...last
    }

    /// An interruption says how to go on; anything else is the library's line.
    static func describe(_ error: S3Error) -> String {
        error.code == .cancelled ? "interrupted; run the same command again to send the parts not yet accepted" : error.message
    }

    /// SOURCE as a random-access source with its identity and fingerprint.
    ///
    /// - Throws: `S3Error` with code `.source` (a missing file, a FIFO, a device).
    static func open(_ specification: SourceSpecification) throws -> (source: S3Source, close: () -> Void) {
        switch specification {
        case .synthetic(let length, let seed):
            return (S3Source.synthetic(length: length, seed: seed), {})
        case .file(let path):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            do {
                let file = try FileByteSource(path: absolute)
                return (S3Source(file, identity: "file:\(absolute)", fingerprint: S3SourceFingerprint(file: file)), { file.close() })
            } catch let error as S3Error {
                throw error
            } catch {
                throw S3Error(.source, "\(error)", underlying: error)
            }
        case .standardInput:
            throw S3Error(.source, "stdin cannot be read from any offset")
        case .remote(let url):
            throw S3Error(.source, "\(RemoteSourceError.shown(url)): upload --parts reads a file or synthetic source, not an http(s) URL")
        case .object(let location):
            throw S3Error(.source, "\(location): upload --parts reads a file or synthetic source, not an s3:// object")
        }
    }
}

/// `sluice upload`: a plain upload, or with `--parts` the client half of a presigned multipart upload.
struct UploadEntry: Subcommand {
    static let specifications = [UploadCommand.specification, UploadPartsCommand.specification]

    /// The parsed command's work.
    private let work: () async -> Int32

    init(arguments: [String]) throws {
        if Arguments.mentions(UploadPartsCommand.specification.selector!, in: arguments) {
            work = try UploadPartsCommand(arguments: arguments).run
        } else {
            work = try UploadCommand(arguments: arguments).run
        }
    }

    func run() async throws -> Int32 { await work() }
}
