import Testing
@testable import Sluice
import SluiceTestSupport

/// `PageMemory`: the kernel refusing pages is an error for the request that asked, not a trap
/// (before: `fatalError` when `mmap` failed).
struct PageMemoryTests {
    @Test func aRefusedMappingIsAnError() {
        let error = #expect(throws: PageMemory.AllocationFailed.self) { _ = try PageMemory.allocate(byteCount: 1 << 62) }
        #expect(error?.byteCount == 1 << 62)
        #expect(error.map { "\($0)".hasPrefix("cannot map 4611686018427387904 bytes of memory: ") } == true)
    }

    @Test func aMappingComesBackAndIsPooled() throws {
        let before = PageMemory.pooledBytes
        let memory = try PageMemory.allocate(byteCount: 4096)
        memory.storeBytes(of: 7, as: UInt8.self)
        PageMemory.deallocate(memory)
        #expect(PageMemory.pooledBytes >= before)
    }
}
