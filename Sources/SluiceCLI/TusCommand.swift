import Foundation
import Sluice

/// `sluice tus SOURCE ENDPOINT [options]` and `sluice tus --delete URL`: resumable uploads
/// over tus 1.0. Prints the upload URL on stdout; a one-line summary or error on stderr.
struct TusCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["tus"],
        synopses: [
            Synopsis("SOURCE ENDPOINT [options]", "a resumable upload over tus 1.0"),
            Synopsis("--delete URL", "terminate a tus upload"),
        ],
        operands: [OperandSpec("SOURCE", completion: .file, help: "PATH | synthetic:SIZE[:SEED] | http(s)://URL"), OperandSpec("ENDPOINT")],
        options: options.map(\.spec),
        notes: """
            Run the same command again after an interruption: it resumes at the server's offset.
            Prints the upload URL on stdout. Exit status: 0 done; 1 failed; 2 usage error; 130 interrupted.
            """)
    static var specifications: [CommandSpec] { [specification] }

    enum Action {
        case upload(source: String, endpoint: URL)
        case delete(url: URL)
    }

    var action: Action
    var options = TusOptions()
    var transport = TransportKind.platformDefault
    var progress = ProgressPrinter.Style.auto
    var remote = RemoteSourceOptions()
    /// Where an s3:// SOURCE is read.
    var sourceStore = SourceStore()

    /// What the options set.
    struct Settings {
        var options = TusOptions()
        var transport = TransportKind.platformDefault
        var progress = ProgressPrinter.Style.auto
        var delete: String?
        var source = RemoteSourceOptions()
        var sourceStore = SourceStore()
    }

    /// Every option of `tus`, declared once: shown by `--help`, the man page and the
    /// completions, and applied by the parser.
    static var options: [Option<Settings>] {
        [
            Option(OptionSpec("--chunk-size", value: "SIZE", help: "PATCH in chunks of SIZE (default: one PATCH for the rest)")) {
                let size = try ByteCount.parse($1)
                guard size >= 1 else { throw UsageError("--chunk-size must be at least 1 byte, got '\($1)'") }
                $0.options.chunkSize = size
            },
            Option(
                OptionSpec(
                    "--parallel", value: "N",
                    help: """
                        N partial uploads at once, joined at the end (servers with the
                        concatenation extension; others get one upload)
                        """)
            ) { $0.options.parallelUploads = try Arguments.count($1, option: "--parallel", in: 1...64) },
            Option(OptionSpec("--metadata", value: "KEY=VALUE", help: "Upload-Metadata, repeatable")) {
                let (key, text) = try Arguments.metadata($1)
                $0.options.metadata[key] = text
            },
            Option(OptionSpec("--state", value: "DIR", completion: .directory, help: "where resume records live (default ~/.cache/sluice/tus)")) {
                $0.options.stateDirectory = $1
            },
            Option(OptionSpec("--retries", value: "N", help: "transient failures retried from the server's offset (default 5)")) {
                $0.options.retries = try Arguments.count($1, option: "--retries", in: 0...1000)
            },
            Option(OptionSpec("--restart", help: "ignore a stored upload of this source and start a new one")) { settings, _ in
                settings.options.restarts = true
            },
            Option(OptionSpec("--no-checksum", help: "do not send Upload-Checksum even when the server offers it")) { settings, _ in
                settings.options.usesChecksums = false
            },
            Option(OptionSpec("--delete", value: "URL", help: "terminate the upload at URL (nothing else is given)")) { $0.delete = $1 },
            Option<TusOptions>.header(\.headers).with(help: "on every request, repeatable").within(\.options),
            .transport(\.transport),
            .progress(\.progress),
            .noProgress(\.progress),
            .stallTimeout(\.options.transfer),
            .limitRate(\.options.transfer),
            .sourceHeader(\.source),
        ] + SourceStore.options(\.sourceStore)
    }

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var settings = Settings()
        try scanner.scan(Self.specification, Self.options, into: &settings)
        let options = settings.options
        let (transport, progress, delete) = (settings.transport, settings.progress, settings.delete)
        if let delete {
            guard scanner.positionals.isEmpty else { throw UsageError("tus --delete takes only the upload URL") }
            action = .delete(url: try UploadRequest(url: delete).url)
        } else {
            guard scanner.positionals.count == 2 else { throw UsageError("tus needs SOURCE and ENDPOINT") }
            let parsed = try SourceSpecification(parsing: scanner.positionals[0])
            if settings.sourceStore.isGiven, case .object = parsed {
            } else if settings.sourceStore.isGiven {
                throw UsageError("--source-endpoint-url, --source-region and --source-profile go with an s3:// SOURCE")
            }
            action = .upload(source: scanner.positionals[0], endpoint: try UploadRequest(url: scanner.positionals[1]).url)
        }
        try options.transfer.validate()
        self.options = options
        self.transport = transport
        self.progress = progress
        remote = settings.source.adopting(options.transfer, retry: RetryPolicy(retries: options.retries))
        sourceStore = settings.sourceStore
    }

    func run() async -> Int32 {
        switch action {
        case .delete(let url):
            do {
                try await TusClient(transport: transport, options: options).terminate(url: url)
                Terminal.error("sluice: terminated \(url.absoluteString)")
                return 0
            } catch {
                Terminal.error("sluice: tus: \(error)")
                if let error = error as? TusError, error.code == .invalidOption { return 2 }
                return 1
            }
        case .upload(let source, let endpoint):
            let client = TusClient(transport: transport, options: options)
            let (remote, store) = (self.remote, sourceStore)
            let result = await ProgressPrinter.run(style: progress) { report in
                try await client.upload(source: source, to: endpoint, remote: remote, store: store, progress: report)
            }
            switch result {
            case .success(let upload):
                do {
                    try Terminal.output("\(upload.uploadURL.absoluteString)\n")
                } catch {
                    Terminal.error("sluice: tus: uploaded to \(upload.uploadURL.absoluteString) but \(error)")
                    return 1
                }
                Terminal.error("sluice: \(upload.summary)")
                return 0
            case .failure(let error as TusError) where error.code == .sourceChanged:
                Terminal.error("sluice: tus: \(error) (sluice tus --delete \(error.uploadURL ?? "URL"), or --restart)")
                return 1
            case .failure(let error):
                Terminal.error("sluice: tus: \(error)")
                if let error = error as? TusError, error.code == .cancelled { return 130 }
                if let error = error as? TusError, error.code == .invalidOption { return 2 }
                return 1
            }
        }
    }
}
