import Foundation
import SluicePrimitives
import SluiceRequests

/// A key `DeleteObjects` did not delete, with the server's reason.
public struct S3DeleteFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key.
    public var key: String
    /// The server's code (`AccessDenied`, `InternalError`, …).
    public var code: String
    /// The server's message.
    public var message: String

    /// A key that was not deleted.
    public init(key: String, code: String, message: String) {
        self.key = key
        self.code = code
        self.message = message
    }

    public var description: String {
        "\(key.debugDescription) not deleted: \(code)\(message.isEmpty ? "" : " (\(message))")"
    }
}

extension S3Client {
    /// The most keys one `DeleteObjects` request names (S3's limit).
    public static let deleteBatchLimit = 1_000

    /// `DeleteObjects` for `keys` in `bucket` (at most `deleteBatchLimit`), quiet: the answer
    /// names only the keys that were not deleted.
    ///
    /// - Returns: The keys the server did not delete, with its reasons; empty when all went.
    /// - Throws: `S3Error` when the request as a whole failed (nothing is known deleted then).
    public func deleteObjects(bucket: String, keys: [String]) async throws -> [S3DeleteFailure] {
        precondition(keys.count <= Self.deleteBatchLimit, "DeleteObjects names at most \(Self.deleteBatchLimit) keys")
        guard !keys.isEmpty else { return [] }
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml += #"<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>"#
        for key in keys { xml += "<Object><Key>\(s3XMLEscape(key))</Key></Object>" }
        xml += "</Delete>"
        let document = Array(xml.utf8)
        // S3 wants the body's MD5 (or a checksum header) on DeleteObjects.
        let md5 = Digest(.md5)
        md5.update(document)
        let call = S3Call(
            method: "POST", location: try S3Location(bucket: bucket, key: ""), query: [SigV4QueryItem("delete")],
            headers: [SigV4Header("Content-MD5", Data(md5.finalize()).base64EncodedString())], action: "DeleteObjects",
            answerLimit: Self.listingAnswerLimit)
        let answer = try await send(call, body: .document(document))
        let root = try S3XMLElement.parseAnswer(answer.response.body, what: "DeleteObjects", expected: "DeleteResult")
        return root.children("Error").map { error in
            S3DeleteFailure(key: error.child("Key")?.text ?? "", code: error.value("Code") ?? "", message: error.value("Message") ?? "")
        }
    }
}
