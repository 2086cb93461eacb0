#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A file descriptor with one owner, closed exactly once: by `close()` (idempotent, from any
/// thread) or by `deinit`, and never while a read is using it, so a read can never reach a
/// descriptor number the system has since handed to another file.
package final class OwnedDescriptor: Sendable {
    package let fd: Int32
    /// For error messages.
    package let path: String
    /// Bit 0: closed. Bits 1...: reads in flight, in steps of 2. The descriptor is closed by
    /// whoever makes the state exactly 1 (closed, no reader): `close()` or the last reader out.
    private let state = Atomic<Int>(0)

    package init(_ fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit {
        // No reference is left, so no read is in flight.
        if state.load(ordering: .acquiring) & 1 == 0 { _ = systemClose(fd) }
    }

    /// Whether `close()` was called.
    package var isClosed: Bool { state.load(ordering: .acquiring) & 1 != 0 }

    /// Runs `body` with the descriptor, which stays open until it returns.
    ///
    /// - Throws: `ByteSourceError.system` with `EBADF` after `close()`, or `body`'s error.
    package func use<T>(_ body: (Int32) throws -> T) throws -> T {
        var current = state.load(ordering: .relaxed)
        while true {
            if current & 1 != 0 { throw ByteSourceError.system(operation: "read", path: path, errno: EBADF) }
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: current + 2, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        defer {
            if state.subtract(2, ordering: .acquiringAndReleasing).newValue == 1 { _ = systemClose(fd) }
        }
        return try body(fd)
    }

    /// Closes the descriptor: at once when no read is in flight, else when the last one
    /// returns. Later calls do nothing.
    package func close() {
        if state.bitwiseOr(1, ordering: .acquiringAndReleasing).oldValue == 0 { _ = systemClose(fd) }
    }
}

@inline(__always) package func systemClose(_ fd: Int32) -> Int32 { close(fd) }
