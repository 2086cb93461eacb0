#if canImport(CCurl)
import CCurl
import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceRequests

/// Sluice's libcurl transfer engine: a small, fixed set of loop threads, each with a libcurl
/// multi handle, that serve any number of concurrent requests and keep their connections
/// (HTTP keep-alive, and HTTP/2 multiplexing when a TLS server offers it).
///
/// ```swift
/// let engine = TransferEngine.shared
/// let request = try UploadRequest(url: "http://127.0.0.1:8080/put/big.bin", method: "PUT")
/// let response = try await engine.send(request, body: .bytes(try FileByteSource(path: path)))
/// ```
///
/// - The thread count does not grow with the number of transfers: `configuration.loops`
///   threads, plus one producer thread per blocking sequential body (a caller's
///   `SequentialByteSource` or `InputStream`; not stdin or a pipe, which the loop reads
///   itself) while it is sent.
/// - At most `configuration.maximumTransfersPerHost` requests to one origin (scheme, host,
///   port) run at once; the rest wait in order. The parts of a parallel upload are bounded
///   by the upload's own `concurrency` instead, and never wait here.
/// - A request goes to a loop that holds an idle connection to its origin when there is one
///   (so the requests of one tus upload share a connection), else to the least busy loop.
///
/// - Important: All methods may be called from any thread. Cancelling the calling task stops
///   its request within one loop turn and throws `UploadError.cancelled`.
public final class TransferEngine: Sendable {
    /// How many loops an engine runs and how many requests go to one origin at once.
    public struct Configuration: Sendable {
        /// Loop threads (each with its own multi handle and connection cache).
        public var loops: Int
        /// Requests to one origin (scheme, host, port) in flight at once; more wait.
        public var maximumTransfersPerHost: Int

        /// One loop per core, up to 16 requests per origin.
        public init(loops: Int = ProcessInfo.processInfo.activeProcessorCount, maximumTransfersPerHost: Int = 16) {
            self.loops = loops
            self.maximumTransfersPerHost = maximumTransfersPerHost
        }
    }

    /// Counters for tests and benchmarks.
    public struct Statistics: Sendable, Equatable {
        /// Requests finished (any outcome).
        public var finished = 0
        /// Connections libcurl opened (CURLINFO_NUM_CONNECTS summed over finished requests).
        public var connectionsOpened = 0
        /// The most requests that ran at once against one origin.
        public var peakPerHost = 0
    }

    package struct Scheduler {
        package var active: [Int]
        /// Per loop: origins with a connection that a finished request left open.
        package var idle: [[String: Int]]
        package var perHost: [String: Int] = [:]
        package var waiting: [String: [CurlTransfer]] = [:]
        package var statistics = Statistics()
        package var stopped = false
    }

    /// The process's engine, started on first use with the default configuration.
    public static let shared = TransferEngine(configuration: Configuration())

    /// The configuration the engine was made with.
    public let configuration: Configuration
    package let loops: [CurlLoop]
    package let scheduler: Lock<Scheduler>
    private let startupError: UploadError?

    /// Starts `configuration.loops` loop threads (at least one).
    public init(configuration: Configuration = Configuration()) {
        var configuration = configuration
        configuration.loops = max(1, configuration.loops)
        configuration.maximumTransfersPerHost = max(1, configuration.maximumTransfersPerHost)
        self.configuration = configuration
        var loops: [CurlLoop] = []
        var startupError: UploadError?
        for index in 0..<configuration.loops {
            do { loops.append(try CurlLoop(index: index)) } catch {
                startupError = error as? UploadError ?? UploadError(.transport, "\(error)")
                break
            }
        }
        self.loops = loops
        self.startupError = loops.isEmpty ? startupError : nil
        scheduler = Lock(
            Scheduler(
                active: Array(repeating: 0, count: loops.count),
                idle: Array(repeating: [:], count: loops.count)))
    }

