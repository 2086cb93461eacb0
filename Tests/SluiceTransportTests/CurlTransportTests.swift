#if os(Linux)
import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

@Suite("CurlTransport against a loopback sink", .serialized, .hangGuard)
struct CurlTransportTests {
    let transport = CurlTransport()

    private func send(
        _ sink: CurlSink, _ path: String, method: String = "PUT", body: UploadBody,
        options: UploadOptions = UploadOptions(), progress: @escaping @Sendable (Int64) -> Void = { _ in }
    ) async throws -> UploadResponse {
        let request = try UploadRequest(url: sink.url(path), method: method)
        return try await transport.send(request, body: body, options: options, progress: progress)
    }

    @Test("known length: Content-Length, no Transfer-Encoding, every byte, progress to the end")
    func knownLength() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 10 * 1_048_576 + 37, seed: 3)
        let last = Lock<Int64>(0)
        let response = try await send(sink, "/sink", body: .bytes(source)) { sent in last.withLock { $0 = max($0, sent) } }
        let report = try CurlSink.report(response)
        #expect(response.status == 200)
        #expect(report.count == source.length)
        #expect(report.sha256 == (try Digest.sha256(of: source)))
        #expect(report.headers["content-length"] == "\(source.length)")
        #expect(report.headers["transfer-encoding"] == nil)
        #expect(!report.chunked)
        #expect(response.bytesSent == source.length)
        #expect(last.withLock { $0 } == source.length)
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test("a body under 64 KiB goes with the request head: the method kept, no Content-Type of libcurl's, every byte, replayed on a 307")
    func inlineBody() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 40_000, seed: 21)
        for method in ["PUT", "POST", "PATCH"] {
            let last = Lock<Int64>(0)
            let response = try await send(sink, "/sink", method: method, body: .bytes(source)) { sent in last.withLock { $0 = max($0, sent) } }
            let report = try CurlSink.report(response)
            #expect(report.method == method)
            #expect(report.sha256 == (try Digest.sha256(of: source)))
            #expect(report.headers["content-length"] == "40000")
            #expect(report.headers["content-type"] == nil, "libcurl's form type on a \(method)")
            #expect(report.headers["expect"] == nil)
            #expect(response.bytesSent == source.length)
            #expect(last.withLock { $0 } == source.length)
        }
        let typed = try UploadRequest(
            url: sink.url("/sink"), method: "PATCH",
            headers: [HTTPHeader(name: "Content-Type", value: "application/offset+octet-stream")])
        let report = try CurlSink.report(try await transport.send(typed, body: .bytes(source, from: 1_000), options: UploadOptions()) { _ in })
        #expect(report.headers["content-type"] == "application/offset+octet-stream")
        #expect(report.sha256 == (try Digest.sha256(of: try SliceByteSource(source, range: 1_000..<source.length))))
        let redirected = try await send(sink, "/redirect307?to=/sink/final", body: .bytes(source))
        #expect(redirected.status == 200 && redirected.url.path == "/sink/final")
        #expect(try CurlSink.report(redirected).sha256 == (try Digest.sha256(of: source)))
        #expect(redirected.bytesSent == source.length)
    }

    @Test("a body under 64 KiB whose source fails or ends early: sourceFailed with the offset, nothing sent", arguments: [FaultySource.Fault.fail, .endEarly])
    func inlineBodySourceFails(_ fault: FaultySource.Fault) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = FaultySource(base: SyntheticByteSource(length: 50_000), faultOffset: 33_331, fault: fault)
        let error = await #expect(throws: UploadError.self) { try await send(sink, "/sink", body: .bytes(source)) }
        #expect(error?.code == .sourceFailed)
        #expect(error?.offset == 33_331)
        #expect(error?.totalBytes == 50_000)
        #expect((error?.bytesSent ?? 0) == 0)
        if fault == .fail { #expect(error?.underlying is FaultySource.Injected) }
    }

    @Test("the path goes out as given: dot segments and // are not removed (S3 keys, signed paths)")
    func pathAsIs() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        for path in ["/a/../b", "/./x", "/a//b", "/c/./d?q=1"] {
            let report = try CurlSink.report(try await send(sink, path, body: .bytes(SyntheticByteSource(length: 3, seed: 1))))
            #expect(report.path == path)
        }
    }

    @Test("a start offset sends the rest of the source")
    func startOffset() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 1_000_003, seed: 9)
        let response = try await send(sink, "/sink", body: .bytes(source, from: 71))
        let report = try CurlSink.report(response)
        #expect(report.count == source.length - 71)
        #expect(report.sha256 == (try Digest.sha256(of: try SliceByteSource(source, range: 71..<source.length))))
        #expect(report.headers["content-length"] == "\(source.length - 71)")
    }

    @Test("forceChunked: chunked framing and no Content-Length, even with a known length")
    func forcedChunked() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 1_048_579, seed: 4)
        var options = UploadOptions()
        options.forceChunked = true
        let report = try CurlSink.report(try await send(sink, "/sink", method: "POST", body: .bytes(source), options: options))
        #expect(report.chunked)
        #expect(report.headers["content-length"] == nil)
        #expect(report.count == source.length)
        #expect(report.sha256 == (try Digest.sha256(of: source)))
    }

    @Test("a pipe of unknown length goes chunked, paused and resumed by its producer")
    func sequentialUnknownLength() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 5_000_011, seed: 5)
        let stream = syntheticPipe(source)
        defer { close(stream.fd) }
        var options = UploadOptions()
        options.bufferSize = 65_537
        let response = try await send(sink, "/sink", method: "POST", body: .sequential(stream), options: options)
        let report = try CurlSink.report(response)
        #expect(report.chunked)
        #expect(report.headers["content-length"] == nil)
        #expect(report.count == source.length)
        #expect(report.sha256 == (try Digest.sha256(of: source)))
        #expect(response.bytesSent == source.length)
    }

    @Test("a pipe of known length sends Content-Length")
    func sequentialKnownLength() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 3_000_017, seed: 6)
        let stream = syntheticPipe(source, length: .known(source.length))
        defer { close(stream.fd) }
        let report = try CurlSink.report(try await send(sink, "/sink", body: .sequential(stream)))
        #expect(!report.chunked)
        #expect(report.headers["content-length"] == "\(source.length)")
        #expect(report.sha256 == (try Digest.sha256(of: source)))
    }

    @Test("a pipe that ends before its declared length fails, no 2xx")
    func sequentialEndsEarly() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 200_000, seed: 6)
        let stream = syntheticPipe(source, length: .known(300_000))
        defer { close(stream.fd) }
        let error = await #expect(throws: UploadError.self) { try await send(sink, "/sink", body: .sequential(stream)) }
        #expect(error?.code == .sourceFailed)
        #expect(error?.offset == 200_000)
        #expect(error?.totalBytes == 300_000)
    }

    @Test("an InputStream body of known length")
    func streamBody() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let bytes = try SyntheticByteSource(length: 777_777, seed: 8).bytes(in: 0..<777_777)
        let data = Data(bytes)
        let report = try CurlSink.report(try await send(sink, "/sink", body: .stream(length: .known(777_777)) { InputStream(data: data) }))
        #expect(report.headers["content-length"] == "777777")
        #expect(report.sha256 == Digest.sha256Hex(bytes))
    }

    @Test("307 after the body: replayed from byte 0 to the new location")
    func redirectReplays() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 4_194_301, seed: 7)
        let response = try await send(sink, "/redirect307?to=/sink/final", body: .bytes(source))
        let report = try CurlSink.report(response)
        #expect(response.status == 200)
        #expect(report.path == "/sink/final")
        #expect(report.method == "PUT")
        #expect(report.count == source.length)
        #expect(report.sha256 == (try Digest.sha256(of: source)))
        #expect(response.url.path == "/sink/final")
    }

    @Test("307 after a one-shot body was sent fails with notReplayable")
    func redirectOneShot() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let stream = syntheticPipe(SyntheticByteSource(length: 100_000))
        defer { close(stream.fd) }
        let error = await #expect(throws: UploadError.self) { try await send(sink, "/redirect307", method: "POST", body: .sequential(stream)) }
        #expect(error?.code == .notReplayable)
        #expect(error?.status == 307)
    }

    @Test("303 is returned as it is, not followed")
    func seeOtherReturned() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let response = try await send(sink, "/redirect303?to=/sink", method: "POST", body: .bytes(SyntheticByteSource(length: 1000)))
        #expect(response.status == 303)
        #expect(response.header("Location") == "/sink")
    }

    @Test("401 then Basic: the body is replayed with credentials")
    func authReplays() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 2_097_169, seed: 10)
        var options = UploadOptions()
        options.credentials = .init(user: "user", password: "secret")
        let response = try await send(sink, "/auth", body: .bytes(source), options: options)
        let report = try CurlSink.report(response)
        #expect(response.status == 200)
        #expect(report.headers["authorization"] != nil)
        #expect(report.sha256 == (try Digest.sha256(of: source)))
        #expect(response.bytesSent == source.length)
    }

    @Test("401 without credentials is returned promptly")
    func authMissing() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let response = try await send(sink, "/auth", body: .bytes(SyntheticByteSource(length: 10_000)))
        #expect(response.status == 401)
        #expect(response.header("WWW-Authenticate") == "Basic realm=\"sluice\"")
    }

    @Test("early 413 at Expect: returned, the body is not sent")
    func early413() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = SyntheticByteSource(length: 256 * 1_048_576)
        let response = try await send(sink, "/early413", body: .bytes(source))
        #expect(response.status == 413)
        #expect(response.bytesSent < source.length)
    }

    @Test("connection refused: connectionFailed naming the address")
    func connectionRefused() async throws {
        let port = try CurlTransportTests.closedPort()
        let request = try UploadRequest(url: "http://127.0.0.1:\(port)/x", method: "PUT")
        let error = await #expect(throws: UploadError.self) {
            try await transport.send(request, body: .bytes(SyntheticByteSource(length: 10)), options: UploadOptions()) { _ in }
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message == "connection refused to 127.0.0.1:\(port)")
        #expect(error?.bytesSent == 0)
        #expect(error?.totalBytes == 10)
    }

    @Test("a source that throws or shrinks mid-way: sourceFailed with the offset, no 2xx", arguments: [FaultySource.Fault.fail, .endEarly])
    func sourceFails(_ fault: FaultySource.Fault) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = FaultySource(base: SyntheticByteSource(length: 8_000_000), faultOffset: 3_333_331, fault: fault)
        let error = await #expect(throws: UploadError.self) { try await send(sink, "/sink", body: .bytes(source)) }
        #expect(error?.code == .sourceFailed)
        #expect(error?.offset == 3_333_331)
        #expect(error?.totalBytes == 8_000_000)
        #expect((error?.bytesSent ?? .max) <= 3_333_331)
        if fault == .fail { #expect(error?.underlying is FaultySource.Injected) }
    }

    @Test("cancel with a stalled producer ends promptly")
    func cancelStalledProducer() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let source = StallingSource(prefix: 300_001)
        defer { source.release() }
        let request = try UploadRequest(url: sink.url("/sink"), method: "POST")
        // Only the cancel can end it: the stall bound is far beyond the suite's time limit.
        var options = UploadOptions()
        options.stallTimeout = .seconds(3_600)
        let task = Task { [options] in try await transport.send(request, body: .sequential(source), options: options) { _ in } }
        await onThread { source.stalled.wait() }
        task.cancel()
        let result = await task.result
        #expect(throws: UploadError.self) { try result.get() }
        if case .failure(let error as UploadError) = result { #expect(error.code == .cancelled) }
        // Prompt, not a hang: the suite's time limit is the bound. The latency itself (target
        // 100 ms) is measured outside tests: scripts/fault_matrix.py prints it for SIGINT.
    }

    @Test("cancel while the server is slow to answer")
    func cancelSlowServer() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let request = try UploadRequest(url: sink.url("/hold"), method: "PUT")
        let sent = DispatchSemaphore(value: 0)
        let task = Task {
            try await transport.send(request, body: .bytes(SyntheticByteSource(length: 1000)), options: UploadOptions()) { bytes in
                if bytes == 1000 { sent.signal() }
            }
        }
        await onThread { sent.wait() }
        // /hold never answers: only the cancel can end the request.
        task.cancel()
        let result = await task.result
        if case .failure(let error as UploadError) = result { #expect(error.code == .cancelled) } else { Issue.record("expected .cancelled, got \(result)") }
    }

    @Test("empty bodies: POST and PATCH send Content-Length: 0, DELETE and OPTIONS none, HEAD no body")
    func emptyBodies() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let empty = UploadBody.bytes(MemoryByteSource([UInt8]()))
        for method in ["POST", "PATCH"] {
            let report = try CurlSink.report(try await send(sink, "/sink", method: method, body: empty))
            #expect(report.method == method)
            #expect(report.headers["content-length"] == "0")
            #expect(report.headers["transfer-encoding"] == nil)
        }
        for method in ["DELETE", "OPTIONS", "GET"] {
            let report = try CurlSink.report(try await send(sink, "/sink", method: method, body: empty))
            #expect(report.method == method)
            #expect(report.headers["content-length"] == nil)
            #expect(report.headers["transfer-encoding"] == nil)
        }
        let head = try await send(sink, "/sink", method: "HEAD", body: empty)
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Length") != nil)
    }

    @Test("caller's framing headers are dropped, others are sent")
    func headers() async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let request = try UploadRequest(
            url: sink.url("/sink"), method: "PUT",
            headers: [
                HTTPHeader(name: "Content-Length", value: "5"),
                HTTPHeader(name: "Transfer-Encoding", value: "chunked"),
                HTTPHeader(name: "X-Sluice", value: "yes"),
            ])
        let response = try await transport.send(request, body: .bytes(SyntheticByteSource(length: 1234)), options: UploadOptions()) { _ in }
        let report = try CurlSink.report(response)
        #expect(report.headers["content-length"] == "1234")
        #expect(report.headers["transfer-encoding"] == nil)
        #expect(report.headers["x-sluice"] == "yes")
        #expect(report.count == 1234)
    }

    /// A port nothing listens on: bound, then closed.
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw UploadError(.transport, "could not bind a port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

extension Digest {
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        let digest = Digest(.sha256)
        digest.update(bytes)
        return digest.finalizeHex()
    }
}
#endif
