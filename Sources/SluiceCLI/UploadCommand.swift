import Foundation
import Sluice

/// `sluice upload SOURCE URL [options]`
struct UploadCommand {
    static let specification = CommandSpec(
        path: ["upload"],
        synopses: [
            Synopsis("SOURCE URL [options]", "send SOURCE as a request body"),
            Synopsis("--form NAME=VALUE|NAME=@PATH[;type=T][;filename=F] ... URL [options]", "send a multipart/form-data body"),
        ],
        operands: [.source, OperandSpec("URL")],
        options: options.map(\.spec),
        notes: """
            The response body is streamed to stdout as it arrives, whatever its size.
            Exit status: 0 for a 2xx after the whole body; 1 for a failure or another status;
            2 for a usage error; 130 when interrupted.
            """)

    /// What is sent: one SOURCE, or multipart parts in command-line order.
    enum Payload {
        case source(SourceSpecification)
        case form([MultipartPart])
    }

    /// What the options set.
    struct Settings {
        var method = "POST"
        var headers: [HTTPHeader] = []
        var options = UploadOptions()
        var transport = TransportKind.platformDefault
        var progress = ProgressPrinter.Style.auto
        var form: [MultipartPart] = []
        var source = RemoteSourceOptions()
        var sourceStore = SourceStore()
    }

    /// Every option of `upload`, declared once: shown by `--help`, the man page and the
    /// completions, and applied by the parser.
    static var options: [Option<Settings>] {
        [
            Option(OptionSpec("-F", "--form", value: "SPEC", help: "a multipart/form-data part, curl -F syntax; repeatable")) {
                $0.form.append(try FormArgument.parse($1))
            },
            Option(OptionSpec("--form-string", value: "NAME=VALUE", help: "a text part taken literally (no @, <, ;type=)")) {
                $0.form.append(try FormArgument.parseLiteral($1))
            },
            Option(OptionSpec("-X", "--method", value: "METHOD", help: "default POST")) { $0.method = $1 },
            .header(\.headers),
            Option(OptionSpec("-u", "--user", value: "USER:PASS", help: "answers a 401 challenge; the body is replayed")) {
                $0.options.credentials = try Arguments.credentials($1)
            },
            Option(
                OptionSpec(
                    "--location-trusted",
                    help: """
                        after a redirect to another origin (scheme, host or port),
                        still send -u, Authorization, Cookie, Proxy-Authorization
                        (default: they stay with the URL's origin)
                        """)
            ) { settings, _ in settings.options.keepsCredentialsAcrossOrigins = true },
            .transport(\.transport),
            Option(OptionSpec("--chunked", help: "chunked even when the length is known")) { settings, _ in settings.options.forceChunked = true },
            Option(OptionSpec("--buffer-size", value: "BYTES", help: "memory between source and connection, 1KiB to 512MiB (default 1MiB)")) {
                let size = try ByteCount.parse($1)
                guard size >= 1024, size <= 512 << 20 else { throw UsageError("--buffer-size must be between 1KiB and 512MiB, got '\($1)'") }
                $0.options.bufferSize = Int(size)
            },
            .progress(\.progress),
            .noProgress(\.progress),
            .cacert(\.options),
            .insecure(\.options),
            .stallTimeout(\.options),
            .limitRate(\.options),
            .sourceHeader(\.source),
        ] + SourceStore.options(\.sourceStore)
    }

