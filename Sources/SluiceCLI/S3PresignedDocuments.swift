import Foundation
import Sluice

// What the three commands of a presigned multipart upload share: the plan and the part list
// as JSON files, and how an S3Error ends the process.

enum S3PresignedDocuments {
    /// The most a plan or part list may hold: 10,000 parts with long URLs fit many times over.
    static let sizeLimit = 64 << 20

    /// Reads and decodes the JSON document at `path` (`-` for stdin), up to `sizeLimit`.
    ///
    /// - Throws: `S3Error` with code `.invalidOption`, in one line naming the file and what
    ///   is wrong with it; an `S3Error` from decoding (an upload S3 would refuse) as it is.
    static func read<Document: Decodable>(_ type: Document.Type, from path: String, what: String) throws -> Document {
        let handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
        guard let handle else { throw S3Error(.invalidOption, "cannot read the \(what) \(path): \(String(cString: strerror(errno)))") }
        let data: Data
        do { data = try handle.read(upToCount: sizeLimit + 1) ?? Data() } catch {
            throw S3Error(.invalidOption, "cannot read the \(what) \(path): \(error)")
        }
        guard data.count <= sizeLimit else { throw S3Error(.invalidOption, "the \(what) \(path) is larger than \(sizeLimit >> 20) MiB") }
        do {
            return try JSONDecoder().decode(Document.self, from: data)
        } catch var error as S3Error {
            error.message = "the \(what) \(path) cannot be used: \(error.message)"
            throw error
        } catch let error as DecodingError {
            throw S3Error(.invalidOption, "the \(what) \(path) is not one sluice writes (\(Self.describe(error)))")
        } catch {
            throw S3Error(.invalidOption, "the \(what) \(path) is not JSON: \(error)")
        }
    }

    /// A document on stdout, one JSON object, keys sorted, URLs unescaped.
    static func write<Document: Encodable>(_ document: Document) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try Terminal.output(String(decoding: try encoder.encode(document), as: UTF8.self) + "\n")
    }

    /// A decoding error in a few words: what is missing or wrong, and where.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case .keyNotFound(let key, let context): return "no \"\(key.stringValue)\"\(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context): return "a value of the wrong type\(path(context))"
        case .dataCorrupted(let context): return "\(context.debugDescription)\(path(context))"
        @unknown default: return "\(error)"
        }
    }
}

extension S3PresignedDocuments {
    /// Runs a command's work and ends it as every S3 command ends: one line on stderr naming
    /// the command for a failure (`describe` words an `S3Error`), and its exit status.
    static func run(
        _ command: String, describe: (S3Error) -> String = { $0.message }, _ work: () async throws -> Int32
    ) async -> Int32 {
        do {
            return try await work()
        } catch let error as UsageError {
            Terminal.error("sluice: \(command): \(error)")
            return 2
        } catch let error as S3Error {
            Terminal.error("sluice: \(command): \(describe(error))")
            return error.exitStatus
        } catch {
            Terminal.error("sluice: \(command): \(error)")
            return 1
        }
    }
}

extension S3Error {
    /// The exit status an S3 command ends with: 130 when interrupted; 2 for what was refused
    /// before anything was sent or created (bad input, a plan S3 cannot take); else 1.
    var exitStatus: Int32 {
        if code == .cancelled { return 130 }
        let usage: [S3Error.Code] = [.invalidLocation, .invalidOption, .configuration, .credentials, .tooManyParts, .partTooLarge, .objectTooLarge]
        return usage.contains(code) && uploadID == nil ? 2 : 1
    }
}

extension Arguments {
    /// Whether `name` is among `items` as an option (before any `--`), alone or as `name=value`.
    static func mentions(_ name: String, in items: [String]) -> Bool {
        for item in items {
            if item == "--" { return false }
            if item == name || item.hasPrefix(name + "=") { return true }
        }
        return false
    }
}

extension Arguments {
    /// `--expires SECONDS` of a presigned URL: whole seconds, 1 to 7 days.
    static func expiry(_ value: String) throws -> Int {
        guard let seconds = Int(value), (1...SigV4Signer.maximumExpiry).contains(seconds) else {
            throw UsageError("--expires '\(value)' must be whole seconds from 1 to \(SigV4Signer.maximumExpiry) (7 days)")
        }
        return seconds
    }
}
