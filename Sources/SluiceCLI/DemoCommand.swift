import SluiceReceiver
import Foundation
import Sluice

/// `sluice demo [--size SIZE] [--seed N] [--transport T]`: starts the loopback receiver,
/// uploads a synthetic source to it, checks the server's SHA-256 against the source's, and
/// prints bytes, throughput and this process's peak memory.
struct DemoCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["demo"],
        synopses: [
            Synopsis(
                "[--size SIZE] [--seed N] [--transport curl|urlsession] [--progress STYLE]",
                "an upload end to end on this machine, verified")
        ],
        about: """
            Starts a loopback receiver, uploads synthetic:SIZE:SEED to it, checks the server's SHA-256
            against the source's and prints bytes, throughput and peak memory.
            """,
        options: options.map(\.spec),
        notes: "Exit status: 0 verified; 1 failed or mismatched; 2 usage error; 130 interrupted.")
    static var specifications: [CommandSpec] { [specification] }

    var length: Int64 = 4 << 30
    var seed: UInt64 = 2026
    var transport = TransportKind.platformDefault
    var progress = ProgressPrinter.Style.auto

    /// Every option of `demo`, declared once; each sets the command's own property.
    static var options: [Option<DemoCommand>] {
        [
            Option(OptionSpec("--size", value: "SIZE", help: "default 4GiB")) { $0.length = try ByteCount.parse($1) },
            Option(OptionSpec("--seed", value: "N", help: "an unsigned integer (default 2026)")) {
                guard let parsed = UInt64($1) else { throw UsageError("--seed needs an unsigned integer") }
                $0.seed = parsed
            },
            .transport(\.transport),
            .progress(\.progress),
            .noProgress(\.progress),
        ]
    }

    init(arguments: [String]) throws {
        try Arguments.scanOptionsOnly(arguments, Self.specification, Self.options, into: &self)
    }

    func run() async throws -> Int32 {
        let receiver: LoopbackReceiver
        do {
            receiver = try LoopbackReceiver()
        } catch {
            Terminal.error("sluice: demo: could not start the receiver: \(error)")
            return 1
        }
        defer { receiver.stop() }
        let source = SyntheticByteSource(length: length, seed: seed)
        try Terminal.output("sluice demo: uploading synthetic:\(length):\(seed) (\(Terminal.bytes(length))) to \(receiver.url)demo.bin with \(transport.rawValue)" + "\n")
        let request = try UploadRequest(url: receiver.url + "demo.bin", method: "PUT")
        var options = UploadOptions()
        options.progressInterval = .milliseconds(200)
        let uploader = Uploader(transport: transport, options: options)
        let start = ContinuousClock.now
        let result = await ProgressPrinter.run(style: progress) { report in
            try await uploader.upload(request, body: .bytes(source), progress: report)
        }
        let response: UploadResponse
        do {
            response = try result.get()
            try response.requireSuccess(totalBytes: length)
        } catch {
            Terminal.error("sluice: demo: upload failed: \(error)")
            if let error = error as? UploadError, error.code == .cancelled { return 130 }
            return 1
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        guard let received = receiver.completed.last else {
            Terminal.error("sluice: demo: the receiver recorded no upload")
            return 1
        }
        // The source's own hash, read again after the upload so it does not slow the upload.
        let sourceHash = try await Task.detached { try Digest.sha256(of: source) }.value
        let rate = Double(length) / max(seconds, 1e-9)
        try Terminal.output(
            "sent      \(response.bytesSent) bytes in \(String(format: "%.2f", seconds)) s: \(Terminal.bytes(Terminal.whole(rate)))/s"
                + "\n")
        try Terminal.output(
            "server    \(received.bytes) bytes, sha256 \(received.sha256), \(received.chunked ? "chunked" : "Content-Length: \(received.contentLength ?? -1)")" + "\n")
        try Terminal.output("source    \(length) bytes, sha256 \(sourceHash)" + "\n")
        if let peak = Terminal.peakResidentBytes() {
            try Terminal.output("memory    peak RSS \(Terminal.bytes(peak)) for a \(Terminal.bytes(length)) body" + "\n")
        }
        guard received.bytes == length, received.sha256 == sourceHash else {
            Terminal.error("sluice: demo: MISMATCH: the server got \(received.bytes) bytes with sha256 \(received.sha256)")
            return 1
        }
        try Terminal.output("verified  the server's SHA-256 equals the source's" + "\n")
        return 0
    }
}
