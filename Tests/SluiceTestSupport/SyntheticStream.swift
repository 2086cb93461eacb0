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

/// A stream of synthetic bytes, read once, length unknown: stdin as the library sees it.
package final class SyntheticStream: SequentialByteSource {
    package let source: SyntheticByteSource
    private let offset = Mutex<Int64>(0)
    package let length = BodyLength.unknown

    package init(length: Int64, seed: UInt64) { source = SyntheticByteSource(length: length, seed: seed) }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try offset.withLock { offset in
            let count = try source.read(into: buffer, at: offset)
            offset += Int64(count)
            return count
        }
    }
}
