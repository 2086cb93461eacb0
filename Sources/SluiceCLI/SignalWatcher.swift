import Sluice
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@_spi(Floors) import SluicePrimitives

/// SIGINT and SIGTERM for the whole process, caught from the first line of `main`.
///
/// A C handler writes the signal's number into a pipe (the only thing it does, and it is
/// async-signal-safe); a thread reads the pipe and calls the watchers. With no watcher (nothing
/// to stop cleanly: parsing, opening, hashing) the process ends at once with status 130, as
/// the default action would but with the documented code. None is lost between the start of
/// the process and the start of an upload.
enum Signals {
    private struct State {
        var watchers: [Int: @Sendable (Int32) -> Void] = [:]
        var nextID = 0
    }

    private static let state = Lock(State())
    /// The pipe's write end, read by the C handler; set before the handler is installed.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Installs the handlers and starts the reading thread; call once, first thing.
    static func install() {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        writeEnd = fds[1]
        let readEnd = fds[0]
        let thread = Thread {
            var number: UInt8 = 0
            while true {
                let count = read(readEnd, &number, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { return }
                deliver(Int32(number))
            }
        }
        thread.name = "sluice-signals"
        thread.start()
        for signalNumber in [SIGINT, SIGTERM] {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(Signals.writeEnd, &byte, 1)
            }
            #else
            action.__sigaction_u.__sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(Signals.writeEnd, &byte, 1)
            }
            #endif
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(signalNumber, &action, nil)
        }
    }

    fileprivate static func add(_ watcher: @escaping @Sendable (Int32) -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.watchers[state.nextID] = watcher
            return state.nextID
        }
    }

    fileprivate static func remove(_ id: Int) {
        _ = state.withLock { $0.watchers.removeValue(forKey: id) }
    }

    private static func deliver(_ number: Int32) {
        let watchers = state.withLock { Array($0.watchers.values) }
        guard !watchers.isEmpty else {
            Terminal.error("sluice: interrupted")
            _exit(130)
        }
        for watcher in watchers { watcher(number) }
    }
}

/// Turns SIGINT and SIGTERM into calls to `onSignal`, until `stop()`.
final class SignalWatcher: Sendable {
    private let id: Int

    init(_ onSignal: @escaping @Sendable (Int32) -> Void) {
        id = Signals.add(onSignal)
    }

    func stop() {
        Signals.remove(id)
    }
}