    var payload: Payload
    var request: UploadRequest
    var options = UploadOptions()
    var transport = TransportKind.platformDefault
    var progress = ProgressPrinter.Style.auto
    var remote = RemoteSourceOptions()
    /// Where an s3:// SOURCE is read.
    var sourceStore = SourceStore()

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var settings = Settings()
        try scanner.scan(Self.specification, Self.options, into: &settings)
        let (method, headers, options, transport, progress, form) =
            (settings.method, settings.headers, settings.options, settings.transport, settings.progress, settings.form)
        let url: String
        if form.isEmpty {
            guard scanner.positionals.count == 2 else {
                throw UsageError(scanner.positionals.count < 2 ? "upload needs SOURCE and URL" : "upload takes SOURCE and URL, got \(scanner.positionals.count) arguments")
            }
            payload = .source(try SourceSpecification(parsing: scanner.positionals[0]))
            url = scanner.positionals[1]
        } else {
            guard scanner.positionals.count == 1 else {
                throw UsageError("with --form, upload takes only a URL, got \(scanner.positionals.count) arguments")
            }
            payload = .form(form)
            url = scanner.positionals[0]
        }
        if method == "HEAD" {
            // Files and stdin are checked once open; these are known to carry a body now.
            switch payload {
            case .form, .source(.synthetic(1..., _)): throw UsageError("-X HEAD sends no body: use another method to upload")
            default: break
            }
        }
        request = try UploadRequest(url: url, method: method, headers: headers)
        try options.validate()
        self.options = options
        self.transport = transport
        self.progress = progress
        if !settings.source.headers.isEmpty, case .source(.remote) = payload {
        } else if !settings.source.headers.isEmpty {
            throw UsageError("--source-header goes with an http(s) SOURCE")
        }
        if settings.sourceStore.isGiven, case .source(.object) = payload {
        } else if settings.sourceStore.isGiven {
            throw UsageError("--source-endpoint-url, --source-region and --source-profile go with an s3:// SOURCE")
        }
        remote = settings.source.adopting(options)
        sourceStore = settings.sourceStore
    }

    func run() async -> Int32 {
        switch payload {
        case .source(let source):
            let opened: SourceSpecification.Opened
            do {
                opened = try await source.open(remote: remote, store: sourceStore)
            } catch {
                let hint = if case .isDirectory = error as? ByteSourceError { " (upload sends one file; s3 cp --recursive and s3 sync send a directory)" } else { "" }
                Terminal.error("sluice: \(error)\(hint)")
                return 1
            }
            defer { opened.close() }
            if request.method == "HEAD", opened.body.length != .known(0) {
                Terminal.error("sluice: -X HEAD sends no body, and the source is not empty: use another method to upload")
                return 2
            }
            return await UploadCommand.send(request, body: opened.body, transport: transport, options: options, progress: progress)
        case .form(let parts):
            let body: MultipartBody
            let contentType: HTTPHeader
            do {
                body = try MultipartBody(parts: parts)
                contentType = HTTPHeader(name: "Content-Type", value: body.contentType)
            } catch {
                Terminal.error("sluice: \(error)")
                return 1
            }
            defer { body.close() }
            var request = request
            request.headers.removeAll { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }
            request.headers.append(contentType)
            return await UploadCommand.send(request, body: .bytes(body), transport: transport, options: options, progress: progress)
        }
    }

    /// Sends and reports: the response body streamed to stdout as it arrives, one line on
    /// stderr on failure.
    static func send(
        _ request: UploadRequest, body: UploadBody, transport: TransportKind, options: UploadOptions,
        progress: ProgressPrinter.Style
    ) async -> Int32 {
        var options = options
        options.responseBody = .stream { try Terminal.output($0) }
        let uploader = Uploader(transport: transport, options: options)
        let result = await ProgressPrinter.run(style: progress) { report in
            try await uploader.upload(request, body: body, progress: report)
        }
        do {
            let response = try result.get()
            try response.requireSuccess(totalBytes: body.length.value)
            return 0
        } catch let error as UploadError where error.code == .responseSinkFailed {
            let status = error.status.map { "the server answered \($0); " } ?? ""
            Terminal.error(
                "sluice: \(error.underlying.map { "\($0)" } ?? error.message) (\(status)\(error.bytesSent ?? 0) of \(error.totalBytes.map(String.init) ?? "unknown") bytes sent)")
            return 1
        } catch let error as UploadError {
            Terminal.error("sluice: upload failed: \(error)")
            switch error.code {
            case .cancelled: return 130
            case .invalidOption, .invalidURL, .invalidHeader: return 2
            default: return 1
            }
        } catch {
            Terminal.error("sluice: upload failed: \(error)")
            return 1
        }
    }
}
