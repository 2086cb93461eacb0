import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import Sluice
import SluiceReceiver
@_spi(Floors) import SluicePrimitives

/// A peer process started by a test, stopped by PID.
///
/// - Important: `stop()` is called once, by the test that started it.
// Process is not Sendable; it is only touched by the test that started it (run, then kill and wait).
package final class TusPeerProcess: @unchecked Sendable {
    package let pid: Int32
    package let port: Int
    package let process: Process

    /// Starts `arguments` and waits until a line of its output matches `portPattern`
    /// (one capture group: the port), for at most `timeout` seconds.
    package init(_ arguments: [String], environment: [String: String] = [:], portPattern: String, timeout: Double = patienceSeconds) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let regex = try NSRegularExpression(pattern: portPattern)
        let found = Mutex<Int?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            var pending = ""
            var signalled = false
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                if !signalled, let match = regex.firstMatch(in: pending, range: NSRange(pending.startIndex..., in: pending)),
                    let range = Range(match.range(at: 1), in: pending), let port = Int(pending[range])
                {
                    found.withLock { $0 = port }
                    signalled = true
                    ready.signal()
                }
                if pending.count > 1 << 16 { pending = String(pending.suffix(4096)) }
            }
            if !signalled { ready.signal() }
        }
        _ = ready.wait(timeout: .now() + timeout)
        guard let port = found.withLock({ $0 }) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TusPeerError("\(arguments.joined(separator: " ")) did not report a port within \(timeout) s")
        }
        self.process = process
        self.pid = process.processIdentifier
        self.port = port
    }

    /// SIGKILL: processes started from the test runner inherit its blocked signal mask,
    /// so SIGTERM would wait forever.
    package func stop() {
        kill(pid, SIGKILL)
        process.waitUntilExit()
    }
}

package struct TusPeerError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// A tus server for a test: the one the test script started (`SLUICE_TUS_URL`,
/// `SLUICE_TUS_STORE`), or tuspyserver under uvicorn started here.
package struct TusPeer: Sendable {
    package init(endpoint: URL, store: String, process: TusPeerProcess?) { self.endpoint = endpoint; self.store = store; self.process = process }
    package let endpoint: URL
    package let store: String
    package let process: TusPeerProcess?

    package static func start() async throws -> TusPeer {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["SLUICE_TUS_URL"], let store = environment["SLUICE_TUS_STORE"], let endpoint = URL(string: url) {
            return TusPeer(endpoint: endpoint, store: store, process: nil)
        }
        let store = try tusTemporaryDirectory("tus-store")
        let process = try TusPeerProcess(
            [
                "python3", "-m", "uvicorn", "--app-dir", peersDirectory, "--host", "127.0.0.1", "--port", "0",
                "--no-access-log", "--timeout-keep-alive", "75", "tus_app:app",
            ],
            environment: ["SLUICE_TUS_STORE": store],
            portPattern: #"Uvicorn running on http://127\.0\.0\.1:(\d+)"#)
        let endpoint = URL(string: "http://127.0.0.1:\(process.port)/files/")!
        // A server that never answers is stopped here: no test holds it to stop it.
        do { try await tusWaitForOptions(endpoint) } catch {
            process.stop()
            throw error
        }
        return TusPeer(endpoint: endpoint, store: store, process: process)
    }

    /// Stops the server started here and removes its store (each run of the tus tests outside
    /// scripts/test.sh left about 500 MB in the temporary directory).
    package func stop() {
        guard let process else { return }
        process.stop()
        try? FileManager.default.removeItem(atPath: store)
    }

    /// The stored bytes of the upload at `url`.
    package func storedPath(_ url: URL) -> String { store + "/" + url.lastPathComponent }

    /// Waits until tuspyserver is done with the upload at `url` (its lock file is free),
    /// so a cancelled request's bytes are accounted for before the next run asks.
    package func waitUntilIdle(_ url: URL, timeout: Double = patienceSeconds) throws {
        let path = store + "/.locks/" + url.lastPathComponent + ".lock"
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let fd = open(path, O_RDWR)
            if fd < 0 { return }
            let free = flock(fd, LOCK_EX | LOCK_NB) == 0
            if free { _ = flock(fd, LOCK_UN) }
            close(fd)
            if free { return }
            usleep(20_000)
        }
        throw TusPeerError("the tus server still holds \(path) after \(timeout) s")
    }
}

