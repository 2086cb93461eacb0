#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Anonymous pages straight from the kernel (`mmap`), kept for the next request of the same
/// size up to `poolLimit` bytes, given back whole beyond it.
///
/// For buffers of a megabyte or so that come and go with every request, such as the signed
/// read-ahead of each S3 part: from malloc they would stay in the per-thread arenas they were
/// freed to, and the process's peak RSS would climb well past the memory that is live. From
/// `mmap` alone every request paid a fault and a zeroed page per 4 KiB (9 % of a job's CPU
/// with 1,000 files of 1 MiB): the pool keeps up to `poolLimit` bytes of buffers mapped, so
/// the memory held is at most what was live at once plus nothing beyond that limit.
///
/// - Important: A buffer comes back with the bytes its last user left (not zeroed).
package enum PageMemory {
    /// The most bytes of freed buffers kept mapped: the S3 read-ahead budget.
    package static let poolLimit = 16 << 20

    private struct Pool {
        /// Freed buffers' addresses by size.
        package var free: [Int: [UInt]] = [:]
        package var bytes = 0
    }

    private static let pool = Lock(Pool())

    /// The kernel refused the pages (`mmap` failed): an error for the request that asked, not a trap.
    package struct AllocationFailed: Error, CustomStringConvertible {
        /// The bytes asked for.
        package var byteCount: Int
        /// `mmap`'s errno (ENOMEM: no memory or address space left, or over a limit).
        package var errorNumber: Int32

        package var description: String {
            "cannot map \(byteCount) bytes of memory: \(String(cString: strerror(errorNumber)))"
        }
    }

    /// `byteCount` bytes of pages, reused from the pool or mapped.
    ///
    /// - Throws: `AllocationFailed` when `mmap` fails.
    package static func allocate(byteCount: Int) throws(AllocationFailed) -> UnsafeMutableRawBufferPointer {
        let size = max(1, byteCount)
        let reused = pool.withLock { pool -> UInt? in
            guard let address = pool.free[size]?.popLast() else { return nil }
            pool.bytes -= size
            return address
        }
        if let reused, let address = UnsafeMutableRawPointer(bitPattern: reused) {
            return UnsafeMutableRawBufferPointer(start: address, count: byteCount)
        }
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else { throw AllocationFailed(byteCount: size, errorNumber: errno) }
        return UnsafeMutableRawBufferPointer(start: address, count: byteCount)
    }

    package static func deallocate(_ memory: UnsafeMutableRawBufferPointer) {
        guard let address = memory.baseAddress else { return }
        let size = max(1, memory.count)
        let kept = pool.withLock { pool -> Bool in
            guard pool.bytes + size <= poolLimit else { return false }
            pool.free[size, default: []].append(UInt(bitPattern: address))
            pool.bytes += size
            return true
        }
        if !kept { munmap(address, size) }
    }

    /// Bytes of freed buffers kept mapped.
    package static var pooledBytes: Int { pool.withLock { $0.bytes } }
}
