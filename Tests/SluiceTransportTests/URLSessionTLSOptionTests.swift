import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// A CA file (`--cacert`, `--ca-bundle`, `AWS_CA_BUNDLE`) and `-k` matter for https only: on
/// URLSession plain http goes, https with either is refused in one line before anything is sent
/// (before: every request refused whenever one was set, `AWS_CA_BUNDLE` on company machines).
@Suite("URLSession and TLS options", .serialized, .hangGuard)
struct URLSessionTLSOptionTests {
    @Test("http with a CA file or -k set: sent", arguments: [false, true])
    func plainHTTPGoes(insecure: Bool) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        var options = UploadOptions()
        if insecure { options.insecure = true } else { options.caFile = "/etc/ssl/certs/ca-certificates.crt" }
        let request = try UploadRequest(url: sink.url("/sink"), method: "PUT")
        let response = try await URLSessionTransport().send(request, body: .bytes(SyntheticByteSource(length: 1_000, seed: 4)), options: options) { _ in }
        #expect(response.status == 200)
        #expect(try CurlSink.report(response).count == 1_000)
    }

    @Test("https with a CA file: refused in one line naming the host, nothing sent")
    func httpsIsRefused() async throws {
        var options = UploadOptions()
        options.caFile = "/etc/ssl/certs/ca-certificates.crt"
        let request = try UploadRequest(url: "https://127.0.0.1:9/x", method: "PUT")
        let error = await #expect(throws: UploadError.self) {
            try await URLSessionTransport().send(request, body: .bytes(SyntheticByteSource(length: 10)), options: options) { _ in }
        }
        #expect(error?.code == .invalidOption)
        #expect(error?.message.contains("https to 127.0.0.1:9") == true && error?.bytesSent == 0, "\(String(describing: error))")
    }
}
