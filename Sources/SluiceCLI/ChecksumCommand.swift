import Foundation
import Sluice

/// `sluice checksum SOURCE`: SHA-256 of SOURCE, read the way uploads read it.
struct ChecksumCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["checksum"],
        synopses: [Synopsis("SOURCE", "SHA-256 of SOURCE, read the way uploads read it")],
        about: "Prints 'SHA256HEX  BYTES' for SOURCE, read the way uploads read it.",
        operands: [.source],
        notes: "Exit status: 0 done; 1 the source or stdout failed; 2 usage error.")
    static var specifications: [CommandSpec] { [specification] }

    var source: SourceSpecification

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        try scanner.scan(Self.specification) { name, _ in throw UsageError.unhandled(name) }
        guard scanner.positionals.count == 1 else { throw UsageError("checksum needs exactly one SOURCE") }
        source = try SourceSpecification(parsing: scanner.positionals[0])
    }

    func run() -> Int32 {
        do {
            let opened = try source.open()
            defer { opened.close() }
            if let random = opened.source {
                let hex = try Digest.sha256(of: random)
                try Terminal.output("\(hex)  \(random.length)\n")
            } else {
                let (hex, count) = try Digest.sha256(of: opened.sequential ?? FileDescriptorStream.standardInput)
                try Terminal.output("\(hex)  \(count)\n")
            }
            return 0
        } catch {
            Terminal.error("sluice: \(error)")
            return 1
        }
    }
}
