import Foundation
import SluiceRequests

extension SigV4Signature {
    /// The signed headers as `HTTPHeader`s for an `UploadRequest`, without `Host` and
    /// `Content-Length`: the transport sends those itself, from the URL
    /// (`SigV4Request.url`) and the body's length, with the same values.
    public func httpHeaders() -> [HTTPHeader] {
        headers.compactMap { header in
            // Only a name as long as `host` or `content-length` is lowercased to compare.
            let count = header.name.utf8.count
            if count == 4 || count == 14, ["host", "content-length"].contains(header.name.lowercased()) { return nil }
            return HTTPHeader(name: header.name, value: header.value)
        }
    }

    /// An `UploadRequest` for `request` signed as this signature.
    ///
    /// - Throws: `UploadError` for an invalid URL or method.
    public func uploadRequest(for request: SigV4Request) throws -> UploadRequest {
        try UploadRequest(url: request.url, method: request.method, headers: httpHeaders())
    }
}
