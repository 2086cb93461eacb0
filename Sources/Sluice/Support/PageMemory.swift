#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Anonymous pages straight from the kernel (`mmap`), given back whole on `deallocate`.
///
/// For buffers of a megabyte or so that come and go with every request, such as the signed
/// read-ahead of each S3 part: from malloc they would stay in the per-thread arenas they were
/// freed to, and the process's peak RSS would climb well past the memory that is live.
enum PageMemory {
    /// - Precondition: The kernel has the memory (as for `allocate(byteCount:alignment:)`).
    static func allocate(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        let size = max(1, byteCount)
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else { fatalError("mmap of \(size) bytes failed: errno \(errno)") }
        return UnsafeMutableRawBufferPointer(start: address, count: byteCount)
    }

    static func deallocate(_ memory: UnsafeMutableRawBufferPointer) {
        guard let address = memory.baseAddress else { return }
        munmap(address, max(1, memory.count))
    }
}
