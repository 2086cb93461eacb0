#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SluicePrimitives

/// A small random-access body read whole, once, into one buffer that is then hashed and sent:
/// what is signed is what goes (before: a hash pass and a send pass read the file twice, so a
/// file rewritten between them was refused as `BadDigest`, or stored as bytes it never held).
///
/// For a file, the buffer is the file as it was at rest. Its change time (`ctime`, which every
/// write moves and no one can set back) is taken at open; the read starts only once the clock
/// is past that time by the file system's timestamp granularity (a write within the same tick
/// would leave `ctime` where it was), waiting for it when the file was changed just now; and
/// the change time must be the same before and after the read. A file whose change time moved
/// is refused (`Changed`), never sent.
///
/// - Important: Memory: the whole body (callers use it below 64 KiB). The wait is at most the
///   granularity (two ticks of the kernel's coarse clock, or 2 s on a file system with whole
///   seconds); a change time further ahead of the clock than that is refused, not waited for.
package struct SourceSnapshot: Sendable {
    /// The file's change time moved, or is too far ahead of the clock to trust: why, in words.
    package struct Changed: Error, Sendable, CustomStringConvertible {
        package var reason: String
        package var description: String { reason }
    }

    /// The clock file times are stamped with (nanoseconds since 1970) and a way to wait.
    package struct Clock: Sendable {
        package var now: @Sendable () -> Int64
        package var sleep: @Sendable (Duration) async throws -> Void

        /// `CLOCK_REALTIME` and `Task.sleep`.
        package static let system = Clock(
            now: {
                var now = timespec()
                clock_gettime(CLOCK_REALTIME, &now)
                return now.nanosecondsSince1970
            },
            sleep: { try await Task.sleep(for: $0) })
    }

    package var clock = Clock.system
    /// Called between the read and the second look at the change time (tests change the file there).
    package var afterRead: (@Sendable () -> Void)?

    /// A snapshot with the system clock and no hook.
    package init() {}

    /// How long after a change time a write could still leave it unchanged: 2 s when it has
    /// whole seconds (ext4 with small inodes, FAT's 2 s), else two ticks of the coarse clock
    /// the kernel stamps file times with (4 ms at 250 Hz), at least 1 ms.
    package static func granularity(changeTime: Int64) -> Int64 {
        if changeTime % 1_000_000_000 == 0 { return 2_000_000_000 }
        var resolution = timespec()
        #if canImport(Glibc)
        clock_getres(CLOCK_REALTIME_COARSE, &resolution)
        #else
        clock_getres(CLOCK_REALTIME, &resolution)
        #endif
        return max(1_000_000, 2 * resolution.nanosecondsSince1970)
    }

    /// The bytes of `source`, read once.
    ///
    /// - Throws: `Changed` for a file whose change time moved since it was opened or during
    ///   the read, or is too far ahead of the clock; `ByteSourceError` when the read fails or
    ///   the source ends early; `CancellationError` while it waits.
    package func read(_ source: any ByteSource) async throws -> [UInt8] {
        guard let file = source as? FileByteSource else { return try source.bytes(in: 0..<source.length) }
        let opened = file.timesInNanoseconds.change
        let granularity = Self.granularity(changeTime: opened)
        let wait = opened + granularity - clock.now()
        if wait > 0 {
            guard wait <= granularity else {
                throw Changed(reason: "its change time is \(Self.seconds(wait - granularity)) s ahead of this machine's clock, so whether it is still being written cannot be told")
            }
            try await clock.sleep(.nanoseconds(wait))
        }
        // The looks and the read wait on the disk: on the blocking pool's threads.
        let afterRead = afterRead
        return try await BlockingPool.shared.run {
            try Self.check(file, opened: opened, when: "since it was opened")
            let bytes = try file.bytes(in: 0..<file.length)
            afterRead?()
            try Self.check(file, opened: opened, when: "while it was read")
            return bytes
        }
    }

    private static func check(_ file: FileByteSource, opened: Int64, when: String) throws {
        let now = try file.currentSizeAndChangeTime()
        guard now.size == file.length, now.change == opened else {
            throw Changed(reason: "it was written to \(when): its change time moved")
        }
    }

    private static func seconds(_ nanoseconds: Int64) -> String {
        String(Double(nanoseconds / 1_000_000) / 1_000)
    }
}
