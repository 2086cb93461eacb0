/// What a command line's SOURCE names: `PATH`, `-` (stdin) or `synthetic:SIZE[:SEED]`.
public enum SourceSpecification: Sendable, Equatable {
    case file(path: String)
    case standardInput
    case synthetic(length: Int64, seed: UInt64)

    /// Parses a SOURCE argument.
    ///
    /// - Throws: `ByteSourceError.invalidSpecification` for a malformed synthetic size or seed.
    public init(parsing text: String) throws {
        if text == "-" {
            self = .standardInput
            return
        }
        if text.hasPrefix("synthetic:") {
            let fields = text.dropFirst("synthetic:".count).split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 1 || fields.count == 2 else {
                throw ByteSourceError.invalidSpecification("invalid source '\(text)': expected synthetic:SIZE[:SEED]")
            }
            let length = try ByteCount.parse(String(fields[0]))
            var seed: UInt64 = 0
            if fields.count == 2 {
                guard let parsed = UInt64(fields[1]) else {
                    throw ByteSourceError.invalidSpecification("invalid seed '\(fields[1])' in '\(text)': expected an unsigned integer")
                }
                seed = parsed
            }
            self = .synthetic(length: length, seed: seed)
            return
        }
        guard !text.isEmpty else { throw ByteSourceError.invalidSpecification("empty source path") }
        self = .file(path: text)
    }
}
