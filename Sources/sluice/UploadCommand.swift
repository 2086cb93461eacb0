import Foundation
import Sluice

/// `sluice upload SOURCE URL [options]`
struct UploadCommand {
    static let usage = """
    usage: sluice upload SOURCE URL [options]
           sluice upload --form NAME=VALUE|NAME=@PATH[;type=T][;filename=F] ... URL [options]
      SOURCE                     PATH | - (stdin) | synthetic:SIZE[:SEED]
      -F, --form SPEC            a multipart/form-data part, curl -F syntax; repeatable
      --form-string NAME=VALUE   a text part taken literally (no @, <, ;type=)
      -X, --method METHOD        default POST
      -H, --header 'Name: value' repeatable
      -u, --user USER:PASS       answers a 401 challenge; the body is replayed
      --location-trusted         send -u, Authorization, Cookie and Proxy-Authorization
                                 to another origin after a redirect (default: dropped)
      --transport curl|urlsession
      --chunked                  chunked even when the length is known
      --buffer-size BYTES        memory between source and connection (default 1MiB)
      --progress auto|bar|json|none
      --cacert FILE              extra trusted CAs (PEM)
      -k, --insecure             skip TLS verification
      --stall-timeout SECONDS    fail when nothing moves this long (default 60)
    """

    /// What is sent: one SOURCE, or multipart parts in command-line order.
    enum Payload {
        case source(SourceSpecification)
        case form([(text: String, literal: Bool)])
    }

    var payload: Payload
    var url: String
    var method = "POST"
    var headers: [HTTPHeader] = []
    var options = UploadOptions()
    var transport = TransportKind.platformDefault
    var progress = ProgressPrinter.Style.auto

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var method: String?
        var headers: [HTTPHeader] = []
        var options = UploadOptions()
        var transport = TransportKind.platformDefault
        var progress = ProgressPrinter.Style.auto
        var form: [(text: String, literal: Bool)] = []
        try scanner.scan(
            valued: ["-X", "--method", "-H", "--header", "-u", "--user", "--transport", "--buffer-size", "--progress",
                     "--cacert", "--stall-timeout", "-F", "--form", "--form-string"],
            flags: ["--chunked", "-k", "--insecure", "--location-trusted"]
        ) { name, value in
            let value = value ?? ""
            switch name {
            case "-X", "--method": method = value
            case "-F", "--form": form.append((value, false))
            case "--form-string": form.append((value, true))
            case "-H", "--header": headers.append(try HTTPHeader(parsing: value))
            case "-u", "--user": options.credentials = try UploadOptions.Credentials(parsing: value)
            case "--transport":
                transport = try Arguments.transport(value)
            case "--chunked": options.forceChunked = true
            case "--buffer-size":
                let size = try ByteCount.parse(value)
                guard size >= 1024, size <= 512 << 20 else { throw UsageError("--buffer-size must be between 1KiB and 512MiB") }
                options.bufferSize = Int(size)
            case "--progress":
                progress = try Arguments.progressStyle(value)
            case "--cacert": options.caFile = value
            case "-k", "--insecure": options.insecure = true
            case "--location-trusted": options.keepsCredentialsAcrossOrigins = true
            case "--stall-timeout":
                guard let seconds = Double(value), seconds > 0 else { throw UsageError("--stall-timeout needs a positive number of seconds") }
                options.stallTimeout = seconds
            default: break
            }
        }
        if form.isEmpty {
            guard scanner.positionals.count == 2 else {
                throw UsageError(scanner.positionals.count < 2 ? "upload needs SOURCE and URL" : "upload takes SOURCE and URL, got \(scanner.positionals.count) arguments")
            }
            self.payload = .source(try SourceSpecification(parsing: scanner.positionals[0]))
            self.url = scanner.positionals[1]
        } else {
            guard scanner.positionals.count == 1 else {
                throw UsageError("with --form, upload takes only a URL, got \(scanner.positionals.count) arguments")
            }
            self.payload = .form(form)
            self.url = scanner.positionals[0]
        }
        self.method = method ?? "POST"
        self.headers = headers
        self.options = options
        self.transport = transport
        self.progress = progress
    }

    func run() async -> Int32 {
        let request: UploadRequest
        do {
            request = try UploadRequest(url: url, method: method, headers: headers)
        } catch {
            Terminal.error("sluice: \(error)")
            return 2
        }
        switch payload {
        case .source(let source):
            let opened: SourceSpecification.Opened
            do {
                opened = try source.open()
            } catch {
                Terminal.error("sluice: \(error)")
                return 1
            }
            defer { opened.close() }
            return await UploadCommand.send(request, body: opened.body, transport: transport, options: options, progress: progress)
        case .form(let arguments):
            let body: MultipartBody
            let contentType: HTTPHeader
            do {
                let parts = try arguments.map { try $0.literal ? FormArgument.parseLiteral($0.text) : FormArgument.parse($0.text) }
                body = try MultipartBody(parts: parts)
                contentType = try HTTPHeader(name: "Content-Type", value: body.contentType)
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
    static func send(_ request: UploadRequest, body: UploadBody, transport: TransportKind, options: UploadOptions,
                     progress: ProgressPrinter.Style) async -> Int32 {
        var options = options
        options.responseBody = .stream { try Terminal.output($0) }
        let printer = ProgressPrinter(style: progress)
        let uploader = Uploader(transport: transport, options: options)
        let task = Task {
            try await uploader.upload(request, body: body) { printer.report($0) }
        }
        let signals = SignalWatcher { _ in task.cancel() }
        defer { signals.stop() }
        let result = await task.result
        printer.end()
        do {
            let response = try result.get()
            try response.requireSuccess(totalBytes: body.length.value)
            return 0
        } catch let error as UploadError where error.code == .responseSinkFailed {
            let status = error.status.map { "the server answered \($0); " } ?? ""
            Terminal.error("sluice: \(error.underlying.map { "\($0)" } ?? error.message) (\(status)\(error.bytesSent ?? 0) of \(error.totalBytes.map(String.init) ?? "unknown") bytes sent)")
            return 1
        } catch let error as UploadError {
            Terminal.error("sluice: upload failed: \(error)")
            return error.code == .cancelled ? 130 : 1
        } catch {
            Terminal.error("sluice: upload failed: \(error)")
            return 1
        }
    }
}
