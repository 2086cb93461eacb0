import Foundation

extension SigV4Signature {
    /// The signed headers as `HTTPHeader`s for an `UploadRequest`, without `Host` and
    /// `Content-Length`: the transport sends those itself, from the URL
    /// (`SigV4Request.url`) and the body's length, with the same values.
    public func httpHeaders() -> [HTTPHeader] {
        headers.filter { !["host", "content-length"].contains($0.name.lowercased()) }
            .map { HTTPHeader(name: $0.name, value: $0.value) }
    }

    /// An `UploadRequest` for `request` signed as this signature.
    ///
    /// - Throws: `UploadError` for an invalid URL or method.
    public func uploadRequest(for request: SigV4Request) throws -> UploadRequest {
        try UploadRequest(url: request.url, method: request.method, headers: httpHeaders())
    }
}
