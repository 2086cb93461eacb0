#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SluicePrimitives

/// A regular file read with `pread`, any size (files over 4 GiB included).
///
/// The file is opened once; its length is taken at open. A file that shrinks while it
/// is read makes `read(into:at:)` return 0 before `length`, which every reader in Sluice
/// turns into `ByteSourceError.endedEarly`.
///
/// A file whose size is 0 is read once at open: if it yields a byte (a `/proc` file, whose
/// size the kernel reports as 0), its length is not known and `init(path:)` throws
/// `ByteSourceError.unknownLength`; `SourceSpecification.open()` then reads it as a
/// sequential source (`FileStreamSource`). If it yields nothing, it is an empty file. Files on
/// /proc, /sys and similar kernel file systems are treated the same whatever their size (a
/// sysfs attribute reports 4096 and holds a few bytes).
///
/// Ownership: the instance owns its descriptor. `close()` closes it once, whoever calls it
/// and however often; the last reference going away closes it too. A read after `close()`
/// fails with `EBADF` and never touches a descriptor number another file may have been given
/// since: the descriptor is closed only when no read is in flight.
public final class FileByteSource: ByteSource {
    /// The path the file was opened at.
    public let path: String
    public let length: Int64
    /// The file's device and inode numbers at open.
    public let device: UInt64
    /// The file's inode number at open (with `device`, it names the file).
    public let inode: UInt64
    /// The file's modification time at open (seconds since 1970, with nanoseconds).
    public let modificationTime: Double
    /// The file's status change time (`ctime`) at open: it moves on every write, and unlike
    /// the modification time it cannot be set back by `touch -r`, `cp -p` or `rsync -t`.
    public let changeTime: Double
    /// The modification and change times at open, exact (nanoseconds since 1970).
    package let timesInNanoseconds: (modification: Int64, change: Int64)
    private let descriptor: OwnedDescriptor

    /// Opens `path` for reading. Never blocks: a FIFO is opened non-blocking and refused.
    ///
    /// - Throws: `ByteSourceError.notFound`, `.permissionDenied`, `.isDirectory`,
    ///   `.notRegularFile` (FIFOs, devices, sockets), `.unknownLength` (size 0 but not
    ///   empty), or `.system` for other failures.
    public convenience init(path: String) throws {
        let (fd, info) = try FileByteSource.openFile(path)
        try self.init(adopting: fd, info: info, path: path)
    }

    /// Takes over `fd` (already open on `path`, `info` its `fstat`); closes it when it throws.
    ///
    /// - Parameter probed: The caller already read the file once and found it empty or
    ///   non-zero in size, so the size-0 check is skipped.
    package init(adopting fd: Int32, info: stat, path: String, probed: Bool = false) throws {
        guard info.st_mode & S_IFMT == S_IFREG else {
            _ = systemClose(fd)
            throw FileByteSource.notRegular(path, mode: info.st_mode)
        }
        if !probed {
            let unknown: Bool
            do { unknown = try FileByteSource.lengthIsUnknown(fd, info: info, path: path) } catch {
                _ = systemClose(fd)
                throw error
            }
            if unknown {
                _ = systemClose(fd)
                throw ByteSourceError.unknownLength(path: path)
            }
        }
        self.path = path
        self.descriptor = OwnedDescriptor(fd, path: path)
        self.length = Int64(info.st_size)
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
        self.modificationTime = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        self.changeTime = Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
        timesInNanoseconds = (info.st_mtim.nanosecondsSince1970, info.st_ctim.nanosecondsSince1970)
    }

    /// Whether a regular file's size is not its length: size 0 but a byte at offset 0 (a
    /// /proc file), or any size on /proc, /sys and the like (a sysfs attribute says 4096 and
    /// holds a few bytes).
    package static func lengthIsUnknown(_ fd: Int32, info: stat, path: String) throws -> Bool {
        if info.st_size == 0 { return try yieldsBytes(fd, path: path) }
        return isOnPseudoFileSystem(info)
    }

