import Foundation

/// Counts transient failures in a row and waits between attempts with exponential backoff.
///
/// A transient failure is a connection failure (`UploadError.isTransient`), a 423 or a 5xx;
/// anything else is turned into a `TusError` and thrown at once. `progressed()` starts the
/// count again, so a long upload over a flaky network is not capped by its total failures.
struct TusRetrier {
    let limit: Int
    let baseDelay: Duration
    let maximumDelay: Duration
    private(set) var consecutive = 0
    private(set) var total = 0

    init(options: TusOptions) {
        limit = options.retries
        baseDelay = options.retryDelay
        maximumDelay = options.maximumRetryDelay
    }

    /// The server's offset moved forward.
    mutating func progressed() { consecutive = 0 }

    /// Rethrows `error` as a `TusError` unless it is transient and the budget allows
    /// another attempt, in which case it returns after the backoff delay.
    mutating func absorb(
        _ error: any Error, action: String, uploadURL: String?, offset: Int64? = nil, total length: Int64? = nil
    ) async throws {
        let cause: String
        switch error {
        case let error as TusError:
            throw error
        case is CancellationError:
            throw TusError(.cancelled, "cancelled during \(action)", uploadURL: uploadURL, offset: offset, totalBytes: length)
        case let error as UploadError where error.code == .cancelled:
            throw TusError(.cancelled, "cancelled during \(action)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                           underlying: error)
        case let error as UploadError where error.isTransient:
            cause = error.message
        case let error as TusTransientStatus:
            cause = "the server answered \(error.status) to \(error.action)"
        case let error as UploadError where error.code == .sourceFailed:
            throw TusError(.source, "\(action) failed: \(error.message)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                           underlying: error)
        case let error as ByteSourceError:
            throw TusError(.source, "\(action) failed: \(error)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                           underlying: error)
        default:
            throw TusError(.transport, "\(action) failed: \(error)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                           underlying: error)
        }
        consecutive += 1
        total += 1
        guard consecutive <= limit else {
            throw TusError(.retriesExhausted, "\(action) failed \(consecutive == 1 ? "once" : "\(consecutive) times in a row"), last: \(cause)",
                           uploadURL: uploadURL, offset: offset, totalBytes: length, underlying: error)
        }
        let delay = Duration.backoff(base: baseDelay, maximum: maximumDelay, attempt: consecutive)
        do { try await Task.sleep(for: delay) } catch {
            throw TusError(.cancelled, "cancelled while waiting to retry \(action)", uploadURL: uploadURL, offset: offset,
                           totalBytes: length)
        }
    }
}
