import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// End-to-end tus tests against tuspyserver (under uvicorn), a checking stub, a fault proxy
/// and the independent tuspy client. Serialized: they share two cores and big bodies.
@Suite(.serialized, .hangGuard)
struct TusClientTests {
    func options(state: String, chunk: Int64? = nil) -> TusOptions {
        var options = TusOptions()
        options.stateDirectory = state
        options.chunkSize = chunk
        options.retryDelay = .milliseconds(50)
        options.maximumRetryDelay = .milliseconds(500)
        options.transfer.stallTimeout = .seconds(20)
        // Every progress tick reaches the test, so a cancel lands near its threshold.
        options.transfer.progressInterval = .zero
        return options
    }

    /// Starts an upload and cancels it once `threshold` bytes are confirmed or in flight
    /// (possibly mid-PATCH).
    func startAndCancel(_ client: TusClient, _ source: TusSource, to endpoint: URL, after threshold: Int64) async throws -> TusError {
        let (reached, signal) = AsyncStream<Void>.makeStream()
        let task = Task {
            try await client.upload(source, to: endpoint) { progress in
                if progress.bytesSent >= threshold { signal.yield() }
            }
        }
        for await _ in reached { break }
        task.cancel()
        return try await cancelledError(task)
    }

    /// Starts an upload that stops before its `pauseAt`-th PATCH, and cancels it there.
    func startAndStop(_ options: TusOptions, _ source: TusSource, to endpoint: URL, beforePatch pauseAt: Int) async throws -> TusError {
        let (paused, signal) = AsyncStream<Void>.makeStream()
        let client = TusClient(transport: InterceptingTransport.pausing(CurlTransport(), pauseAt: pauseAt, paused: signal), options: options)
        let task = Task { try await client.upload(source, to: endpoint) }
        for await _ in paused { break }
        task.cancel()
        return try await cancelledError(task)
    }

    func cancelledError(_ task: Task<TusUploadResult, any Error>) async throws -> TusError {
        switch await task.result {
        case .success: throw TusPeerError("the upload finished before it could be cancelled")
        case .failure(let error):
            guard let error = error as? TusError else { throw error }
            return error
        }
    }

