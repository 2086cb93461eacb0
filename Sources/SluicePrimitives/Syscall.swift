#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CSluiceCrypto
#endif

extension timespec {
    /// A `stat` time exactly, in nanoseconds since 1970 (what fingerprints and journals keep).
    package var nanosecondsSince1970: Int64 { Int64(tv_sec) * 1_000_000_000 + Int64(tv_nsec) }
}

/// The one place where interrupted system calls are retried.
package enum Syscall {
    /// Runs `call` until it does not fail with `EINTR`.
    ///
    /// - Returns: The call's non-negative result.
    /// - Throws: `Errno` with the call's `errno` when it fails otherwise.
    @inline(__always)
    package static func retrying<T: BinaryInteger>(_ call: () -> T) throws(Errno) -> T {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = errno
            if code != EINTR { throw Errno(code: code) }
        }
    }

    package static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int64) throws(Errno) -> Int {
        try retrying { Glibc_pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `pread` from the page cache only (`preadv2` with `RWF_NOWAIT`): the bytes it holds at
    /// `offset` (fewer than asked when it holds only some, 0 at the end of the file), nil where
    /// the read would wait on the disk (`EAGAIN`) or the file system or system cannot say
    /// (`EOPNOTSUPP`, `EINVAL`, `ENOSYS`; always off Linux). For reads done inline on a task's
    /// thread, with the blocking pool for a nil.
    ///
    /// - Throws: `Errno` for any other failure.
    package static func preadCached(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int64) throws(Errno) -> Int? {
        #if os(Linux)
        do throws(Errno) {
            return try retrying { sluice_pread_nowait(fd, buffer.baseAddress, buffer.count, offset) }
        } catch {
            switch error.code {
            case EAGAIN, EOPNOTSUPP, EINVAL, ENOSYS: return nil
            default: throw error
            }
        }
        #else
        return nil
        #endif
    }

    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retrying { Glibc_read(fd, buffer.baseAddress, buffer.count) }
    }

    package static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try retrying { Glibc_write(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `buffer`, looping over short writes.
    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < buffer.count {
            done += try write(fd, UnsafeRawBufferPointer(rebasing: buffer[done...]))
        }
    }
}

/// A system error number.
package struct Errno: Error, Sendable {
    package var code: Int32

    package init(code: Int32) { self.code = code }
}

@inline(__always) private func Glibc_pread(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int, _ o: off_t) -> Int { pread(fd, p, n, o) }
@inline(__always) private func Glibc_read(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, p, n) }
@inline(__always) private func Glibc_write(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, p, n) }
