import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

@Suite struct ByteRingTests {
    /// Every layout: capacity x start x fill, then a write and a read of every size.
    @Test func everyLayoutKeepsOrderAndCounts() {
        for capacity in 1...9 {
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
            defer { storage.deallocate() }
            for start in 0..<capacity {
                for fill in 0...capacity {
                    for writeSize in 0...(capacity + 1) {
                        for readSize in 0...(capacity + 1) {
                            var ring = ByteRing(storage: storage, head: start)
                            var model: [UInt8] = []
                            var next: UInt8 = 1
                            let first = (0..<fill).map { _ in
                                defer { next &+= 1 }; return next
                            }
                            #expect(first.withUnsafeBytes { ring.write($0) } == fill)
                            model += first
                            let more = (0..<writeSize).map { _ in
                                defer { next &+= 1 }; return next
                            }
                            let wrote = more.withUnsafeBytes { ring.write($0) }
                            #expect(wrote == min(writeSize, capacity - fill))
                            model += more.prefix(wrote)
                            #expect(ring.count == model.count)
                            #expect(ring.freeSpace == capacity - model.count)
                            var out = [UInt8](repeating: 0, count: readSize)
                            let read = out.withUnsafeMutableBytes { ring.read(into: $0) }
                            #expect(read == min(readSize, model.count))
                            #expect(Array(out.prefix(read)) == Array(model.prefix(read)))
                            model.removeFirst(read)
                            var rest = [UInt8](repeating: 0, count: capacity)
                            let tail = rest.withUnsafeMutableBytes { ring.read(into: $0) }
                            #expect(Array(rest.prefix(tail)) == model, "capacity \(capacity) start \(start) fill \(fill)")
                            #expect(ring.isEmpty)
                        }
                    }
                }
            }
        }
    }

    @Test func fullRingAcceptsNothingAndEmptyRingYieldsNothing() {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 37, alignment: 1)
        defer { storage.deallocate() }
        var ring = ByteRing(storage: storage, head: 36)
        let bytes = [UInt8](repeating: 7, count: 40)
        #expect(bytes.withUnsafeBytes { ring.write($0) } == 37)
        #expect(ring.isFull)
        #expect(bytes.withUnsafeBytes { ring.write($0) } == 0)
        var out = [UInt8](repeating: 0, count: 50)
        #expect(out.withUnsafeMutableBytes { ring.read(into: $0) } == 37)
        #expect(out.withUnsafeMutableBytes { ring.read(into: $0) } == 0)
    }
}