    @Test func uploads512MiBByteExact() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let length: Int64 = 512 << 20
        let bytes = SyntheticByteSource(length: length, seed: 5)
        let client = TusClient(options: options(state: try tusTemporaryDirectory("tus-state")))
        let result = try await client.upload(TusSource(bytes, identity: "synthetic:512MiB:5"), to: peer.endpoint)
        print("tus 512 MiB: \(result.bytesSent) bytes sent in \(result.dataRequests) requests, \(result.retries) retries")
        #expect(result.created)
        #expect(result.bytesSent == length)
        #expect(result.bytesResent == 0)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == Digest.sha256(of: bytes))
    }

    @Test func resumesAfterCancelWithoutResending() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let state = try tusTemporaryDirectory("tus-state")
        let length: Int64 = 160 << 20 + 12_345
        let bytes = SyntheticByteSource(length: length, seed: 7)
        let source = TusSource(bytes, identity: "synthetic:resume:7")
        let first = TusClient(options: options(state: state, chunk: 7 << 20))
        let cancelled = try await startAndCancel(first, source, to: peer.endpoint, after: 40 << 20)
        #expect(cancelled.code == .cancelled)
        let url = try #require(cancelled.uploadURL.flatMap(URL.init(string:)))
        try peer.waitUntilIdle(url)
        let stored = try await first.status(of: url).offset
        #expect(stored > 0 && stored < length)

        // A new client, as a new process would make it, with the same state directory.
        let second = TusClient(options: options(state: state, chunk: 7 << 20))
        let result = try await second.upload(source, to: peer.endpoint)
        print("tus resume: stored offset \(stored) of \(length), bytes sent \(result.bytesSent), re-sent \(result.bytesResent)")
        #expect(result.uploadURL == url)
        #expect(!result.created)
        #expect(result.resumedFrom == stored)
        #expect(result.bytesSent == length - stored)
        #expect(result.bytesResent == 0)
        #expect(try tusSHA256(ofFile: peer.storedPath(url)) == Digest.sha256(of: bytes))
        // Done: the record is gone, so the next run starts a new upload.
        #expect(try TusStateStore(directory: state).load(endpoint: peer.endpoint.absoluteString, identity: source.identity) == nil)
    }

    /// The proxy cuts the first PATCH after `resetAfter` bytes of its body; the client asks the
    /// server what it kept (HEAD) and sends from there. Asserted as an order of requests and a
    /// count of bytes: each PATCH starts at the offset the server last stated, and each
    /// accepted one moves it by exactly its bytes. How much of the cut PATCH the server had
    /// written when it answered HEAD is the server's timing (tuspyserver may still be writing:
    /// a HEAD at 4 MiB, then a 409 at 11 MiB), so a bound on the bytes re-sent measured the
    /// machine, not the client, and failed under load.
    @Test func resumesByItselfAfterDroppedConnection() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let resetAfter: Int64 = 9 << 20 + 777
        let proxy = try FaultProxy.start(target: peer.endpoint, resetAfter: resetAfter)
        defer { proxy.stop() }
        let length: Int64 = 48 << 20 + 3
        let bytes = SyntheticByteSource(length: length, seed: 11)
        let transport = RecordingTransport(CurlTransport())
        let client = TusClient(transport: transport, options: options(state: try tusTemporaryDirectory("tus-state")))
        let result = try await client.upload(TusSource(bytes, identity: "synthetic:drop:11"), to: proxy.rewrite(peer.endpoint))
        print("tus dropped PATCH: retries \(result.retries), conflicts \(result.offsetConflicts), bytes sent \(result.bytesSent), re-sent \(result.bytesResent)")
        #expect(result.retries >= 1)
        let exchanges = transport.recorded
        let cut = try #require(exchanges.firstIndex { $0.method == "PATCH" && $0.status == nil }, "no PATCH was cut: \(exchanges)")
        // Next, the client asks; the server cannot hold more of the cut PATCH than the proxy forwarded.
        let head = try #require(exchanges[(cut + 1)...].first { $0.method == "HEAD" }, "\(exchanges)")
        #expect(try #require(head.answeredOffset) <= (exchanges[cut].offset ?? 0) + resetAfter)
        var stated: Int64 = 0
        for exchange in exchanges {
            switch exchange.method {
            case "POST":
                stated = exchange.answeredOffset ?? 0
            case "HEAD":
                stated = exchange.answeredOffset ?? stated
            case "PATCH":
                #expect(exchange.offset == stated, "a PATCH from an offset the server did not state: \(exchanges)")
                if let status = exchange.status, (200..<300).contains(status) {
                    #expect(exchange.answeredOffset == stated + exchange.bytesSent, "\(exchanges)")
                    stated = exchange.answeredOffset ?? stated
                }
            default:
                break
            }
        }
        #expect(stated == length)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == Digest.sha256(of: bytes))
    }

    @Test func refusesChangedSource() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let directory = try tusTemporaryDirectory("tus-files")
        let path = try tusWriteFile(SyntheticByteSource(length: 6 << 20, seed: 3), in: directory, name: "changing.bin")
        let state = try tusTemporaryDirectory("tus-state")
        let client = TusClient(options: options(state: state, chunk: 1 << 20))
        let original = try TusSource(file: FileByteSource(path: path))
        let cancelled = try await startAndStop(options(state: state, chunk: 1 << 20), original, to: peer.endpoint, beforePatch: 3)
        original.close()
        let url = try #require(cancelled.uploadURL)

        // Change one byte near the end, keeping the length.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(6 << 20) - 10)
        try handle.write(contentsOf: [0x5A])
        try handle.close()

        let changed = try TusSource(file: FileByteSource(path: path))
        defer { changed.close() }
        let error = await #expect(throws: TusError.self) { try await client.upload(changed, to: peer.endpoint) }
        #expect(error?.code == .sourceChanged)
        #expect(error?.description.contains(url) == true)

        // Asked to, it starts over and ends byte-exact.
        var restart = options(state: state, chunk: 1 << 20)
        restart.restarts = true
        let result = try await TusClient(options: restart).upload(changed, to: peer.endpoint)
        #expect(result.created)
        #expect(result.uploadURL.absoluteString != url)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == tusSHA256(ofFile: path))
    }

    @Test func terminates() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let state = try tusTemporaryDirectory("tus-state")
        let client = TusClient(options: options(state: state, chunk: 1 << 20))
        let source = TusSource(SyntheticByteSource(length: 8 << 20, seed: 1), identity: "synthetic:terminate")
        let cancelled = try await startAndStop(options(state: state, chunk: 1 << 20), source, to: peer.endpoint, beforePatch: 2)
        let url = try #require(cancelled.uploadURL.flatMap(URL.init(string:)))
        try await client.terminate(url: url)
        let error = await #expect(throws: TusError.self) { try await client.status(of: url) }
        #expect(error?.code == .uploadGone)
        #expect([404, 410].contains(error?.status ?? 0))
        // The record went with it: the next run creates a new upload.
        #expect(try TusStateStore(directory: state).load(endpoint: peer.endpoint.absoluteString, identity: source.identity) == nil)
    }

    @Test func goneUploadStartsOver() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let state = try tusTemporaryDirectory("tus-state")
        let source = TusSource(SyntheticByteSource(length: 3 << 20, seed: 9), identity: "synthetic:gone")
        let gone = peer.endpoint.appendingPathComponent("0000000000000000000000000000dead").absoluteString
        try TusStateStore(directory: state).save(
            TusRecord(
                endpoint: peer.endpoint.absoluteString, identity: source.identity, uploadURL: gone,
                fingerprint: try TusFingerprint(of: source), createdAt: 0))
        let result = try await TusClient(options: options(state: state)).upload(source, to: peer.endpoint)
        #expect(result.previousUploadGone == gone)
        #expect(result.created)
        #expect(try tusSHA256(ofFile: peer.storedPath(result.uploadURL)) == Digest.sha256(of: source.bytes))
    }

    @Test func sendsChecksumsAndResendsAfter460() async throws {
        let stub = try await ChecksumStub.start(patchStatuses: [460])
        defer { stub.stop() }
        let length: Int64 = 5 << 20 + 99
        let bytes = SyntheticByteSource(length: length, seed: 13)
        let result = try await TusClient(options: options(state: try tusTemporaryDirectory("tus-state"), chunk: 2 << 20))
            .upload(TusSource(bytes, identity: "synthetic:checksum"), to: stub.endpoint)
        #expect(result.usedChecksums)
        #expect(result.checksumMismatches == 1)
        #expect(result.bytesResent == 2 << 20)
        // The stub answers with a relative Location: resolved against the endpoint.
        #expect(result.uploadURL.host == "127.0.0.1" && result.uploadURL.port == stub.endpoint.port)
        let patches = try stub.requests().filter { $0["method"] == "PATCH" }
        #expect(patches.map { $0["status"] } == ["460", "204", "204", "204"])
        #expect(patches.allSatisfy { $0["checksum"]?.hasPrefix("sha1 ") == true })
        #expect(patches.map { $0["offset"] } == ["0", "0", "\(2 << 20)", "\(4 << 20)"])
        #expect(try tusSHA256(ofFile: stub.store + "/" + result.uploadURL.lastPathComponent) == Digest.sha256(of: bytes))
    }

    @Test func retriesLockedAndServerErrors() async throws {
        let stub = try await ChecksumStub.start(patchStatuses: [423, 409, 503, 500])
        defer { stub.stop() }
        let bytes = SyntheticByteSource(length: 1 << 20, seed: 17)
        let result = try await TusClient(options: options(state: try tusTemporaryDirectory("tus-state")))
            .upload(TusSource(bytes, identity: "synthetic:retry"), to: stub.endpoint)
        #expect(result.retries == 4)
        #expect(result.offsetConflicts == 1)
        #expect(result.bytesSent == 5 << 20)
        let methods = try stub.requests().map { $0["method"] ?? "" }
        // Each failed PATCH is followed by HEAD for the offset.
        #expect(methods.suffix(9) == ["PATCH", "HEAD", "PATCH", "HEAD", "PATCH", "HEAD", "PATCH", "HEAD", "PATCH"])
        #expect(try tusSHA256(ofFile: stub.store + "/" + result.uploadURL.lastPathComponent) == Digest.sha256(of: bytes))
    }

    @Test(arguments: [
        (412, TusError.Code.versionUnsupported), (413, .tooLarge), (404, .uploadGone), (410, .uploadGone), (403, .httpStatus),
    ])
    func fatalPatchStatuses(status: Int, code: TusError.Code) async throws {
        let stub = try await ChecksumStub.start(patchStatuses: [status])
        defer { stub.stop() }
        let state = try tusTemporaryDirectory("tus-state")
        let source = TusSource(SyntheticByteSource(length: 1000, seed: 1), identity: "synthetic:fatal")
        let error = await #expect(throws: TusError.self) {
            try await TusClient(options: options(state: state)).upload(source, to: stub.endpoint)
        }
        #expect(error?.code == code)
        #expect(error?.status == status)
        #expect(try stub.requests().filter { $0["method"] == "PATCH" }.count == 1)
        let record = try TusStateStore(directory: state).load(endpoint: stub.endpoint.absoluteString, identity: source.identity)
        // A gone upload is forgotten (the next run starts a new one); any other failure keeps it for a resume.
        #expect((record == nil) == (code == .uploadGone))
    }

    @Test func refusesSourceOverMaximumSizeBeforeCreating() async throws {
        let stub = try await ChecksumStub.start(maximumSize: 4096)
        defer { stub.stop() }
        let error = await #expect(throws: TusError.self) {
            try await TusClient(options: options(state: try tusTemporaryDirectory("tus-state"))).upload(
                TusSource(SyntheticByteSource(length: 4097, seed: 1), identity: "synthetic:max"), to: stub.endpoint)
        }
        #expect(error?.code == .tooLarge)
        #expect(try stub.requests().map { $0["method"] } == ["OPTIONS", "OPTIONS"])
    }

    @Test func giveUpAfterRetryBudget() async throws {
        let stub = try await ChecksumStub.start(patchStatuses: [500, 500, 500, 500])
        defer { stub.stop() }
        var options = options(state: try tusTemporaryDirectory("tus-state"))
        options.retries = 2
        let error = await #expect(throws: TusError.self) {
            try await TusClient(options: options).upload(
                TusSource(SyntheticByteSource(length: 1000, seed: 1), identity: "synthetic:budget"), to: stub.endpoint)
        }
        #expect(error?.code == .retriesExhausted)
        #expect(error?.uploadURL != nil)
    }

    @Test func tuspyFinishesWhatSluiceStarted() async throws {
        let peer = try await TusPeer.start()
        defer { peer.stop() }
        let directory = try tusTemporaryDirectory("tus-files")
        let bytes = SyntheticByteSource(length: 24 << 20 + 5, seed: 21)
        let path = try tusWriteFile(bytes, in: directory, name: "cross.bin")
        let source = try TusSource(file: FileByteSource(path: path))
        defer { source.close() }
        let cancelled = try await startAndStop(
            options(state: try tusTemporaryDirectory("tus-state"), chunk: 3 << 20), source,
            to: peer.endpoint, beforePatch: 3)
        let url = try #require(cancelled.uploadURL)

        let finisher = Process()
        finisher.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        finisher.arguments = ["python3", peersDirectory + "/tus_finish.py", url, path]
        let output = Pipe()
        finisher.standardOutput = output
        try finisher.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        finisher.waitUntilExit()
        #expect(finisher.terminationStatus == 0)
        let started = text.split(separator: "\n").first { $0.hasPrefix("OFFSET ") }.flatMap { Int64($0.dropFirst(7)) }
        #expect((started ?? 0) > 0)
        #expect(text.contains("DONE \(bytes.length)"))
        #expect(try tusSHA256(ofFile: peer.storedPath(try #require(URL(string: url)))) == Digest.sha256(of: bytes))
    }
}
