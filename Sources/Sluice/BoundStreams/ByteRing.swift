/// A fixed-capacity FIFO of bytes over caller-owned storage.
///
/// A plain value: its owner holds it under a lock, allocates `storage` once and frees it
/// once. `write` and `read` copy as much as fits and return how much that was, so partial
/// writes and reads are normal. Memory is bounded by `capacity` bytes.
public struct ByteRing: @unchecked Sendable {
    // @unchecked: `storage` is a raw pointer; every access happens through the owner's lock.
    public let storage: UnsafeMutableRawBufferPointer
    /// Index of the oldest byte.
    public private(set) var head: Int
    /// Number of bytes held.
    public private(set) var count: Int

    public var capacity: Int { storage.count }
    public var freeSpace: Int { capacity - count }
    public var isEmpty: Bool { count == 0 }
    public var isFull: Bool { count == capacity }

    /// - Parameters:
    ///   - storage: At least one byte; the ring never allocates or frees it.
    ///   - head: Where the first byte goes; for tests of every layout.
    public init(storage: UnsafeMutableRawBufferPointer, head: Int = 0) {
        precondition(storage.count > 0, "a ring needs capacity")
        precondition(head >= 0 && head < storage.count, "head outside the ring")
        self.storage = storage
        self.head = head
        self.count = 0
    }

    /// Appends as many bytes of `bytes` as fit.
    ///
    /// - Returns: How many were appended, `0 ... min(bytes.count, freeSpace)`.
    @discardableResult
    public mutating func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let total = min(bytes.count, freeSpace)
        guard total > 0, let source = bytes.baseAddress, let base = storage.baseAddress else { return 0 }
        let tail = (head + count) % capacity
        let first = min(total, capacity - tail)
        (base + tail).copyMemory(from: source, byteCount: first)
        if first < total {
            base.copyMemory(from: source + first, byteCount: total - first)
        }
        count += total
        return total
    }

    /// Removes up to `buffer.count` of the oldest bytes into `buffer`.
    ///
    /// - Returns: How many were removed, `0 ... min(buffer.count, count)`.
    @discardableResult
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let total = min(buffer.count, count)
        guard total > 0, let target = buffer.baseAddress, let base = storage.baseAddress else { return 0 }
        let first = min(total, capacity - head)
        target.copyMemory(from: base + head, byteCount: first)
        if first < total {
            (target + first).copyMemory(from: base, byteCount: total - first)
        }
        head = (head + total) % capacity
        count -= total
        if count == 0 { head = 0 }
        return total
    }
}
