/// Placeholder until the libcurl transport lands.
public struct CurlTransport: UploadTransport {
    public init() {}
    public func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        throw UploadError(.transport, "the curl transport is not built yet")
    }
}
