import SluiceRequests
import SluiceTransport

extension S3Error.Code {
    /// What a transport's failure means to S3, for a single request (`S3Client.classify`) and for
    /// a part (`S3Client.partsError`) alike: one mapping from the transport's typed code.
    ///
    /// - Parameters:
    ///   - error: The transport's failure (or the part scheduler's, which keeps its code).
    ///   - exhausted: The failure was transient and the retry policy allowed no more.
    /// - Returns: The code, and whether another attempt may help (`RetryPolicy.isTransient`).
    package static func of(transport error: UploadError, exhausted: Bool = false) -> (code: S3Error.Code, retryable: Bool) {
        switch error.code {
        case .cancelled: return (.cancelled, false)
        // A redirect not followed, or a status the scheduler's verdict judged: S3's answer.
        case .tooManyRedirects, .httpStatus: return (.server, false)
        // Refused by the transport before any byte was sent (a signed path it would change).
        case .invalidURL: return (.invalidLocation, false)
        case .sourceFailed: return (.source, false)
        default:
            let retryable = !exhausted && error.isTransient
            return (exhausted ? .retriesExhausted : .transport, retryable)
        }
    }
}
