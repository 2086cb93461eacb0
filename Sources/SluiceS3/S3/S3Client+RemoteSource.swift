import Foundation
import SluiceTransport
import SluiceRequests

extension S3Client {
    /// An object of this client's endpoint as a `RemoteByteSource`: one signed `HeadObject`
    /// learns its length and ETag, and every range is a signed `GetObject` with `Range` and
    /// `If-Match` on that ETag, streamed (never a whole part in memory).
    ///
    /// - Parameters:
    ///   - location: The object (a key, not a prefix).
    ///   - options: Retries, timeouts, TLS; `authorize` is set here (SigV4 with this client's
    ///     credentials and region, each attempt signed when it goes).
    /// - Returns: The source; call `close()` after the upload.
    /// - Throws: `S3Error(.credentials)` without credentials; `RemoteSourceError` from the `HEAD`.
    public func remoteSource(of location: S3Location, options: RemoteSourceOptions = RemoteSourceOptions()) async throws -> RemoteByteSource {
        let signer = try makeSigner()
        let client = self
        var options = options
        options.authorize = { method, _, headers in
            var call = S3Call(method: method, location: location, action: method == "HEAD" ? "HeadObject" : "GetObject")
            call.headers = headers.map { SigV4Header($0.name, $0.value) }
            return signer.sign(try client.signingRequest(call), payload: .empty).httpHeaders()
        }
        return try await RemoteByteSource.open(configuration.url(for: location), options: options)
    }
}
