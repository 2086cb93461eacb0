import Foundation
import Sluice

/// `sluice checksum [--algorithm A] SOURCE`: SHA-256 of SOURCE, read the way uploads read it,
/// or the base64 checksum S3 shows for an object holding it.
struct ChecksumCommand: Subcommand {
    static let specification = CommandSpec(
        path: ["checksum"],
        synopses: [Synopsis("[--algorithm A] SOURCE", "SHA-256 of SOURCE, or the checksum S3 shows for it")],
        about: """
            Prints 'SHA256HEX  BYTES' for SOURCE, read the way uploads read it. With --algorithm, prints
            'BASE64  BYTES': the value S3 shows in HeadObject and GetObjectAttributes (checksum mode on)
            for an object holding SOURCE with a full-object checksum (crc64nvme: every new S3 object's;
            `s3 cp --checksum crc64nvme`), so an object can be checked against a file without reading it.
            """,
        operands: [.source],
        options: options.map(\.spec),
        notes: "Exit status: 0 done; 1 the source or stdout failed; 2 usage error.")
    static var specifications: [CommandSpec] { [specification] }

    /// Every option of `checksum`, declared once: what it sets is the algorithm.
    static var options: [Option<ChecksumAlgorithm?>] {
        [
            Option(
                .choice("--algorithm", among: ["crc64nvme", "crc32c", "crc32", "sha1", "sha256"], help: "the checksum, in S3's base64")
            ) {
                guard let chosen = ChecksumAlgorithm(name: $1) else {
                    throw UsageError("unknown algorithm '\($1)': use crc64nvme, crc32c, crc32, sha1 or sha256")
                }
                $0 = chosen
            }
        ]
    }

    var source: SourceSpecification
    var algorithm: ChecksumAlgorithm?

    init(arguments: [String]) throws {
        var scanner = Arguments(arguments)
        var algorithm: ChecksumAlgorithm?
        try scanner.scan(Self.specification, Self.options, into: &algorithm)
        guard scanner.positionals.count == 1 else { throw UsageError("checksum needs exactly one SOURCE") }
        source = try SourceSpecification(parsing: scanner.positionals[0])
        self.algorithm = algorithm
    }

    func run() -> Int32 {
        do {
            let opened = try source.open()
            defer { opened.close() }
            if let algorithm {
                if let random = opened.source {
                    try Terminal.output("\(try ChecksumHasher.checksum(algorithm, of: random).base64)  \(random.length)\n")
                } else {
                    let hasher = ChecksumHasher(algorithm)
                    let stream = opened.sequential ?? FileDescriptorStream.standardInput
                    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
                    defer { buffer.deallocate() }
                    while case let count = try stream.read(into: buffer), count > 0 { hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<count])) }
                    try Terminal.output("\(hasher.finalize().base64)  \(hasher.count)\n")
                }
            } else if let random = opened.source {
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
