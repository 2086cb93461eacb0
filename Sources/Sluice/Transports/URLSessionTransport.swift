/// Placeholder until the URLSession transport lands.
public struct URLSessionTransport: UploadTransport {
    public init() {}
    public func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        throw UploadError(.transport, "the URLSession transport is not built yet")
    }
}
