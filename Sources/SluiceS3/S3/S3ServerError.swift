import Foundation
import SluicePrimitives
import SluiceRequests
import SluiceTransport

/// An S3 error document (`<Error><Code>…</Code><Message>…</Message>…</Error>`) and what it
/// means, in one line.
public struct S3ServerError: Error, Sendable, Equatable {
    /// S3's error code: `SignatureDoesNotMatch`, `AccessDenied`, `SlowDown`, …
    public var code: String
    /// S3's message, in its own words.
    public var message: String
    /// The request id (`x-amz-request-id` or `<RequestId>`), for the store's support.
    public var requestID: String?
    /// The resource S3 named, when it did.
    public var resource: String?

    /// An error document's fields.
    public init(code: String, message: String, requestID: String? = nil, resource: String? = nil) {
        self.code = code
        self.message = message
        self.requestID = requestID
        self.resource = resource
    }

    /// An error document's fields; the server's words redacted where they are read (a
    /// gateway may echo the request's headers, an SSE-C key or a token among them).
    package init(element: S3XMLElement) {
        code = element.value("Code") ?? ""
        message = Redaction.secrets(in: element.value("Message") ?? "")
        requestID = element.value("RequestId")
        resource = element.value("Resource").map(Redaction.secrets(in:))
    }

    /// Reads an error answer's body. A body that is not an error document (an empty body to
    /// `HEAD`, a proxy's HTML page) gives a code from the status alone.
    public init(status: Int, body: Data) {
        if let root = try? S3XMLElement.parse(body, what: "error"), root.name == "Error" {
            self.init(element: root)
            if code.isEmpty { code = Self.code(forStatus: status) }
            return
        }
        let text =
            String(decoding: body.prefix(200), as: UTF8.self)
            .split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        self.init(code: Self.code(forStatus: status), message: text.hasPrefix("<") ? "" : Redaction.secrets(in: text))
    }

    /// The error an answer proves, if any: a non-2xx answer's (as `init(status:body:)` reads
    /// it), or the `<Error>` document a 2xx carries. S3 answers `200` and then an error to a
    /// `CompleteMultipartUpload` or a copy that failed after the status went out, and a gateway
    /// may to any call: that answer is the error, never a success.
    ///
    /// - Returns: nil for a 2xx whose body is not an error document.
    /// - Throws: `S3Error.malformedResponse` for a 2xx whose body begins an error document
    ///   that does not parse (cut off): it proves neither.
    package static func refusal(in response: UploadResponse, action: String) throws(S3Error) -> S3ServerError? {
        guard response.isSuccess else { return S3ServerError(status: response.status, body: response.body) }
        // Only a body that names an element `Error` is parsed here (a `DeleteResult` lists its
        // keys' errors as `<Error>` children, and is parsed again below to see its root).
        guard !response.body.isEmpty, response.body.range(of: Data("<Error".utf8)) != nil else { return nil }
        let root: S3XMLElement
        do { root = try S3XMLElement.parse(response.body, what: action) } catch {
            throw S3Error(
                .malformedResponse, "the server's \(response.status) answer to \(action) is a cut-off error document: \((error as? S3Error)?.message ?? "\(error)")",
                status: response.status)
        }
        guard root.name == "Error" else { return nil }
        var error = S3ServerError(element: root)
        if error.code.isEmpty { error.code = Self.code(forStatus: response.status) }
        if error.requestID == nil { error.requestID = response.header("x-amz-request-id") }
        return error
    }

    package static func code(forStatus status: Int) -> String {
        switch status {
        case 301: return "PermanentRedirect"
        case 400: return "BadRequest"
        case 403: return "AccessDenied"
        case 404: return "NotFound"
        case 405: return "MethodNotAllowed"
        case 411: return "MissingContentLength"
        case 412: return "PreconditionFailed"
        case 417: return "ExpectationFailed"
        case 500: return "InternalError"
        case 501: return "NotImplemented"
        case 503: return "ServiceUnavailable"
        default: return "HTTP\(status)"
        }
    }

    /// Whether the same request may succeed if sent again after a pause.
    public func isRetryable(status: Int) -> Bool { Self.isRetryable(code: code, status: status) }

    /// Whether a request S3 refused with `code` and `status` may succeed if sent again after a
    /// pause: the one list every S3 call and the job's "run again" hint read.
    public static func isRetryable(code: String, status: Int) -> Bool {
        let transientCodes: Set<String> = [
            "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "RequestTimeTooSkewed",
            "Throttling", "ThrottlingException", "RequestLimitExceeded", "OperationAborted",
        ]
        // A store that does not implement the call (501 NotImplemented) answers so again.
        if code == "NotImplemented" { return false }
        return transientCodes.contains(code) || RetryPolicy.isTransient(status: status)
    }

    /// What the error means for the user, in words: the cause and what to do.
    public var explanation: String {
        let detail = message.isEmpty ? "" : ": \(message)"
        switch code {
        case "SignatureDoesNotMatch":
            return "the server refused the request signature (SignatureDoesNotMatch): the secret access key is wrong for this access key, or a proxy changed the request"
        case "InvalidAccessKeyId":
            return "the server does not know this access key (InvalidAccessKeyId)"
        case "AccessDenied":
            return "access denied (AccessDenied)\(detail): the credentials may not write there"
        case "NoSuchBucket":
            return "the bucket does not exist (NoSuchBucket)"
        case "NoSuchUpload":
            return "the multipart upload does not exist any more (NoSuchUpload): it was completed or aborted"
        case "EntityTooSmall":
            return "the server refused a part below its minimum size (EntityTooSmall): every part but the last must be at least 5 MiB"
        case "EntityTooLarge":
            return "the server refused a part or object above its maximum size (EntityTooLarge)"
        case "InvalidPart":
            return "the server does not hold a listed part with that ETag (InvalidPart)\(detail)"
        case "InvalidPartOrder":
            return "the parts were not listed in ascending order (InvalidPartOrder)"
        case "BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch":
            return "the server's checksum of the bytes differs from the one sent (\(code)): the data changed on the way"
        case "SlowDown":
            return "the server asks to slow down (SlowDown)"
        case "RequestTimeTooSkewed":
            return "this machine's clock is too far from the server's (RequestTimeTooSkewed)"
        case "ExpiredToken", "TokenRefreshRequired":
            return "the session token has expired (\(code))"
        case "ExpectationFailed":
            // Before: "417 HTTP417".
            return "the server refused the request's Expect: 100-continue (417 Expectation Failed)\(detail): the body was not taken, and the request was not sent again without it"
        case "PermanentRedirect", "AuthorizationHeaderMalformed":
            return "the bucket is in another region (\(code))\(detail): give the bucket's region"
        default:
            return "\(code)\(detail)"
        }
    }

    /// An `S3Error` with code `.server`, naming the action, status and explanation.
    package func error(status: Int, action: String, uploadID: String? = nil, partNumber: Int? = nil) -> S3Error {
        var line = "\(action)"
        if let partNumber { line += " of part \(partNumber)" }
        line += " failed: \(status) \(explanation)"
        if let requestID, !requestID.isEmpty { line += " [request \(requestID)]" }
        return S3Error(
            .server, line, status: status, serverCode: code, requestID: requestID, uploadID: uploadID, partNumber: partNumber,
            underlying: self)
    }
}
