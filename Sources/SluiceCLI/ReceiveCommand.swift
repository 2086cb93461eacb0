import SluiceReceiver
import Foundation
import Sluice

/// `sluice receive [--port N] [--host H] [--store DIR]`: a loopback sink that answers each
/// upload with its byte count and SHA-256, until SIGINT or SIGTERM.
struct ReceiveCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["receive"],
        synopses: [Synopsis("[--port N] [--host H] [--store DIR]", "a loopback sink answering each upload with its size and SHA-256")],
        about: """
            A loopback sink: answers each upload with JSON (bytes, sha256, framing) and logs it on
            stderr, until SIGINT or SIGTERM. Prints 'listening on URL' first.
            """,
        options: options.map(\.spec),
        notes: "Exit status: 0 after SIGINT/SIGTERM; 1 could not listen; 2 usage error.")
    static var specifications: [CommandSpec] { [specification] }

    var port: UInt16 = 0
    var host = "127.0.0.1"
    var store: String?

    /// Every option of `receive`, declared once; each sets the command's own property.
    static var options: [Option<ReceiveCommand>] {
        [
            Option(OptionSpec("--port", value: "N", help: "0 to 65535 (default 0: any free port)")) {
                guard let parsed = UInt16($1) else { throw UsageError("--port needs a number from 0 to 65535, got '\($1)'") }
                $0.port = parsed
            },
            Option(.choice("--host", among: ["127.0.0.1", "::1", "localhost"], help: "default 127.0.0.1")) {
                guard ["127.0.0.1", "::1", "localhost"].contains($1) else {
                    throw UsageError("--host must be 127.0.0.1, ::1 or localhost: the receiver only listens on loopback")
                }
                $0.host = $1
            },
            Option(OptionSpec("--store", value: "DIR", completion: .directory, help: "keep each body in DIR")) { $0.store = $1 },
        ]
    }

    init(arguments: [String]) throws {
        try Arguments.scanOptionsOnly(arguments, Self.specification, Self.options, into: &self)
    }

    func run() async throws -> Int32 {
        let receiver: LoopbackReceiver
        do {
            receiver = try LoopbackReceiver(
                port: port, host: host, storeDirectory: store,
                onUpload: { upload in
                    Terminal.error(upload.json)
                })
        } catch {
            Terminal.error("sluice: \(error)")
            return 1
        }
        do {
            try Terminal.output("listening on \(receiver.url)\n")
        } catch {
            receiver.stop()
            Terminal.error("sluice: \(error)")
            return 1
        }
        let stopped = AsyncStream<Int32>.makeStream()
        let signals = SignalWatcher { signal in stopped.continuation.yield(signal) }
        var iterator = stopped.stream.makeAsyncIterator()
        _ = await iterator.next()
        signals.stop()
        receiver.stop()
        return 0
    }
}
