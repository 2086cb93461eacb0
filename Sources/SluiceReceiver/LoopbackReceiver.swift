import Sluice
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(Floors) import SluicePrimitives

/// A small HTTP/1.1 server on the loopback interface that accepts any request body, hashes it
/// with SHA-256 as it streams in, optionally stores it, and answers `200` with what it got:
///
///     {"bytes":N,"sha256":"…","method":"PUT","path":"/x","chunked":false,"content_length":N}
///
/// Bodies may be sent with `Content-Length` or `Transfer-Encoding: chunked` (sizes, extensions
/// and trailers parsed strictly); a request with both is answered `400`, as nginx does; other
/// transfer codings `501`. `Expect: 100-continue` is answered with `100 Continue`. Connections
/// are kept alive (HTTP/1.1 default, or `Connection: keep-alive` on HTTP/1.0), so several
/// requests, pipelined or not, may share one. A body that ends before its length (the client
/// closed or reset the connection, or stopped sending for `idleTimeoutSeconds`) is logged and
/// recorded in `failures`, never answered with `200`.
///
/// It listens as soon as `init` returns; `port` and `url` say where:
///
///     let receiver = try LoopbackReceiver()          // 127.0.0.1, a port the kernel picks
///     print("listening on \(receiver.url)")           // http://127.0.0.1:PORT/
///     // … upload to receiver.url …
///     _ = receiver.waitForUploads(1, timeout: .seconds(30))
///     print(receiver.completed[0].sha256)
///     receiver.stop()
///
/// - Important: One thread accepts; each connection gets its own thread, at most
///   `maxConnections` at a time (more are answered `503`). Memory is bounded: each connection
///   owns one fixed `bufferSize` buffer (request heads at most `maxHeadBytes`, chunk and trailer
///   lines at most 4 KiB); bodies are never held. The receiver keeps running until `stop()`,
///   which must be called exactly once for it to release its threads and descriptors (it keeps
///   itself alive until then; `deinit` does not stop it). All members are thread-safe.
public final class LoopbackReceiver: Sendable {
    /// The size of each connection's receive buffer: 256 KiB.
    public static let bufferSize = 256 * 1024
    /// The largest request head accepted: 64 KiB (larger ones are answered `431`).
    public static let maxHeadBytes = 64 * 1024
    /// The most connections served at once: 64.
    public static let maxConnections = 64
    /// How many uploads and failures `completed` and `failures` keep (the oldest are dropped).
    public static let historyLimit = 4096

    /// The port the receiver listens on (the kernel's choice when `init` was given 0).
    public let port: UInt16
    /// The addresses it listens on, e.g. `["127.0.0.1"]`.
    public let hosts: [String]
    /// Where bodies are stored, if anywhere.
    public let storeDirectory: String?
    /// A connection that sends nothing for this long is closed (and a body in progress is
    /// recorded as failed).
    public let idleTimeoutSeconds: Int

    let listeners: [Int32]
    let wake: (read: Int32, write: Int32)
    // A pthread mutex, not Synchronization.Mutex: ThreadSanitizer does not see the latter on
    // Linux (Swift 6.3.1) and reports every access under it as a race.
    let state: Lock<State>
    let log: @Sendable (String) -> Void
    let onUpload: (@Sendable (ReceivedUpload) -> Void)?

    struct State {
        var stopped = false
        var acceptThread: pthread_t?
        var nextConnection = 0
        /// Connections being served: id -> descriptor. Only their own thread closes them, after
        /// removing them here; `stop()` shuts down (never closes) the ones listed.
        var live: [Int: Int32] = [:]
        /// Threads not yet joined: connection id -> thread.
        var threads: [Int: pthread_t] = [:]
        /// Connections whose thread has finished serving, ready to be joined.
        var finished: [Int] = []
        var completed: [ReceivedUpload] = []
        var completedCount = 0
        var failures: [FailedUpload] = []
        var failureCount = 0
        var storeCounter = 0
    }