    /// Whether a file is on the file system mounted at /proc or /sys, whose sizes are not
    /// lengths. (Their other kernel file systems, debugfs, tracefs, cgroup, report size 0 and
    /// are caught by the read at offset 0.)
    package static func isOnPseudoFileSystem(_ info: stat) -> Bool {
        pseudoFileSystemDevices.contains(UInt64(info.st_dev))
    }

    /// The devices of /proc and /sys, read once (a job opens thousands of files: two `stat`s
    /// each were a third of the `stat`s per file).
    package static let pseudoFileSystemDevices: Set<UInt64> = Set(
        ["/proc", "/sys"].compactMap { root in
            var mount = stat()
            return stat(root, &mount) == 0 ? UInt64(mount.st_dev) : nil
        })

    /// Whether a file whose size is 0 yields a byte at offset 0 (a /proc or /sys file); the
    /// file position is left where it was.
    package static func yieldsBytes(_ fd: Int32, path: String) throws -> Bool {
        let probe = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { probe.deallocate() }
        do throws(Errno) {
            return try Syscall.pread(fd, probe, 0) > 0
        } catch  where error.code == ESPIPE {
            return true  // no pread: read it as a stream to learn what it holds
        } catch {
            throw ByteSourceError.system(operation: "read", path: path, errno: error.code)
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        let count = min(Int64(buffer.count), length - offset)
        if count == 0 { return 0 }
        return try descriptor.use { fd in
            do throws(Errno) {
                return try Syscall.pread(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(count)]), offset)
            } catch {
                throw ByteSourceError.system(operation: "read", path: path, errno: error.code)
            }
        }
    }

    /// The file's size and status change time (`ctime`, nanoseconds since 1970) now, from
    /// `fstat` of the open descriptor: the file read, whatever the path names since.
    ///
    /// - Throws: `ByteSourceError.system`.
    package func currentSizeAndChangeTime() throws -> (size: Int64, change: Int64) {
        try descriptor.use { fd in
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw ByteSourceError.system(operation: "fstat", path: path, errno: errno) }
            return (Int64(info.st_size), info.st_ctim.nanosecondsSince1970)
        }
    }

    /// Closes the file descriptor: at once when no read is in flight, else when the last
    /// one returns. Idempotent and thread-safe; reads after it fail with `EBADF`.
    public func close() { descriptor.close() }

    /// Whether `close()` was called.
    public var isClosed: Bool { descriptor.isClosed }

    /// Opens `path` read-only and non-blocking (so a FIFO with no writer cannot hang), and
    /// `fstat`s it.
    package static func openFile(_ path: String) throws -> (Int32, stat) {
        var fd: Int32
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        } while fd < 0 && errno == EINTR
        if fd < 0 {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw ByteSourceError.notFound(path: path)
            case EACCES, EPERM: throw ByteSourceError.permissionDenied(path: path)
            case EISDIR: throw ByteSourceError.isDirectory(path: path)
            case ENXIO: throw ByteSourceError.notRegularFile(path: path, kind: "socket or device with no reader")
            default: throw ByteSourceError.system(operation: "open", path: path, errno: code)
            }
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let code = errno
            _ = systemClose(fd)
            throw ByteSourceError.system(operation: "fstat", path: path, errno: code)
        }
        return (fd, info)
    }

    package static func notRegular(_ path: String, mode: mode_t) -> ByteSourceError {
        switch mode & S_IFMT {
        case S_IFDIR: return .isDirectory(path: path)
        case S_IFIFO: return .notRegularFile(path: path, kind: "FIFO")
        case S_IFCHR: return .notRegularFile(path: path, kind: "character device")
        case S_IFBLK: return .notRegularFile(path: path, kind: "block device")
        case S_IFSOCK: return .notRegularFile(path: path, kind: "socket")
        default: return .notRegularFile(path: path, kind: "special file")
        }
    }
}