    /// Sends `body` with `request` and returns the final response, whatever its status.
    ///
    /// Redirects 301/302/307/308 are followed with the body replayed from byte 0 (see
    /// `CurlTransport`); `progress` gets the body bytes sent in the current attempt.
    ///
    /// - Throws: `UploadError`.
    public func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions = UploadOptions(),
        progress: @escaping @Sendable (Int64) -> Void = { _ in }
    ) async throws -> UploadResponse {
        if let startupError { throw startupError }
        try request.validate()
        let transfer = CurlTransfer(engine: self, request: request, body: body, options: options, progress: progress)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.submit(continuation)
            }
        } onCancel: {
            transfer.cancel()
        }
    }

    /// Counters since the engine started.
    public var statistics: Statistics { scheduler.withLock { $0.statistics } }

    /// What a request gets when the engine shuts down under it, or is sent after that.
    package static let shutDownError = UploadError(.transport, "the transfer engine was shut down")

    /// Fails every request, waiting or running, with `.transport` ("the transfer engine was
    /// shut down"), and ends the loop threads; returns when they have ended. Only for engines
    /// you made; a request sent afterwards fails at once with the same error.
    ///
    /// - Important: Idempotent, from any thread; a later call waits like the first. It blocks
    ///   the calling thread for at most one loop turn: from an async context prefer
    ///   `shutdownGracefully()`. An engine that is dropped shuts down by itself.
    public func shutdown() {
        let waiting = scheduler.withLock { scheduler -> [CurlTransfer] in
            scheduler.stopped = true
            defer { scheduler.waiting = [:] }
            return scheduler.waiting.values.flatMap { $0 }
        }
        for transfer in waiting { transfer.complete(.failure(transfer.isCancelled ? transfer.cancelledError() : Self.shutDownError)) }
        for loop in loops { loop.stop() }
    }

    /// `shutdown()`, awaited: the loop threads are joined on a thread of its own, not on one of
    /// the few cooperative ones.
    public func shutdownGracefully() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                self.shutdown()
                continuation.resume()
            }
        }
    }

    // A request holds its engine, so none is running here; the loops' threads end (at once
    // when the last reference went on one of them).
    deinit { shutdown() }

    // MARK: Scheduling

    /// Starts `transfer` on a loop, or queues it behind the origin's limit.
    package func enqueue(_ transfer: CurlTransfer) {
        let loop = scheduler.withLock { scheduler -> CurlLoop?? in
            if scheduler.stopped || transfer.isCancelled { return .some(nil) }
            if !transfer.options.concurrencyBoundByCaller,
                scheduler.perHost[transfer.origin, default: 0] >= configuration.maximumTransfersPerHost
            {
                scheduler.waiting[transfer.origin, default: []].append(transfer)
                return nil
            }
            return .some(assign(transfer, &scheduler))
        }
        switch loop {
        case .some(.some(let loop)): loop.start(transfer)
        case .some(.none):
            transfer.complete(.failure(transfer.isCancelled ? transfer.cancelledError() : Self.shutDownError))
        case .none: break
        }
    }

    /// Picks the loop (an idle connection to the origin first, then the least busy) and counts it.
    private func assign(_ transfer: CurlTransfer, _ scheduler: inout Scheduler) -> CurlLoop {
        let origin = transfer.origin
        let candidates = scheduler.active.indices.filter { scheduler.idle[$0][origin, default: 0] > 0 }
        let pool = candidates.isEmpty ? Array(scheduler.active.indices) : candidates
        let index = pool.min { scheduler.active[$0] < scheduler.active[$1] } ?? 0
        if !candidates.isEmpty { scheduler.idle[index][origin, default: 1] -= 1 }
        scheduler.active[index] += 1
        scheduler.perHost[origin, default: 0] += 1
        scheduler.statistics.peakPerHost = max(scheduler.statistics.peakPerHost, scheduler.perHost[origin] ?? 0)
        let loop = loops[index]
        transfer.assign(loop)
        return loop
    }

    /// Removes a cancelled transfer that still waits for its turn; false when it already runs.
    package func dequeue(_ transfer: CurlTransfer) -> Bool {
        scheduler.withLock { scheduler in
            guard var queue = scheduler.waiting[transfer.origin],
                let index = queue.firstIndex(where: { $0 === transfer })
            else { return false }
            queue.remove(at: index)
            scheduler.waiting[transfer.origin] = queue.isEmpty ? nil : queue
            return true
        }
    }

    /// A transfer on `loop` ended; `keptConnection` is the origin whose connection it left
    /// open, if any. Starts the next waiting transfer of its origin.
    package func finished(_ transfer: CurlTransfer, on loop: CurlLoop, keptConnection: String?, connectionsOpened: Int) {
        let next = scheduler.withLock { scheduler -> (CurlTransfer, CurlLoop)? in
            scheduler.statistics.finished += 1
            scheduler.statistics.connectionsOpened += connectionsOpened
            scheduler.active[loop.index] -= 1
            let origin = transfer.origin
            scheduler.perHost[origin, default: 1] -= 1
            if scheduler.perHost[origin] == 0 { scheduler.perHost[origin] = nil }
            if let kept = keptConnection {
                scheduler.idle[loop.index][kept] = min(64, scheduler.idle[loop.index][kept, default: 0] + 1)
            }
            guard !scheduler.stopped, var queue = scheduler.waiting[origin], !queue.isEmpty else { return nil }
            let next = queue.removeFirst()
            scheduler.waiting[origin] = queue.isEmpty ? nil : queue
            return (next, assign(next, &scheduler))
        }
        if let (transfer, loop) = next { loop.start(transfer) }
    }
}
#endif