    /// Starts a receiver listening on `host`:`port`.
    ///
    /// - Parameters:
    ///   - port: The TCP port, or 0 for one the kernel picks (read it from `port`).
    ///   - host: A numeric address to listen on, normally `127.0.0.1` or `::1`; `localhost`
    ///     listens on both (on the same port; `::1` is skipped where IPv6 is unavailable).
    ///   - storeDirectory: When set, each body is written to a file in this existing directory,
    ///     named after the last component of the request path with every byte other than
    ///     `A-Z a-z 0-9 . _ -` replaced by `_` (`upload-N` when that leaves nothing). A file is
    ///     written under a temporary name and renamed only when the body is complete; an
    ///     existing file of the same name is replaced.
    ///   - idleTimeoutSeconds: How long a connection may send nothing before it is closed.
    ///   - log: Receives one line per failed or rejected request; standard error by default.
    ///   - onUpload: Called, on the connection's thread, for each completed upload before its
    ///     response is sent.
    /// - Throws: `LoopbackReceiverError` when the address is invalid, the port is taken, the
    ///   store directory is unusable, or threads cannot be started.
    public init(
        port: UInt16 = 0,
        host: String = "127.0.0.1",
        storeDirectory: String? = nil,
        idleTimeoutSeconds: Int = 60,
        log: @escaping @Sendable (String) -> Void = LoopbackReceiver.logToStandardError,
        onUpload: (@Sendable (ReceivedUpload) -> Void)? = nil
    ) throws(LoopbackReceiverError) {
        if let storeDirectory {
            var info = stat()
            guard stat(storeDirectory, &info) == 0 else { throw .storeDirectory(path: storeDirectory, errno: errno) }
            guard (info.st_mode & S_IFMT) == S_IFDIR else { throw .storeDirectory(path: storeDirectory, errno: ENOTDIR) }
            guard access(storeDirectory, W_OK | X_OK) == 0 else { throw .storeDirectory(path: storeDirectory, errno: errno) }
        }
        let (listeners, hosts, boundPort) = try Self.bind(host: host, port: port)
        let wake: (read: Int32, write: Int32)
        do {
            wake = try ReceiverSocket.wakePair()
        } catch {
            listeners.forEach { _ = close($0) }
            throw error
        }
        self.listeners = listeners
        self.hosts = hosts
        self.port = boundPort
        self.storeDirectory = storeDirectory
        self.idleTimeoutSeconds = max(1, idleTimeoutSeconds)
        self.wake = wake
        self.state = Lock(State())
        self.log = log
        self.onUpload = onUpload
        do {
            let thread = try ReceiverThread.spawn { [self] in self.acceptLoop() }
            state.withLock { $0.acceptThread = thread }
        } catch {
            listeners.forEach { _ = close($0) }
            _ = close(wake.read)
            _ = close(wake.write)
            throw error
        }
    }

    /// The base URL, e.g. `http://127.0.0.1:8080/` (the first host, IPv6 in brackets).
    public var url: String {
        let host = hosts[0].contains(":") ? "[\(hosts[0])]" : hosts[0]
        return "http://\(host):\(port)/"
    }

    /// The uploads completed so far, oldest first (at most `historyLimit` of the latest).
    public var completed: [ReceivedUpload] { state.withLock { $0.completed } }

    /// The requests whose body did not arrive whole, oldest first (at most `historyLimit`).
    public var failures: [FailedUpload] { state.withLock { $0.failures } }

    /// Waits until at least `count` uploads have completed since the receiver started.
    ///
    /// - Returns: True when they have; false when `timeout` passed first or the receiver was
    ///   stopped with fewer.
    /// - Important: Polls every 2 ms; call it from a thread that may block.
    public func waitForUploads(_ count: Int, timeout: Duration) -> Bool {
        wait(timeout: timeout) { $0.completedCount >= count }
    }

    /// Waits until at least `count` requests have failed since the receiver started.
    ///
    /// - Returns: True when they have; false when `timeout` passed first or the receiver was
    ///   stopped with fewer.
    public func waitForFailures(_ count: Int, timeout: Duration) -> Bool {
        wait(timeout: timeout) { $0.failureCount >= count }
    }

