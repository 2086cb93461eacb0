#if canImport(CCurl)
import CCurl
import Foundation
import Synchronization
@_spi(Floors) import SluicePrimitives
import SluiceRequests

/// One event loop of the transfer engine: a thread and a libcurl multi handle that drive any
/// number of transfers at once, and keep their connections for the next request.
///
/// The thread sleeps in `curl_multi_poll` for as long as `curl_multi_timeout` allows; new
/// transfers, cancellations and producers that have bytes again wake it with
/// `curl_multi_wakeup`. There is no polling timer.
///
/// - Important: `start`, `poke` and `stop` may be called from any thread, any number of times,
///   before or after `stop`. Every libcurl call on `multi` but `curl_multi_wakeup` happens on
///   the loop's thread, which also frees the handle when it ends: after the last wake-up in
///   flight (counted, as `OwnedDescriptor` counts reads), so none reaches freed memory. A
///   transfer started on a stopped loop fails at once (`TransferEngine.shutDownError`).
package final class CurlLoop: @unchecked Sendable {
    // @unchecked: `attached` is touched only on the loop's thread; `inbox` is behind a lock;
    // `multi` is used from other threads only through curl_multi_wakeup, which libcurl allows
    // from any thread, and only while `inbox.wakers` counts the call.

    private enum Phase {
        case running
        /// `stop()` was called; the thread fails its transfers and ends.
        case stopping
        /// The thread ended and freed the multi handle.
        case stopped
    }

    private struct Inbox {
        package var started: [CurlTransfer] = []
        package var poked: [CurlTransfer] = []
        package var phase = Phase.running
        /// `curl_multi_wakeup` calls in flight from other threads (only while running).
        package var wakers = 0
    }

    package let index: Int
    private let multi: OpaquePointer
    private let inbox = Lock(Inbox())
    /// The transfers on the multi handle, by easy handle (loop thread only).
    private var attached: [OpaquePointer: CurlTransfer] = [:]
    /// The loop thread's `pthread_self()`, set first thing on it.
    private let threadID = Atomic<UInt>(0)

    /// Whether the caller runs on this loop's thread: what "loop thread only" claims rely on.
    package var isCurrentThread: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    package init(index: Int) throws {
        guard curlGlobalInitialization == SLUICE_CURLE_OK else {
            throw UploadError(.transport, "libcurl failed to initialize (curl_global_init: \(curlGlobalInitialization))")
        }
        guard let multi = curl_multi_init() else {
            throw UploadError(.transport, "libcurl failed to create a multi handle")
        }
        self.index = index
        self.multi = multi
        // Keep enough idle connections for a full set of parallel parts per host.
        _ = sluice_curl_multi_setopt_long(multi, SLUICE_CURLMOPT_MAXCONNECTS, 64)
        let thread = Thread { [self] in
            // The OS name (Foundation sets only its own): ps, top and the thread tests see it.
            nameCurrentThread("sluice-loop-\(index)")
            run()
            // Stopping: nothing joins the inbox or starts a wake-up any more. Once the wake-ups
            // in flight are out, the handle (its wake-up pipe, its connections) goes.
            inbox.wait { $0.wakers == 0 ? () : nil }
            _ = curl_multi_cleanup(self.multi)
            let late = inbox.withLockBroadcasting { inbox -> [CurlTransfer] in
                inbox.phase = .stopped
                defer { inbox.started = [] }
                return inbox.started
            }
            for transfer in late { transfer.complete(.failure(TransferEngine.shutDownError)) }
        }
        thread.name = "sluice-loop-\(index)"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Hands a transfer to the loop; it is configured and added on the loop's thread. On a
    /// stopped (or stopping) loop the transfer fails at once.
    package func start(_ transfer: CurlTransfer) {
        if !enter({ $0.started.append(transfer) }) { transfer.complete(.failure(TransferEngine.shutDownError)) }
    }

    /// Asks the loop to look at a transfer again: it was cancelled, or its producer has bytes.
    /// Ignored once the loop stops (its transfers are failed by then).
    package func poke(_ transfer: CurlTransfer) {
        _ = enter { $0.poked.append(transfer) }
    }

    /// Puts something in the inbox and wakes the loop, while it runs; false once it stops.
    private func enter(_ put: (inout Inbox) -> Void) -> Bool {
        let accepted = inbox.withLock { inbox -> Bool in
            guard inbox.phase == .running else { return false }
            put(&inbox)
            inbox.wakers += 1
            return true
        }
        guard accepted else { return false }
        _ = curl_multi_wakeup(multi)
        inbox.withLockBroadcasting { $0.wakers -= 1 }
        return true
    }

    /// Fails every transfer on the loop with `TransferEngine.shutDownError` and ends its
    /// thread; returns when the thread has ended (at once when called on the loop's own
    /// thread, which ends when its turn returns). Idempotent.
    package func stop() {
        let first = inbox.withLock { inbox -> Bool in
            guard inbox.phase == .running else { return false }
            inbox.phase = .stopping
            // Counted like any wake-up: the thread may be past its last turn already.
            inbox.wakers += 1
            return true
        }
        if first {
            _ = curl_multi_wakeup(multi)
            inbox.withLockBroadcasting { $0.wakers -= 1 }
        }
        if isCurrentThread { return }
        inbox.wait { $0.phase == .stopped ? () : nil }
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        var running: Int32 = 0
        while true {
            let (started, poked, stopping) = inbox.withLock { inbox in
                defer {
                    inbox.started = []
                    inbox.poked = []
                }
                return (inbox.started, inbox.poked, inbox.phase != .running)
            }
            for transfer in started {
                if let result = transfer.begin(on: multi) {
                    transfer.finish(result)
                } else if let easy = transfer.easyHandle {
                    attached[easy] = transfer
                }
            }
            for transfer in poked {
                guard let easy = transfer.easyHandle, attached[easy] === transfer else { continue }
                if let result = transfer.poked() { detach(easy, transfer, result) }
            }
            if stopping {
                for (easy, transfer) in attached {
                    detach(easy, transfer, .failure(transfer.isCancelled ? transfer.cancelledError() : TransferEngine.shutDownError))
                }
                return
            }

            let status = curl_multi_perform(multi, &running)
            if status != 0 {
                for (easy, transfer) in attached {
                    detach(easy, transfer, .failure(UploadError(.transport, "curl_multi_perform failed (CURLMcode \(status))")))
                }
            }
            var easy: OpaquePointer?
            var code: Int32 = 0
            while sluice_curl_multi_next_done(multi, &easy, &code) == 1 {
                guard let done = easy, let transfer = attached[done] else { continue }
                if let result = transfer.attemptEnded(code) { detach(done, transfer, result) }
            }

            var timeout: CLong = -1
            _ = curl_multi_timeout(multi, &timeout)
            // -1: libcurl has no timer running; sleep until a socket or a wakeup says otherwise.
            var wait = timeout < 0 ? Int32.max : Int32(clamping: timeout)
            // Transfers paused by a rate limit: wake when the first may send again (the clock is
            // read only when one is).
            var now: ContinuousClock.Instant?
            for transfer in attached.values {
                guard let resume = transfer.onLoop.rateResume else { continue }
                let current = now ?? ContinuousClock.now
                now = current
                wait = resume <= current ? 0 : min(wait, Int32(clamping: (resume - current).wholeUnits(of: .milliseconds(1))))
            }
            // Descriptor bodies paused for want of bytes: libcurl waits on them too.
            var extra = attached.values.compactMap { transfer in
                transfer.onLoop.pausedDescriptor.map { curl_waitfd(fd: $0, events: Int16(SLUICE_CURL_WAIT_POLLIN), revents: 0) }
            }
            if wait > 0 {
                if extra.isEmpty {
                    _ = curl_multi_poll(multi, nil, 0, wait, nil)
                } else {
                    _ = curl_multi_poll(multi, &extra, UInt32(extra.count), wait, nil)
                }
            }
            if now != nil {
                let after = ContinuousClock.now
                for transfer in attached.values {
                    if let resume = transfer.onLoop.rateResume, resume <= after { transfer.rateLimitWaitEnded() }
                }
            }
            if !extra.isEmpty {
                // Checked with poll(2) itself: an empty pipe whose writer closed reports only
                // POLLHUP, which libcurl does not pass on, but which does end its wait.
                for transfer in attached.values {
                    guard let fd = transfer.onLoop.pausedDescriptor else { continue }
                    var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    if poll(&ready, 1, 0) != 0 { transfer.descriptorReady() }
                }
            }
        }
    }

    private func detach(_ easy: OpaquePointer, _ transfer: CurlTransfer, _ result: Result<UploadResponse, any Error>) {
        attached[easy] = nil
        transfer.finish(result)
    }
}

/// Sets the calling thread's OS name (at most 15 bytes), as `ps -L`, `top -H` and
/// /proc/self/task/*/comm show it; Foundation's `Thread.name` does not on Linux.
package func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
#endif
