#if os(Linux)
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

@Suite(
    "curl producers: cancelled stdin ends its thread, a quiet source is named, errors classified by CURLcode",
    .serialized, .hangGuard)
struct CurlProducerTests {
    @Test("a producer that goes quiet is named as the cause of the stall timeout, not the server")
    func quietSourceNamed() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = StallingSource(prefix: 100_000)
        defer { source.release() }
        var options = UploadOptions()
        options.stallTimeout = .seconds(1)
        let request = try UploadRequest(url: sink.url("/sink"), method: "POST")
        let error = await #expect(throws: UploadError.self) {
            try await CurlTransport().send(request, body: .sequential(source), options: options) { _ in }
        }
        #expect(error?.code == .timedOut)
        #expect(error?.message.hasPrefix("the source produced nothing for 1 s") == true, "\(error?.message ?? "")")
    }

    @Test("transient or not is decided by CURLcode: option rejections and TLS are not retried")
    func classifiedByCode() async throws {
        func transport(_ code: Int32) -> UploadError { UploadError(CurlError(code: code).uploadErrorCode, "x", underlying: CurlError(code: code)) }
        #expect(transport(SLUICE_CURLE_RECV_ERROR_VALUE).isTransient)
        #expect(transport(16).isTransient)  // HTTP2
        #expect(!transport(48).isTransient)  // UNKNOWN_OPTION
        #expect(!transport(43).isTransient)  // BAD_FUNCTION_ARGUMENT
        #expect(!UploadError(.transport, "no code").isTransient)
        #expect(!UploadError(.tls, "x", underlying: CurlError(code: 60)).isTransient)
        #expect(CurlError(code: 60).isTLS && CurlError(code: 35).isTLS && !CurlError(code: 56).isTLS)
        // A real rejection by libcurl carries its code.
        let port = try CurlTransportTests.closedPort()
        let request = try UploadRequest(url: "http://127.0.0.1:\(port)/x", method: "PUT")
        let refused = await #expect(throws: UploadError.self) {
            try await CurlTransport().send(request, body: .bytes(SyntheticByteSource(length: 1)), options: UploadOptions()) { _ in }
        }
        #expect((refused?.underlying as? CurlError)?.code == 7)
        #expect(refused?.isTransient == true)
    }
}

private let SLUICE_CURLE_RECV_ERROR_VALUE: Int32 = 56

/// Polls `condition` every 20 ms for up to `seconds`; whether it became true.
func waitUntil(seconds: Double = patienceSeconds, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
#endif