    private func wait(timeout: Duration, until condition: (State) -> Bool) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let (done, stopped) = state.withLock { (condition($0), $0.stopped) }
            if done { return true }
            if stopped || ContinuousClock.now >= deadline { return false }
            usleep(2000)
        }
    }

    /// Stops listening, ends every connection (a body in progress is recorded as failed), and
    /// joins every thread the receiver started; when it returns, no thread or descriptor of
    /// the receiver is left.
    ///
    /// - Important: Call it exactly once (later calls return at once), and not from
    ///   `onUpload` or `log` (which run on the receiver's threads). It returns within about a
    ///   second even when a client keeps sending after an error response (that connection is
    ///   drained for at most 1 s of silence or 4 MiB before it is closed).
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        if let acceptThread = state.withLock({ $0.acceptThread }) {
            ReceiverThread.join(acceptThread)
        }
        listeners.forEach { _ = close($0) }
        let threads = state.withLock { state -> [pthread_t] in
            for fd in state.live.values { _ = shutdown(fd, Int32(SHUT_RDWR)) }
            defer {
                state.threads.removeAll()
                state.finished.removeAll()
            }
            return Array(state.threads.values)
        }
        threads.forEach(ReceiverThread.join)
        _ = close(wake.read)
        _ = close(wake.write)
    }

    /// The default `log`: one line on standard error.
    public static let logToStandardError: @Sendable (String) -> Void = { line in
        let bytes = Array("sluice receive: \(line)\n".utf8)
        bytes.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }

    // MARK: - Listening

    private static func bind(host: String, port: UInt16) throws(LoopbackReceiverError) -> ([Int32], [String], UInt16) {
        guard host == "localhost" else {
            let (fd, bound) = try ReceiverSocket.makeListener(address: host, port: port)
            return ([fd], [host], bound)
        }
        // Both loopback addresses on one port; with port 0 the kernel's pick for IPv4 may be
        // taken on IPv6, so try a few times.
        var lastError = LoopbackReceiverError.invalidHost(host)
        for _ in 0..<8 {
            let (v4, bound) = try ReceiverSocket.makeListener(address: "127.0.0.1", port: port)
            do {
                let (v6, _) = try ReceiverSocket.makeListener(address: "::1", port: bound)
                return ([v4, v6], ["127.0.0.1", "::1"], bound)
            } catch {
                if case .socket(_, _, let code) = error, code == EADDRINUSE, port == 0 {
                    _ = close(v4)
                    lastError = error
                    continue
                }
                return ([v4], ["127.0.0.1"], bound)
            }
        }
        throw lastError
    }

    /// The name of every thread this receiver starts: `sluice-r` and the port.
    public var threadName: String { "sluice-r\(port)" }

    /// How many connections are being served now.
    public var liveConnectionCount: Int { state.withLock { $0.live.count } }

    /// The descriptors the receiver holds open now: listeners, its wake pair, connections.
    var openDescriptors: [Int32] {
        let connections = state.withLock { Array($0.live.values) }
        return listeners + [wake.read, wake.write] + connections
    }

    private func acceptLoop() {
        ReceiverThread.nameCurrentThread(threadName)
        var polls = listeners.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        polls.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0))
        while true {
            joinFinishedConnections()
            let ready = poll(&polls, nfds_t(polls.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                log("poll failed (errno \(errno)); no longer accepting")
                return
            }
            if polls[polls.count - 1].revents != 0 { return }
            for index in listeners.indices where polls[index].revents & Int16(POLLIN) != 0 {
                guard let fd = ReceiverSocket.accept(listeners[index], idleTimeoutSeconds: idleTimeoutSeconds) else {
                    continue
                }
                startConnection(fd)
            }
        }
    }

    private func joinFinishedConnections() {
        let threads = state.withLock { state -> [pthread_t] in
            defer { state.finished.removeAll(keepingCapacity: true) }
            return state.finished.compactMap { state.threads.removeValue(forKey: $0) }
        }
        threads.forEach(ReceiverThread.join)
    }

    private enum Admission {
        case started
        case busy
        case stopping
        case failed(LoopbackReceiverError)
    }

    private func startConnection(_ fd: Int32) {
        // The thread is created with the lock held so that it is registered before it can
        // finish and list itself as finished.
        let admission = state.withLock { state -> Admission in
            if state.stopped { return .stopping }
            if state.live.count >= Self.maxConnections { return .busy }
            state.nextConnection += 1
            let id = state.nextConnection
            do throws(LoopbackReceiverError) {
                let thread = try ReceiverThread.spawn { [self] in self.runConnection(id: id, fd: fd) }
                state.live[id] = fd
                state.threads[id] = thread
                return .started
            } catch {
                return .failed(error)
            }
        }
        switch admission {
        case .started:
            return
        case .stopping:
            _ = close(fd)
        case .busy:
            ReceiverSocket.sendAll(fd, Self.errorResponse(status: 503, reason: "too many connections", head: nil))
            ReceiverSocket.lingeringClose(fd)
        case .failed(let error):
            log("connection refused: \(error)")
            _ = close(fd)
        }
    }

    private func runConnection(id: Int, fd: Int32) {
        ReceiverThread.nameCurrentThread(threadName)
        let closing = serve(connection: id, fd: fd)
        state.withLock { state in
            state.live[id] = nil
            state.finished.append(id)
        }
        switch closing {
        case .now: _ = close(fd)
        case .lingering: ReceiverSocket.lingeringClose(fd)
        }
    }

    // MARK: - Bookkeeping used by connections

    func record(_ upload: ReceivedUpload) {
        state.withLock { state in
            state.completed.append(upload)
            state.completedCount += 1
            if state.completed.count > Self.historyLimit { state.completed.removeFirst() }
        }
    }

    func record(_ failure: FailedUpload) {
        let stopped = state.withLock { state -> Bool in
            state.failures.append(failure)
            state.failureCount += 1
            if state.failures.count > Self.historyLimit { state.failures.removeFirst() }
            return state.stopped
        }
        log("\(failure)\(stopped ? " (receiver stopping)" : "")")
    }

    var isStopping: Bool { state.withLock { $0.stopped } }

    func nextStoreNumber() -> Int {
        state.withLock { state in
            state.storeCounter += 1
            return state.storeCounter
        }
    }
}
