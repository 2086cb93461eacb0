import Foundation
import Sluice

/// What a command line's SOURCE names: `PATH`, `-` (stdin), `synthetic:SIZE[:SEED]`, an
/// `http(s)://` URL or an `s3://BUCKET/KEY` object (`s3 cp`).
enum SourceSpecification: Sendable, Equatable {
    case file(path: String)
    case standardInput
    case synthetic(length: Int64, seed: UInt64)
    case remote(URL)
    case object(S3Location)

    /// Parses a SOURCE argument.
    ///
    /// - Throws: `UsageError` for a malformed synthetic size or seed.
    init(parsing text: String) throws(UsageError) {
        if text == "-" {
            self = .standardInput
            return
        }
        if text.hasPrefix("synthetic:") {
            let fields = text.dropFirst("synthetic:".count).split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 1 || fields.count == 2 else {
                throw UsageError("invalid source '\(text)': expected synthetic:SIZE[:SEED]")
            }
            let length = try ByteCount.parse(String(fields[0]))
            var seed: UInt64 = 0
            if fields.count == 2 {
                guard let parsed = UInt64(fields[1]) else {
                    throw UsageError("invalid seed '\(fields[1])' in '\(text)': expected an unsigned integer")
                }
                seed = parsed
            }
            self = .synthetic(length: length, seed: seed)
            return
        }
        let lowered = text.prefix(8).lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            guard let url = URL(string: text), url.isHTTPWithHost else {
                throw UsageError("invalid source URL '\(text)': expected http(s)://HOST[:PORT]/PATH")
            }
            self = .remote(url)
            return
        }
        if text.hasPrefix("s3://") {
            guard let location = try? S3Location(parsing: text), !location.key.isEmpty, !location.key.hasSuffix("/") else {
                throw UsageError("invalid source '\(text)': expected s3://BUCKET/KEY, an object (prefixes are not copied yet)")
            }
            self = .object(location)
            return
        }
        guard !text.isEmpty else { throw UsageError("empty source path") }
        self = .file(path: text)
    }
}
