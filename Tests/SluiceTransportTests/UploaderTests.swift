import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

@Suite struct UploaderTests {
    @Test(arguments: TransportKind.allCases)
    func syntheticBodyArrivesWholeWithProgress(transport: TransportKind) async throws {
        let receiver = try LoopbackReceiver()
        defer { receiver.stop() }
        let source = SyntheticByteSource(length: 256 << 20, seed: 21)
        var options = UploadOptions()
        options.progressInterval = .milliseconds(10)
        let uploader = Uploader(transport: transport, options: options)
        let request = try UploadRequest(url: receiver.url + "u.bin", method: "PUT")
        let (updates, task) = uploader.uploadWithProgress(request, body: .bytes(source))
        var reports: [UploadProgress] = []
        for await update in updates { reports.append(update) }
        let response = try await task.value
        #expect(response.status == 200)
        #expect(response.bytesSent == source.length)
        let received = try #require(receiver.completed.last)
        #expect(received.bytes == source.length)
        #expect(received.sha256 == (try Digest.sha256(of: source)))
        #expect(received.chunked == (transport == .urlsession))
        // Progress: never backwards within the attempt, never past the total, ends at the total.
        #expect(!reports.isEmpty)
        #expect(reports.last?.bytesSent == source.length)
        #expect(reports.allSatisfy { $0.bytesSent <= source.length && $0.totalBytes == source.length })
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.bytesSent <= $1.bytesSent })
    }

    @Test(arguments: TransportKind.allCases)
    func taskCancellationStopsAStalledUploadPromptly(transport: TransportKind) async throws {
        let receiver = try LoopbackReceiver()
        defer { receiver.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let primer = [UInt8](repeating: 1, count: 10_000)
        _ = primer.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        let body = UploadBody.sequential(FileDescriptorStream(fd: fds[0], name: "pipe"))
        let request = try UploadRequest(url: receiver.url + "stall", method: "PUT")
        let progressed = AsyncStream<Void>.makeStream()
        var options = UploadOptions()
        options.progressInterval = .zero
        // Far above the bound below: a cancel held until the stall timeout cannot pass.
        options.stallTimeout = .seconds(300)
        let task = Task {
            try await Uploader(transport: transport, options: options).upload(request, body: body) { progress in
                if progress.bytesSent > 0 { progressed.continuation.yield() }
            }
        }
        // Gate: wait until bytes moved, then the producer stalls (nothing more is written).
        var iterator = progressed.stream.makeAsyncIterator()
        _ = await iterator.next()
        task.cancel()
        // Not a hang: a stalled producer must not hold the cancellation until the stall timeout
        // (300 s here, which would end it as a stall, not a cancel: the code below tells them
        // apart). The 100 ms target is measured by scripts/fault_matrix.py, not here.
        let result = await task.result
        guard case .failure(let error as UploadError) = result else {
            Issue.record("expected a cancellation error, got \(result)")
            return
        }
        #expect(error.code == .cancelled)
    }

    #if os(Linux)
    /// A pipe body (stdin) on the curl transport gets a 1 MiB pipe buffer, so that the writer
    /// and sluice run side by side instead of taking turns over 64 KiB; the bytes are unchanged.
    @Test(.hangGuard)
    func aPipeBodyGetsALargerPipeBuffer() async throws {
        let receiver = try LoopbackReceiver()
        defer { receiver.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let getPipeSize: Int32 = 1032  // F_GETPIPE_SZ
        #expect(fcntl(fds[0], getPipeSize) == 64 << 10)
        let bytes = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) } == bytes.count)
        close(fds[1])
        let request = try UploadRequest(url: receiver.url + "pipe.bin", method: "PUT")
        let response = try await Uploader(transport: .curl).upload(request, body: .sequential(FileDescriptorStream(fd: fds[0], name: "pipe")))
        #expect(response.status == 200)
        #expect(fcntl(fds[0], getPipeSize) == CurlTransfer.pipeBufferSize)
        let received = try #require(receiver.completed.last)
        #expect(received.bytes == Int64(bytes.count))
        #expect(received.sha256 == (try Digest.sha256(of: MemoryByteSource(bytes))))
    }
    #endif

    @Test func invalidOptionsAndRequestsAreRefusedUpFront() async throws {
        #expect(throws: UploadError.self) { try UploadRequest(url: "ftp://127.0.0.1/x") }
        #expect(throws: UploadError.self) { try UploadRequest(url: "http://127.0.0.1/x", method: "P T") }
        #expect(throws: UploadError.self) { try HTTPHeader(name: "X", value: "a\r\nInjected: 1").validate() }
        #expect(throws: UploadError.self) { try HTTPHeader(name: "Bad Name", value: "1").validate() }
        // Refused before any connection is tried: the code says so (a closed port would
        // throw too, with .connectionFailed).
        var options = UploadOptions()
        options.bufferSize = 10
        let uploader = Uploader(options: options)
        let error = await #expect(throws: UploadError.self) {
            try await uploader.upload(try UploadRequest(url: "http://127.0.0.1:9/x"), body: .bytes(MemoryByteSource("x")))
        }
        #expect(error?.code == .invalidOption)
    }

    /// A header value loses the leading and trailing whitespace Foundation's `.whitespaces`
    /// names (ASCII blanks cut byte by byte, Unicode spaces at the ends by Foundation), nothing else.
    @Test(arguments: [
        "", " ", "\t \t", "v", " v", "v ", "\tv\t", "  a b  ", "a\u{00A0}", "\u{3000}a b\u{2003}",
        " é ", "ü", " \u{0301}x", "a\r", "\u{0B}a", "x\u{1F600} ",
    ])
    func headerValuesAreTrimmedAsFoundationTrims(_ value: String) {
        #expect(HTTPHeader(name: "X", value: value).value == value.trimmingCharacters(in: .whitespaces))
    }

    /// Headers are checked when sent, by every transport, before a byte goes out: the receiver
    /// sees no request at all.
    @Test(arguments: TransportKind.allCases)
    func headersThatCouldInjectAreRefusedAtSendTime(_ kind: TransportKind) async throws {
        let receiver = try LoopbackReceiver()
        defer { receiver.stop() }
        for header in [
            HTTPHeader(name: "X", value: "a\r\nInjected: 1"), HTTPHeader(name: "Bad Name", value: "1"),
            HTTPHeader(name: "X-Nul", value: "a\u{0}b"),
        ] {
            let request = try UploadRequest(url: "\(receiver.url)/put/x", method: "PUT", headers: [header])
            let error = await #expect(throws: UploadError.self) {
                try await Uploader(transport: kind).upload(request, body: .bytes(MemoryByteSource("body")))
            }
            #expect(error?.code == .invalidHeader, "\(header.name)")
        }
        // A good header through the same receiver arrives: the refusals above were not a dead server.
        let good = try UploadRequest(url: "\(receiver.url)/put/x", method: "PUT", headers: [HTTPHeader(name: "X-Ok", value: "1")])
        let response = try await Uploader(transport: kind).upload(good, body: .bytes(MemoryByteSource("body")))
        #expect(response.status == 200)
        #expect(receiver.completed.count == 1)
        #expect(receiver.completed.first?.header("X-Ok") == "1")
        #expect(receiver.failures.isEmpty)
    }

    @Test func malformedRequestsNameTheirProblem() throws {
        let method = #expect(throws: UploadError.self) { try UploadRequest(url: "http://127.0.0.1/x", method: "GE T") }
        #expect(method?.code == .invalidOption)
        #expect(method?.message.hasPrefix("method 'GE T'") == true)
        for url in [
            "http://127.0.0.1:99999/x", "http://127.0.0.1:0/x", "http://127.0.0.1/x\r\nX-Injected: 1",
            "http://127.0.0.1/a b", "", "http://127.0.0.1/\u{0}",
        ] {
            let error = #expect(throws: UploadError.self) { try UploadRequest(url: url) }
            #expect(error?.code == .invalidURL, "\(url.debugDescription)")
        }
        _ = try UploadRequest(url: "http://127.0.0.1:65535/x")
    }

    @Test(arguments: TransportKind.allCases)
    func headWithABodyIsRefusedUpFront(transport: TransportKind) async throws {
        let request = try UploadRequest(url: "http://127.0.0.1:9/x", method: "HEAD")
        let error = await #expect(throws: UploadError.self) {
            try await Uploader(transport: transport).upload(request, body: .bytes(MemoryByteSource("x")))
        }
        #expect(error?.code == .invalidOption)
    }
}
