import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver

#if canImport(Glibc)
import Glibc
#endif
import SluiceTestSupport

private typealias Support = ReceiverTestSupport

/// Uploads to the loopback receiver with `/usr/bin/curl` (and a raw socket for what curl will
/// not send), checked by SHA-256 against the synthetic source.
@Suite struct LoopbackReceiverTests {
    private static let quiet: @Sendable (String) -> Void = { _ in }

    private static func expectUpload(
        _ json: [String: Any], _ upload: ReceivedUpload, length: Int64, seed: UInt64,
        method: String = "PUT", path: String, chunked: Bool
    ) throws {
        let sha = try Digest.sha256(of: SyntheticByteSource(length: length, seed: seed))
        #expect(json["bytes"] as? Int == Int(length))
        #expect(json["sha256"] as? String == sha)
        #expect(json["method"] as? String == method)
        #expect(json["path"] as? String == path)
        #expect(json["chunked"] as? Bool == chunked)
        if chunked {
            #expect(json["content_length"] is NSNull)
            #expect(upload.contentLength == nil)
        } else {
            #expect(json["content_length"] as? Int == Int(length))
            #expect(upload.contentLength == length)
        }
        #expect(upload.bytes == length)
        #expect(upload.sha256 == sha)
        #expect(upload.chunked == chunked)
        #expect(upload.path == path)
    }

