/// An operation that reports progress through a callback, run so that its progress is an
/// `AsyncSequence` instead: the one implementation behind every client's `…WithProgress`
/// (`Uploader`, `S3Client`, `TusClient`, `UploadJob`).
///
/// - Important: The stream keeps the newest 16 reports when its reader falls behind (each is
///   a whole snapshot, so none is needed to read the next), and finishes exactly once, when the
///   operation ends, whether it returned, threw or was cancelled. Cancelling the task cancels
///   the operation; the stream then finishes too.
package enum ProgressSequence {
    /// Starts `operation` in a task of its own.
    ///
    /// - Parameter operation: The work; it calls `report` with each progress report, from any thread.
    /// - Returns: The reports, and the task whose value is the operation's result.
    package static func run<Progress: Sendable, Success: Sendable>(
        _ operation: @escaping @Sendable (_ report: @escaping @Sendable (Progress) -> Void) async throws -> Success
    ) -> (progress: AsyncStream<Progress>, result: Task<Success, any Error>) {
        let (stream, continuation) = AsyncStream<Progress>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let task = Task {
            defer { continuation.finish() }
            return try await operation { continuation.yield($0) }
        }
        return (stream, task)
    }
}