/// A small tus server that checks `Upload-Checksum`, and can answer chosen statuses to
/// the first PATCHes (`Tests/Peers/tus_checksum_stub.py`).
package struct ChecksumStub: Sendable {
    package init(endpoint: URL, store: String, process: TusPeerProcess) { self.endpoint = endpoint; self.store = store; self.process = process }
    package let endpoint: URL
    package let store: String
    package let process: TusPeerProcess

    package static func start(patchStatuses: [Int] = [], maximumSize: Int64 = 1 << 40) async throws -> ChecksumStub {
        let store = try tusTemporaryDirectory("tus-stub")
        let process = try TusPeerProcess(
            [
                "python3", peersDirectory + "/tus_checksum_stub.py", "--store", store,
                "--patch-statuses", patchStatuses.map(String.init).joined(separator: ","), "--max-size", "\(maximumSize)",
            ],
            portPattern: #"PORT (\d+)"#)
        let endpoint = URL(string: "http://127.0.0.1:\(process.port)/files/")!
        do { try await tusWaitForOptions(endpoint) } catch {
            process.stop()
            throw error
        }
        return ChecksumStub(endpoint: endpoint, store: store, process: process)
    }

    package func stop() { process.stop() }

    /// The requests the stub saw, in order.
    package func requests() throws -> [[String: String]] {
        let text = try String(contentsOfFile: store + "/requests.log", encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            return object.compactMapValues { value in
                if let text = value as? String { return text }
                if let number = value as? Int { return String(number) }
                return nil
            }
        }
    }
}

/// A proxy that resets the connection after `resetAfter` bytes of the first PATCH body.
package struct FaultProxy: Sendable {
    package init(port: Int, process: TusPeerProcess) { self.port = port; self.process = process }
    package let port: Int
    package let process: TusPeerProcess

    package static func start(target: URL, resetAfter: Int64) throws -> FaultProxy {
        let process = try TusPeerProcess(
            [
                "python3", peersDirectory + "/tus_fault_proxy.py", "--target", "127.0.0.1:\(target.port ?? 80)",
                "--reset-after", "\(resetAfter)",
            ],
            portPattern: #"PORT (\d+)"#)
        return FaultProxy(port: process.port, process: process)
    }

    package func stop() { process.stop() }

    /// `url` with its port replaced by the proxy's.
    package func rewrite(_ url: URL) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.port = port
        return components.url!
    }
}

/// Polls `OPTIONS endpoint` until the server answers (a readiness gate, bounded).
package func tusWaitForOptions(_ endpoint: URL, timeout: Double = patienceSeconds) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    var request = URLRequest(url: endpoint)
    request.httpMethod = "OPTIONS"
    request.setValue("1.0.0", forHTTPHeaderField: "Tus-Resumable")
    request.timeoutInterval = 2
    while Date() < deadline {
        if let (_, response) = try? await URLSession.shared.data(for: request),
            let http = response as? HTTPURLResponse, http.value(forHTTPHeaderField: "Tus-Version") != nil
        {
            return
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw TusPeerError("no tus answer to OPTIONS \(endpoint) within \(timeout) s")
}

/// A fresh directory under the system's temporary directory.
package func tusTemporaryDirectory(_ prefix: String) throws -> String {
    let path = NSTemporaryDirectory() + "sluice-\(prefix)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// SHA-256 of a file, hex.
package func tusSHA256(ofFile path: String) throws -> String {
    let file = try FileByteSource(path: path)
    defer { file.close() }
    return try Digest.sha256(of: file)
}

/// Writes `source` to a new file and returns its path.
package func tusWriteFile(_ source: any ByteSource, in directory: String, name: String) throws -> String {
    let path = directory + "/" + name
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    var offset: Int64 = 0
    while offset < source.length {
        let bytes = try source.bytes(in: offset..<min(source.length, offset + (4 << 20)))
        try handle.write(contentsOf: bytes)
        offset += Int64(bytes.count)
    }
    return path
}

/// Wraps a transport and runs `before` ahead of every request, which may hold or refuse it.
package struct InterceptingTransport: UploadTransport {
    package init(inner: any UploadTransport, before: @escaping @Sendable (UploadRequest) async throws -> Void) { self.inner = inner; self.before = before }
    package let inner: any UploadTransport
    package let before: @Sendable (UploadRequest) async throws -> Void

    package func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        try await before(request)
        return try await inner.send(request, body: body, options: options, progress: progress)
    }

    /// Holds the `pauseAt`-th PATCH (1-based) before it is sent, until the calling task is
    /// cancelled: a deterministic "process killed between chunks".
    package static func pausing(_ inner: any UploadTransport, pauseAt: Int, paused: AsyncStream<Void>.Continuation) -> InterceptingTransport {
        let patches = TusPatchCounter()
        return InterceptingTransport(inner: inner) { request in
            guard request.method == "PATCH", patches.next() == pauseAt else { return }
            paused.yield()
            do { try await Task.sleep(for: .seconds(600)) } catch {}
            throw UploadError(.cancelled, "cancelled")
        }
    }

    /// Sends at most `limit` requests; every one after them fails as cancelled (a count
    /// instead of a time limit for a test that must end).
    package static func limited(_ inner: any UploadTransport, to limit: Int) -> InterceptingTransport {
        let sent = TusPatchCounter()
        return InterceptingTransport(inner: inner) { _ in
            guard sent.next() <= limit else { throw UploadError(.cancelled, "the test's request limit") }
        }
    }
}

package final class TusPatchCounter: Sendable {
    private let count = Atomic<Int>(0)
    package func next() -> Int { count.add(1, ordering: .relaxed).newValue }
}

/// Wraps a transport and records every request it sends, in order: the method, the
/// `Upload-Offset` it carried, and the answer's status and `Upload-Offset` (nil when it failed),
/// with the body bytes handed to the connection either way.
package struct RecordingTransport: UploadTransport {
    package struct Exchange: Sendable {
        package init(method: String, offset: Int64?, status: Int? = nil, answeredOffset: Int64? = nil, bytesSent: Int64) {
            self.method = method; self.offset = offset; self.status = status; self.answeredOffset = answeredOffset; self.bytesSent = bytesSent
        }
        package var method: String
        package var offset: Int64?
        package var status: Int?
        package var answeredOffset: Int64?
        package var bytesSent: Int64
    }

    package let inner: any UploadTransport
    package let exchanges = Lock<[Exchange]>([])

    package init(_ inner: any UploadTransport) { self.inner = inner }

    package var recorded: [Exchange] { exchanges.withLock { $0 } }

    package func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        let sent = Lock<Int64>(0)
        var exchange = Exchange(method: request.method, offset: request.header("Upload-Offset").flatMap { Int64($0) }, bytesSent: 0)
        do {
            let response = try await inner.send(request, body: body, options: options) { bytes in
                sent.withLock { $0 = max($0, bytes) }
                progress(bytes)
            }
            exchange.status = response.status
            exchange.answeredOffset = response.header("Upload-Offset").flatMap { Int64($0) }
            exchange.bytesSent = response.bytesSent
            exchanges.withLock { $0.append(exchange) }
            return response
        } catch {
            exchange.bytesSent = max(sent.withLock { $0 }, (error as? UploadError)?.bytesSent ?? 0)
            exchanges.withLock { $0.append(exchange) }
            throw error
        }
    }
}
