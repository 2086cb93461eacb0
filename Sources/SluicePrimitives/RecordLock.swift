#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run's hold on a durable record (a job's journal, a resumable upload's record, a
/// presigned-parts record): an exclusive `flock` on `<record>.lock`, which holds the holder's
/// pid. A second run that asks for it is refused at once (`RecordLockError.held`, naming the
/// pid); the lock dies with its process (`kill -9` included: the kernel drops it with the
/// descriptor), and a lock file left behind by a dead process is taken over.
///
/// The lock file is removed on `release` while still locked; a run that opened it just before
/// finds it no longer at its path once it holds the lock, and opens the path again.
package final class RecordLock: Sendable {
    /// The lock file.
    package let path: String
    private let descriptor: Lock<Int32>

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = Lock(descriptor)
    }

    deinit { release() }

    /// Takes the lock of `record` (its directory must exist), or fails at once.
    ///
    /// - Throws: `RecordLockError`: `.held` with the holder's pid when another run holds it,
    ///   `.system` when the lock file cannot be opened or locked.
    package static func acquire(_ record: String) throws(RecordLockError) -> RecordLock {
        let path = record + ".lock"
        // A few rounds at most: each one means the holder released between open and flock.
        for _ in 0..<16 {
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw RecordLockError(record: record, problem: .system(call: "open", errno: errno)) }
            var failed: Int32?
            do throws(Errno) { _ = try Syscall.retrying { flock(descriptor, LOCK_EX | LOCK_NB) } } catch { failed = error.code }
            if let code = failed {
                let holder = code == EWOULDBLOCK ? pid(in: descriptor) : nil
                close(descriptor)
                guard code == EWOULDBLOCK else { throw RecordLockError(record: record, problem: .system(call: "flock", errno: code)) }
                throw RecordLockError(record: record, problem: .held(pid: holder))
            }
            var held = stat()
            var named = stat()
            guard fstat(descriptor, &held) == 0, stat(path, &named) == 0, held.st_dev == named.st_dev, held.st_ino == named.st_ino else {
                close(descriptor)
                continue
            }
            let text = Array("\(getpid())\n".utf8)
            _ = ftruncate(descriptor, 0)
            _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
            return RecordLock(path: path, descriptor: descriptor)
        }
        throw RecordLockError(record: record, problem: .system(call: "flock", errno: EAGAIN))
    }

    /// Removes the lock file and drops the lock. Later calls do nothing.
    package func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            unlink(path)
            close(descriptor)
            descriptor = -1
        }
    }

    /// The pid written in a lock file, if it holds one.
    private static func pid(in descriptor: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { (try? Syscall.pread(descriptor, $0, 0)) ?? 0 }
        return String(decoding: bytes.prefix(count), as: UTF8.self).split(separator: "\n").first.flatMap { Int32($0) }
    }
}

/// A record's lock could not be taken.
package struct RecordLockError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Problem: Sendable, Equatable {
        /// Another run holds it: its pid, when the lock file names one.
        case held(pid: Int32?)
        case system(call: String, errno: Int32)
    }

    /// The record the lock is for.
    package var record: String
    package var problem: Problem

    /// What is wrong, in a few words (the caller names the record).
    package var description: String {
        switch problem {
        case .held(let pid): return "in use by another run (\(pid.map { "sluice pid \($0)" } ?? "a sluice that is starting")): wait for it to end, or stop it"
        case .system(let call, let code): return "cannot be locked (\(call): \(FileSystemReason.text(errno: code)))"
        }
    }
}
