import Foundation
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// A tus upload's attempts under its `RetryPolicy`.
///
/// A transient failure is a connection failure (`RetryPolicy.isTransient`), a 423 or a status
/// every protocol retries (408, 429, 5xx); anything else is turned into a `TusError` and thrown
/// at once. Progress is the highest offset the server ever confirmed rising: a server whose
/// offset goes back and forth (two backends without shared storage) does not start the count
/// of failures in a row again, and the failures in all are capped too.
package struct TusRetrier {
    private var budget: RetryBudget
    /// The highest offset the server ever confirmed.
    package private(set) var highest: Int64 = 0

    package init(options: TusOptions) {
        budget = RetryBudget(options.retryPolicy)
    }

    /// Transient failures so far.
    package var total: Int { budget.failures }

    /// The server confirmed `offset`: progress only when it passes every offset it confirmed before.
    package mutating func confirmed(_ offset: Int64) {
        guard offset > highest else { return }
        highest = offset
        budget.progressed()
    }

    /// Rethrows `error` as a `TusError` unless it is transient and the budget allows
    /// another attempt, in which case it returns after the backoff delay.
    package mutating func absorb(
        _ error: any Error, action: String, uploadURL: String?, offset: Int64? = nil, total length: Int64? = nil
    ) async throws {
        let cause: String
        switch error {
        case let error as TusError:
            throw error
        case is CancellationError:
            throw TusError(.cancelled, "cancelled during \(action)", uploadURL: uploadURL, offset: offset, totalBytes: length)
        case let error as UploadError where error.code == .cancelled:
            throw TusError(
                .cancelled, "cancelled during \(action)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                underlying: error)
        case let error as UploadError where error.isTransient:
            cause = error.message
        case let error as TusTransientStatus:
            cause = "the server answered \(error.status) to \(error.action)"
        case let error as UploadError where error.code == .sourceFailed:
            throw TusError(
                .source, "\(action) failed: \(error.message)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                underlying: error)
        case let error as ByteSourceError:
            throw TusError(
                .source, "\(action) failed: \(error)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                underlying: error)
        default:
            throw TusError(
                .transport, "\(action) failed: \(error)", uploadURL: uploadURL, offset: offset, totalBytes: length,
                underlying: error)
        }
        switch budget.failed() {
        case .failure(let exhausted):
            let highest = highest > 0 ? " (the highest offset it confirmed: \(highest))" : ""
            throw TusError(
                .retriesExhausted, "\(action) failed \(exhausted), last: \(cause)\(highest)",
                uploadURL: uploadURL, offset: offset, totalBytes: length, underlying: error)
        case .success(let delay):
            do { try await Task.sleep(for: delay) } catch {
                throw TusError(
                    .cancelled, "cancelled while waiting to retry \(action)", uploadURL: uploadURL, offset: offset,
                    totalBytes: length)
            }
        }
    }
}
