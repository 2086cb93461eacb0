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
        operands: [OperandSpec("SOURCE", completion: .file, help: "PATH | synthetic:SIZE[:SEED]"), OperandSpec("ENDPOINT")],
        options: [
            OptionSpec("--chunk-size", value: "SIZE", help: "PATCH in chunks of SIZE (default: one PATCH for the rest)"),
            OptionSpec(
                "--parallel", value: "N",
                help: """
                    N partial uploads at once, joined at the end (servers with the
                    concatenation extension; others get one upload)
                    """),
            OptionSpec("--metadata", value: "KEY=VALUE", help: "Upload-Metadata, repeatable"),
            OptionSpec("--state", value: "DIR", completion: .directory, help: "where resume records live (default ~/.cache/sluice/tus)"),
            OptionSpec("--retries", value: "N", help: "transient failures retried from the server's offset (default 5)"),
            OptionSpec("--restart", help: "ignore a stored upload of this source and start a new one"),
            OptionSpec("--no-checksum", help: "do not send Upload-Checksum even when the server offers it"),
            OptionSpec("--delete", value: "URL", help: "terminate the upload at URL (nothing else is given)"),
            .header.with(help: "on every request, repeatable"),
            .transport,
            .progress,
            .stallTimeout,
            .limitRate,
        ],
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

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var options = TusOptions()
        var transport = TransportKind.platformDefault
        var progress = ProgressPrinter.Style.auto
        var delete: String?
        try scanner.scan(Self.specification) { name, value in
            switch name {
            case "--chunk-size":
                let size = try ByteCount.parse(value)
                guard size >= 1 else { throw UsageError("--chunk-size must be at least 1 byte, got '\(value)'") }
                options.chunkSize = size
            case "--parallel":
                options.parallelUploads = try Arguments.count(value, option: name, in: 1...64)
            case "--metadata":
                let (key, text) = try Arguments.metadata(value)
                options.metadata[key] = text
            case "--state": options.stateDirectory = value
            case "--retries":
                options.retries = try Arguments.count(value, option: name, in: 0...1000)
            case "--delete": delete = value
            case "--header": options.headers.append(try Arguments.header(value))
            case "--transport":
                transport = try Arguments.transport(value)
            case "--progress":
                progress = try Arguments.progressStyle(value)
            case "--stall-timeout": try Arguments.stallTimeout(value, into: &options.transfer)
            case "--limit-rate": try Arguments.limitRate(value, into: &options.transfer)
            case "--restart": options.restarts = true
            case "--no-checksum": options.usesChecksums = false
            default: throw UsageError.unhandled(name)
            }
        }
        if let delete {
            guard scanner.positionals.isEmpty else { throw UsageError("tus --delete takes only the upload URL") }
            action = .delete(url: try UploadRequest(url: delete).url)
        } else {
            guard scanner.positionals.count == 2 else { throw UsageError("tus needs SOURCE and ENDPOINT") }
            _ = try SourceSpecification(parsing: scanner.positionals[0])
            action = .upload(source: scanner.positionals[0], endpoint: try UploadRequest(url: scanner.positionals[1]).url)
        }
        try options.transfer.validate()
        self.options = options
        self.transport = transport
        self.progress = progress
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
            let result = await ProgressPrinter.run(style: progress) { report in
                try await client.upload(source: source, to: endpoint, progress: report)
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
