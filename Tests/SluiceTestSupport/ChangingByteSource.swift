import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sluice
import SluiceReceiver
#if canImport(Glibc)
import Glibc
#endif
@_spi(Floors) import SluicePrimitives

/// A source whose bytes change each time it is read from its start: a file rewritten between
/// two passes, without a file.
package final class ChangingByteSource: ByteSource, Sendable {
    package let length: Int64
    /// Passes begun (reads at offset 0).
    package let passes = Mutex(0)

    package init(length: Int64) { self.length = length }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        let pass = passes.withLock { passes in
            if offset == 0 { passes += 1 }
            return passes
        }
        let count = Int(min(Int64(buffer.count), length - offset))
        for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: pass) }
        return count
    }
}

/// Writes `bytes` at offset 0, in place (as a program rewriting the file does).
package func rewriteFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    close(fd)
}