    @Test(arguments: [0, 1, 71, 5 * 1024 * 1024 + 37] as [Int64])
    func contentLengthBody(length: Int64) throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Support.syntheticFile(length: length, seed: 7, in: directory)
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }

        let result = try Support.curl(["-T", file, "\(receiver.url)up/cl.bin?x=1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(receiver.waitForUploads(1, timeout: patience))
        let upload = try #require(receiver.completed.first)
        try Self.expectUpload(try Support.json(result.stdout), upload, length: length, seed: 7, path: "/up/cl.bin", chunked: false)
        #expect(upload.target == "/up/cl.bin?x=1")
        #expect(upload.header("transfer-encoding") == nil)
        #expect(receiver.failures.isEmpty)
    }

    @Test(arguments: [1, 3 * 1024 * 1024 + 11] as [Int64])
    func chunkedBody(length: Int64) throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Support.syntheticFile(length: length, seed: 11, in: directory)
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }

        let result = try Support.curl(["-T", file, "-H", "Transfer-Encoding: chunked", "\(receiver.url)chunked"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(receiver.waitForUploads(1, timeout: patience))
        let upload = try #require(receiver.completed.first)
        try Self.expectUpload(try Support.json(result.stdout), upload, length: length, seed: 11, path: "/chunked", chunked: true)
        #expect(upload.header("content-length") == nil)
    }

    @Test func bothContentLengthAndChunkedIs400() throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        let result = try Support.curl([
            "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", String(repeating: "x", count: 100),
            "-H", "Transfer-Encoding: chunked", "-H", "Content-Length: 100", "\(receiver.url)both",
        ])
        #expect(result.stdout == "400", "\(result.stderr)")
        #expect(receiver.completed.isEmpty)
    }

    @Test func severalRequestsOnOneKeepAliveConnection() throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lengths: [Int64] = [1_000_003, 70_001, 0]
        let files = try lengths.enumerated().map { try Support.syntheticFile(length: $1, seed: UInt64($0), in: directory) }
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }

        // The middle one chunked: keep-alive must survive both framings.
        let result = try Support.curl([
            "-T", files[0], "\(receiver.url)k0", "--next",
            "-sS", "-H", "Transfer-Encoding: chunked", "-T", files[1], "\(receiver.url)k1", "--next",
            "-sS", "-T", files[2], "\(receiver.url)k2",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(receiver.waitForUploads(3, timeout: patience))
        let uploads = receiver.completed
        try #require(uploads.count == 3)
        #expect(Set(uploads.map(\.connection)).count == 1, "curl reused one connection")
        #expect(uploads.map(\.requestOnConnection) == [1, 2, 3])
        #expect(uploads.map(\.chunked) == [false, true, false])
        for (index, upload) in uploads.enumerated() {
            #expect(upload.path == "/k\(index)")
            #expect(upload.sha256 == (try Digest.sha256(of: SyntheticByteSource(length: lengths[index], seed: UInt64(index)))))
        }
    }

    @Test func pipelinedRequestsOnOneConnection() throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        let client = try Support.RawClient(port: receiver.port)
        defer { client.close() }
        client.send(
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                + "PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;name=\"v\\\"al\"\r\nde\r\n1\r\nf\r\n0\r\nX-Sum: 1\r\n\r\n"
                + "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        let responses = client.readToEnd()
        #expect(responses.components(separatedBy: "HTTP/1.1 200 OK").count == 4, "\(responses)")
        #expect(
            responses.hasSuffix("\"content_length\":null,\"method\":\"GET\",\"path\":\"/c\",\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}"),
            "\(responses)")
        let uploads = receiver.completed
        try #require(uploads.count == 3)
        #expect(uploads.map(\.bytes) == [3, 3, 0])
        #expect(uploads[0].sha256 == receiverSHA256(Array("abc".utf8)))
        #expect(uploads[1].sha256 == receiverSHA256(Array("def".utf8)))
        #expect(uploads[1].trailers == [HTTPHeader(name: "X-Sum", value: "1")])
        #expect(uploads[2].method == "GET")
    }

    @Test func expectContinueIsAnswered() throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Support.syntheticFile(length: 2 * 1024 * 1024 + 5, seed: 3, in: directory)
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        // curl waits up to --expect100-timeout for the 100, then sends anyway: its verbose
        // log says whether the 100 came (an order of events, not a time).
        let result = try Support.curl(["-v", "-T", file, "-H", "Expect: 100-continue", "--expect100-timeout", "30", "\(receiver.url)e"])
        #expect(result.stderr.contains("< HTTP/1.1 100"), "\(result.stderr)")
        #expect(result.status == 0, "\(result.stderr)")
        let upload = try #require(receiver.completed.first)
        #expect(upload.expectedContinue)
        #expect(upload.sha256 == (try Digest.sha256(of: SyntheticByteSource(length: 2 * 1024 * 1024 + 5, seed: 3))))
    }

    @Test func shortBodyIsRecordedAsFailureNeverAnswered200() throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        let client = try Support.RawClient(port: receiver.port)
        defer { client.close() }
        client.send("PUT /short HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "s", count: 500))
        client.finishSending()
        #expect(client.readToEnd() == "")
        #expect(receiver.waitForFailures(1, timeout: patience))
        let failure = try #require(receiver.failures.first)
        #expect(failure.bytesReceived == 500)
        #expect(failure.expectedBytes == 1000)
        #expect(failure.path == "/short")
        #expect(receiver.completed.isEmpty)
    }

    @Test func truncatedChunkedBodyIsRecordedAsFailure() throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        let client = try Support.RawClient(port: receiver.port)
        defer { client.close() }
        client.send("PUT /cut HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789")
        client.finishSending()
        #expect(client.readToEnd() == "")
        #expect(receiver.waitForFailures(1, timeout: patience))
        #expect(receiver.failures.first?.bytesReceived == 10)
        #expect(receiver.completed.isEmpty)
    }

    @Test(arguments: [
        ("PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "400"),
        ("PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", "400"),
        ("PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "501"),
        ("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", "400"),
        ("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", "400"),
        ("PUT /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "400"),
        ("PUT /x HTTP/1.1\r\nHost : x\r\n\r\n", "400"),
        ("PUT /x HTTP/1.1\nHost: x\n\n", "400"),
        ("PUT /x HTTP/2.0\r\nHost: x\r\n\r\n", "505"),
        ("PUT /x HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n", "417"),
    ])
    func malformedRequestsAreRejected(request: String, status: String) throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        let client = try Support.RawClient(port: receiver.port)
        defer { client.close() }
        client.send(request)
        client.finishSending()
        let response = client.readToEnd()
        #expect(response.hasPrefix("HTTP/1.1 \(status) "), "\(response)")
        #expect(response.contains("Connection: close"))
        #expect(receiver.completed.isEmpty)
    }

    @Test func storesBodiesUnderSanitizedNames() throws {
        let directory = try Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = directory + "/store"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
        let file = try Support.syntheticFile(length: 300_001, seed: 5, in: directory)
        let receiver = try LoopbackReceiver(storeDirectory: store, log: Self.quiet)
        defer { receiver.stop() }

        for target in ["a/b/My%20File.bin", "", "x/..%2F..%2Fetc"] {
            let result = try Support.curl(["-X", "PUT", "--data-binary", "@\(file)", "\(receiver.url)\(target)"])
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(receiver.waitForUploads(3, timeout: patience))
        let names = try FileManager.default.contentsOfDirectory(atPath: store).sorted()
        #expect(names == ["My_File.bin", "_._.._etc", "upload-1"], "\(names)")
        let expected = try Digest.sha256(of: SyntheticByteSource(length: 300_001, seed: 5))
        for name in names {
            #expect(try Digest.sha256(of: FileByteSource(path: "\(store)/\(name)")) == expected)
        }
        #expect(receiver.completed.map { $0.storedPath.map { ($0 as NSString).lastPathComponent } } == ["My_File.bin", "upload-1", "_._.._etc"])
    }

    @Test func fileNamesAreSanitized() {
        typealias Sink = LoopbackReceiver.BodySink
        #expect(Sink.fileName(forPath: "/") == nil)
        #expect(Sink.fileName(forPath: "/a/b.txt") == "b.txt")
        #expect(Sink.fileName(forPath: "/..") == "_.")
        #expect(Sink.fileName(forPath: "/.hidden") == "_hidden")
        #expect(Sink.fileName(forPath: "/%2e%2e%2f") == "_._")
        #expect(Sink.fileName(forPath: "/caf%C3%A9") == "caf__")
    }

    @Test func stopEndsConnectionsAndLeavesNoThreadOrDescriptor() throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        // One upload done, one connection idle between requests, one in the middle of a body.
        #expect(try Support.curl(["--data-binary", "hello", "\(receiver.url)done"]).status == 0)
        let idle = try Support.RawClient(port: receiver.port)
        defer { idle.close() }
        idle.send("PUT /partial-head HTTP/1.1\r\nHost: x\r\n")
        let busy = try Support.RawClient(port: receiver.port)
        defer { busy.close() }
        busy.send("PUT /mid-body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "b", count: 4000))

        let deadline = ContinuousClock.now + patience
        // Exactly these two: curl's connection, closed after its upload, may still be ending.
        while receiver.liveConnectionCount != 2 && ContinuousClock.now < deadline { usleep(1000) }
        #expect(receiver.liveConnectionCount == 2)
        let held = Set(receiver.openDescriptors.compactMap(Support.descriptorTarget))
        #expect(held.count == receiver.openDescriptors.count, "every descriptor is a distinct socket")
        #expect(Support.threads(named: receiver.threadName) >= 3)

        receiver.stop()
        #expect(Support.threads(named: receiver.threadName) == 0)
        #expect(held.isDisjoint(with: Support.allDescriptorTargets()))
        #expect(busy.readToEnd() == "", "no response to a body cut by stop()")
        #expect(receiver.failures.map(\.path) == ["/mid-body"])
        #expect(receiver.completed.count == 1)
        receiver.stop()  // a second call does nothing
        // Nothing listens any more.
        #expect(try Support.curl(["--data-binary", "x", "\(receiver.url)after"]).status != 0)
    }

    @Test func keepsTheKernelsPortAndRejectsBadHosts() throws {
        let receiver = try LoopbackReceiver(log: Self.quiet)
        defer { receiver.stop() }
        #expect(receiver.port != 0)
        #expect(receiver.url == "http://127.0.0.1:\(receiver.port)/")
        #expect(throws: LoopbackReceiverError.invalidHost("example.com")) { _ = try LoopbackReceiver(host: "example.com") }
        #expect(throws: LoopbackReceiverError.invalidHost("1.2.3.4.5")) { _ = try LoopbackReceiver(host: "1.2.3.4.5") }
        // Either family, parsed by the kernel: IPv6 loopback takes a body as IPv4's does.
        let six = try LoopbackReceiver(host: "::1", log: Self.quiet)
        defer { six.stop() }
        #expect(six.port != 0 && six.url == "http://[::1]:\(six.port)/")
        #expect(try Support.curl(["--data-binary", "x", "\(six.url)six"]).status == 0)
        #expect(throws: (any Error).self) { _ = try LoopbackReceiver(port: receiver.port, log: Self.quiet) }
        #expect(throws: (any Error).self) { _ = try LoopbackReceiver(storeDirectory: "/nonexistent/sluice") }
    }
}

/// SHA-256 of `bytes` as lowercase hex.
private func receiverSHA256(_ bytes: [UInt8]) -> String {
    let digest = Digest(.sha256)
    digest.update(bytes)
    return digest.finalizeHex()
}
