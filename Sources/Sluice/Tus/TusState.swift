import Foundation

/// What Sluice keeps about one upload between runs.
public struct TusRecord: Codable, Sendable, Equatable {
    /// The creation endpoint the upload was made at.
    public var endpoint: String
    /// `TusSource.identity` of the source.
    public var identity: String
    /// The upload's URL, absolute.
    public var uploadURL: String
    /// The source's fingerprint when the upload was created.
    public var fingerprint: TusFingerprint
    /// When the upload was created (seconds since 1970).
    public var createdAt: Double

    public init(endpoint: String, identity: String, uploadURL: String, fingerprint: TusFingerprint, createdAt: Double) {
        self.endpoint = endpoint
        self.identity = identity
        self.uploadURL = uploadURL
        self.fingerprint = fingerprint
        self.createdAt = createdAt
    }
}

/// A directory of `TusRecord`s, one JSON file per (endpoint, source identity).
///
/// - Important: Writes go to a temporary file in the same directory, then `rename`, so a
///   record is either the old one or the new one, even after SIGKILL or a power cut.
public struct TusStateStore: Sendable {
    public let directory: String

    /// - Parameter directory: `nil` for `defaultDirectory`.
    public init(directory: String? = nil) {
        self.directory = directory ?? Self.defaultDirectory
    }

    /// `$XDG_CACHE_HOME/sluice/tus`, else `$HOME/.cache/sluice/tus`.
    public static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            return cache + "/sluice/tus"
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.cache/sluice/tus"
    }

    /// The record file for (endpoint, identity).
    public func path(endpoint: String, identity: String) -> String {
        let digest = Digest(.sha256)
        digest.update(Array("\(endpoint)\n\(identity)".utf8))
        return directory + "/" + digest.finalizeHex().prefix(32) + ".json"
    }

    /// The stored record, or nil when there is none.
    ///
    /// - Throws: `TusError` with code `.state` when the file exists but cannot be read or parsed.
    public func load(endpoint: String, identity: String) throws -> TusRecord? {
        let path = path(endpoint: endpoint, identity: identity)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try JSONDecoder().decode(TusRecord.self, from: data)
        } catch {
            throw TusError(.state, "cannot read the resume state \(path): \(error) (remove it to start over)", underlying: error)
        }
    }

    /// Stores `record` atomically.
    ///
    /// - Throws: `TusError` with code `.state`.
    public func save(_ record: TusRecord) throws {
        let path = path(endpoint: record.endpoint, identity: record.identity)
        let temporary = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let data = try encoder.encode(record)
            guard FileManager.default.createFile(atPath: temporary, contents: data) else {
                throw CocoaError(.fileWriteUnknown)
            }
            guard rename(temporary, path) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw TusError(.state, "cannot write the resume state \(path): \(error)", uploadURL: record.uploadURL, underlying: error)
        }
    }

    /// Removes the record for (endpoint, identity), if any.
    public func remove(endpoint: String, identity: String) {
        try? FileManager.default.removeItem(atPath: path(endpoint: endpoint, identity: identity))
    }

    /// Removes every record that points at `uploadURL`.
    ///
    /// - Returns: How many records were removed.
    @discardableResult
    public func remove(uploadURL: String) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var removed = 0
        for name in names where name.hasSuffix(".json") {
            let path = directory + "/" + name
            guard let data = FileManager.default.contents(atPath: path),
                  let record = try? JSONDecoder().decode(TusRecord.self, from: data),
                  record.uploadURL == uploadURL else { continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed += 1 }
        }
        return removed
    }
}
