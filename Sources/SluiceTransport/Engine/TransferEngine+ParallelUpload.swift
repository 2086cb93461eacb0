import Foundation

#if canImport(CCurl)
extension TransferEngine {
    /// Sends every part of `upload` on this engine, up to `upload.concurrency` at once: the
    /// part scheduler (`ParallelUpload.send(over:progress:)`) over a `CurlTransport` of this
    /// engine, so each range is read with `pread` straight into libcurl's buffer.
    ///
    /// - Returns: Per-part results in the order of `upload.parts`.
    /// - Throws: `UploadError` (`.cancelled`, or the failing part's code, with a `PartFailure`
    ///   as its `underlying` error).
    public func send<Made: Sendable>(
        _ upload: ParallelUploadOf<Made>, progress: (@Sendable (ParallelProgress) -> Void)? = nil
    ) async throws -> [PartResultOf<Made>] {
        try await upload.send(over: CurlTransport(engine: self), progress: progress)
    }
}
#endif
