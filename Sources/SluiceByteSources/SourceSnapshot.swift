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
    /// Whether `readFile` reads what the page cache holds on the task's thread; false sends
    /// every read to the blocking pool, as a read that would wait on the disk goes (tests).
    package var readsCachedInline = true

    /// A snapshot with the system clock and no hook.
    package init() {}

    /// How long after a change time a write could still leave it unchanged: 2 s when it has
    /// whole seconds (ext4 with small inodes, FAT's 2 s), else two ticks of the coarse clock
    /// the kernel stamps file times with (4 ms at 250 Hz), at least 1 ms.
    package static func granularity(changeTime: Int64) -> Int64 {
        changeTime % 1_000_000_000 == 0 ? 2_000_000_000 : fineGranularity
    }

    /// Two ticks of the coarse clock, at least 1 ms (read once).
    private static let fineGranularity: Int64 = {
        var resolution = timespec()
        #if canImport(Glibc)
        clock_getres(CLOCK_REALTIME_COARSE, &resolution)
        #else
        clock_getres(CLOCK_REALTIME, &resolution)
        #endif
        return max(1_000_000, 2 * resolution.nanosecondsSince1970)
    }()

    /// How long to wait before a read of a file whose change time is `changeTime`: until the
    /// clock is a granularity past it (0 once it is), so that every later write moves it.
    ///
    /// - Throws: `Changed` when the change time is ahead of the clock by more than the granularity.
    package static func wait(before changeTime: Int64, clock: Clock) throws -> Int64 {
        let granularity = granularity(changeTime: changeTime)
        let wait = changeTime + granularity - clock.now()
        guard wait <= granularity else {
            throw Changed(reason: "its change time is \(seconds(wait - granularity)) s ahead of this machine's clock, so whether it is still being written cannot be told")
        }
        return max(0, wait)
    }

    /// The bytes of `source`, read once: in memory (a source already there is itself).
    ///
    /// - Throws: `Changed` for a file whose change time moved since it was opened or during
    ///   the read, or is too far ahead of the clock; `ByteSourceError` when the read fails or
    ///   the source ends early; `CancellationError` while it waits.
    package func read(_ source: any ByteSource) async throws -> any ByteSource {
        if source is MemoryByteSource || source is PinnedByteSource { return source }
        guard let file = source as? any ChangeTimedSource else { return try PinnedByteSource(count: Int(source.length), of: source) }
        let opened = file.openedChangeTime
        let wait = try Self.wait(before: opened, clock: clock)
        if wait > 0 { try await clock.sleep(.nanoseconds(wait)) }
        return try await readAfterWait(file, opened: opened)
    }

    /// Looks at the change time (it must still be `opened`), reads, looks again, on the pool
    /// (the looks and the read wait on the disk): once the clock is a granularity past `opened`.
    private func readAfterWait(_ file: any ChangeTimedSource, opened: Int64) async throws -> PinnedByteSource {
        let afterRead = afterRead
        return try await BlockingPool.shared.run {
            try Self.check(file, opened: opened, when: "since it was opened")
            return try Self.readAtRest(file, opened: opened, afterRead: afterRead)
        }
    }

    /// A small file read whole, as it was at rest, and what it was (its `fstat`).
    package struct File: Sendable {
        /// Its bytes, at an address a transport may hand to libcurl as they are.
        package var bytes: PinnedByteSource
        package var device: UInt64
        package var inode: UInt64
        package var modificationTime: Int64
        package var changeTime: Int64

        package init(_ file: FileByteSource, bytes: PinnedByteSource) {
            self.bytes = bytes
            device = file.device
            inode = file.inode
            (modificationTime, changeTime) = file.timesInNanoseconds
        }

        /// What `info` (an open file's `fstat`) says.
        init(_ info: stat, bytes: PinnedByteSource) {
            self.bytes = bytes
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            (modificationTime, changeTime) = (info.st_mtim.nanosecondsSince1970, info.st_ctim.nanosecondsSince1970)
        }
    }

    /// A regular file below `limit` bytes read as `read(_:)` reads it, or nil for any other
    /// path (grown past the limit, empty, a FIFO, a /proc file), which the caller opens as it
    /// would.
    ///
    /// Its open, `fstat`, read, second `fstat` and close are done on the task's thread when the
    /// page cache holds the whole file (the read is `preadv2` with `RWF_NOWAIT`, which never
    /// waits on the disk: less than the two thread switches of a trip to the blocking pool, and
    /// a job of many small files had one trip a file for this alone). Where the read would wait
    /// (`EAGAIN`, or a file system that cannot say), the opened file is read, looked at again
    /// and closed in one trip to the pool; a file changed within the granularity is read after
    /// the wait, in one trip (the wait is not spent on a pool thread). The open's `fstat` is
    /// the first look either way.
    ///
    /// - Important: The open and the `fstat`s are inline: a job's walk has just looked at the
    ///   path, so its inode is in memory (on a network file system the open may ask the server).
    /// - Throws: `ByteSourceError` when the path cannot be opened (as `OpenedFile(path:)`
    ///   throws it) or read; `Changed`; `CancellationError`.
    package func readFile(atPath path: String, below limit: Int64) async throws -> File? {
        let (fd, info) = try FileByteSource.openFile(path)
        guard info.st_mode & S_IFMT == S_IFREG, info.st_size > 0, Int64(info.st_size) < limit,
            !FileByteSource.isOnPseudoFileSystem(info)
        else {
            _ = systemClose(fd)
            return nil
        }
        let opened = info.st_ctim.nanosecondsSince1970
        let wait: Int64
        do { wait = try Self.wait(before: opened, clock: clock) } catch {
            _ = systemClose(fd)
            throw error
        }
        if wait == 0, readsCachedInline {
            let cached: File?
            do { cached = try Self.readCached(fd, info: info, path: path, afterRead: afterRead) } catch {
                _ = systemClose(fd)
                throw error
            }
            if let cached {
                _ = systemClose(fd)
                return cached
            }
        }
        let file = try FileByteSource(adopting: fd, info: info, path: path, probed: true)
        let afterRead = afterRead
        if wait > 0 {
            do { try await clock.sleep(.nanoseconds(wait)) } catch {
                file.close()
                throw error
            }
        }
        // From here the file is touched on the pool's thread only (ThreadSanitizer does not see
        // the continuation order the task's thread has with it); unclosed after a cancel before
        // the trip, it closes when it goes away.
        return try await BlockingPool.shared.run {
            defer { file.close() }
            if wait > 0 { try Self.check(file, opened: opened, when: "since it was opened") }
            return File(file, bytes: try Self.readAtRest(file, opened: opened, afterRead: afterRead))
        }
    }

    /// `fd`'s file (`info` its `fstat` at open, a granularity old) read whole from the page
    /// cache and looked at again, or nil when the cache does not hold all of it (or the file
    /// ended early: the pool's read says why).
    ///
    /// - Throws: `Changed` when its size or change time moved; `ByteSourceError` when the read
    ///   or the `fstat` fails.
    private static func readCached(_ fd: Int32, info: stat, path: String, afterRead: (@Sendable () -> Void)?) throws -> File? {
        let count = Int(info.st_size)
        var complete = false
        let bytes = try PinnedByteSource(count: count) { buffer in
            do throws(Errno) {
                complete = try Syscall.preadCached(fd, buffer, 0) == count
            } catch {
                throw ByteSourceError.system(operation: "read", path: path, errno: error.code)
            }
        }
        guard complete else { return nil }
        afterRead?()
        var now = stat()
        guard fstat(fd, &now) == 0 else { throw ByteSourceError.system(operation: "fstat", path: path, errno: errno) }
        guard Int64(now.st_size) == Int64(info.st_size), now.st_ctim.nanosecondsSince1970 == info.st_ctim.nanosecondsSince1970 else {
            throw changed(when: "while it was read")
        }
        return File(info, bytes: bytes)
    }

    /// Reads `file` whole and looks at its change time again: it must still be `opened`.
    private static func readAtRest(_ file: any ChangeTimedSource, opened: Int64, afterRead: (@Sendable () -> Void)?) throws -> PinnedByteSource {
        let bytes = try PinnedByteSource(count: Int(file.length), of: file)
        afterRead?()
        try check(file, opened: opened, when: "while it was read")
        return bytes
    }

    /// Waits, for a file changed within the granularity, until its change time is a
    /// granularity old, and looks at it again: a body not read once into memory (a longer
    /// single request, the parts of a multipart upload) is read only once every later write
    /// moves the change time, so the check after it was sent sees each one (git's racily clean
    /// index entries: a change within one tick of the read leaves the time where it was).
    /// Nothing for a file whose change time is older, nor for any other source.
    ///
    /// - Throws: `Changed` when it moved in the wait, or is too far ahead of the clock;
    ///   `CancellationError` while it waits.
    package func settle(_ source: any ByteSource) async throws {
        guard let file = source as? any ChangeTimedSource else { return }
        let opened = file.openedChangeTime
        let wait = try Self.wait(before: opened, clock: clock)
        guard wait > 0 else { return }
        try await clock.sleep(.nanoseconds(wait))
        try await BlockingPool.shared.run { try Self.check(file, opened: opened, when: "since it was opened") }
    }

    private static func check(_ file: any ChangeTimedSource, opened: Int64, when: String) throws {
        let now = try file.currentSizeAndChangeTime()
        guard now.size == file.length, now.change == opened else { throw changed(when: when) }
    }

    private static func changed(when: String) -> Changed {
        Changed(reason: "it was written to \(when): its change time moved")
    }

    private static func seconds(_ nanoseconds: Int64) -> String {
        String(Double(nanoseconds / 1_000_000) / 1_000)
    }
}
