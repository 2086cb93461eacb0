import Foundation
import SluiceRequests

/// What a tus server said about itself in answer to `OPTIONS`.
public struct TusServerInfo: Sendable, Equatable {
    /// `Tus-Version`, most preferred first; empty when the server did not say.
    public var versions: [String]
    /// `Tus-Extension`: `creation`, `creation-with-upload`, `termination`, `checksum`, ...
    public var extensions: Set<String>
    /// `Tus-Max-Size`, when given.
    public var maximumSize: Int64?
    /// `Tus-Checksum-Algorithm`, lowercased.
    public var checksumAlgorithms: [String]

    /// What a server said in its `OPTIONS` answer.
    public init(versions: [String] = [], extensions: Set<String> = [], maximumSize: Int64? = nil, checksumAlgorithms: [String] = []) {
        self.versions = versions
        self.extensions = extensions
        self.maximumSize = maximumSize
        self.checksumAlgorithms = checksumAlgorithms
    }

    /// Whether `Tus-Extension` lists `name`.
    public func supports(_ name: String) -> Bool { extensions.contains(name) }

    /// Reads the discovery headers of `response`.
    package init(_ response: UploadResponse) {
        func list(_ name: String) -> [String] {
            (response.header(name) ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        versions = list("Tus-Version")
        extensions = Set(list("Tus-Extension"))
        maximumSize = response.header("Tus-Max-Size").flatMap { Int64($0) }
        checksumAlgorithms = list("Tus-Checksum-Algorithm").map { $0.lowercased() }
    }
}
