/// A fixed-capacity FIFO of bytes over caller-owned storage.
///
/// A plain value: its owner holds it under a lock, allocates `storage` once and frees it
/// once. `write` and `read` copy as much as fits and return how much that was, so partial
/// writes and reads are normal. Memory is bounded by `capacity` bytes.
public struct ByteRing: @unchecked Sendable {
    // @unchecked: `storage` is a raw pointer; every access happens through the owner's lock.
    /// The fixed memory the ring's bytes live in; its owner allocates and frees it.
    public let storage: UnsafeMutableRawBufferPointer
    /// Index of the oldest byte.
    public private(set) var head: Int
    /// Number of bytes held.
    public private(set) var count: Int

    /// The ring's size in bytes.
    public var capacity: Int { storage.count }
    /// Bytes that can be written before the ring is full.
    public var freeSpace: Int { capacity - count }
    /// Whether the ring holds no bytes.
    public var isEmpty: Bool { count == 0 }
    /// Whether the ring holds `capacity` bytes and takes no more.
    public var isFull: Bool { count == capacity }

    /// A ring over `storage`, empty, its first byte to go at `head`.
    ///
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
        let (first, second) = writableRegions(limit: bytes.count)
        let total = first.count + second.count
        guard total > 0, let source = bytes.baseAddress else { return 0 }
        first.baseAddress!.copyMemory(from: source, byteCount: first.count)
        if !second.isEmpty { second.baseAddress!.copyMemory(from: source + first.count, byteCount: second.count) }
        commitWrite(total)
        return total
    }

    /// Removes up to `buffer.count` of the oldest bytes into `buffer`.
    ///
    /// - Returns: How many were removed, `0 ... min(buffer.count, count)`.
    @discardableResult
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let (first, second) = readableRegions(limit: buffer.count)
        let total = first.count + second.count
        guard total > 0, let target = buffer.baseAddress else { return 0 }
        target.copyMemory(from: first.baseAddress!, byteCount: first.count)
        if !second.isEmpty { (target + first.count).copyMemory(from: second.baseAddress!, byteCount: second.count) }
        commitRead(total)
        return total
    }

    // MARK: Two-phase access
    //
    // For one writer and one reader on different threads: each takes its regions under the
    // owner's lock, copies with the lock released, and commits under the lock. A region handed
    // out stays valid until committed: free space only grows while a write is in progress, and
    // held bytes only grow while a read is.

    /// The free space after the last byte, at most `limit` bytes, as up to two regions.
    public func writableRegions(limit: Int) -> (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer) {
        let total = max(0, min(limit, freeSpace))
        let tail = (head + count) % capacity
        let first = min(total, capacity - tail)
        return (
            UnsafeMutableRawBufferPointer(rebasing: storage[tail..<tail + first]),
            UnsafeMutableRawBufferPointer(rebasing: storage[0..<total - first])
        )
    }

    /// Makes `count` bytes written into `writableRegions` part of the ring.
    public mutating func commitWrite(_ written: Int) {
        precondition(written >= 0 && written <= freeSpace, "commit past the free space")
        count += written
    }

    /// The oldest bytes, at most `limit`, as up to two regions.
    public func readableRegions(limit: Int) -> (UnsafeRawBufferPointer, UnsafeRawBufferPointer) {
        let total = max(0, min(limit, count))
        let first = min(total, capacity - head)
        return (
            UnsafeRawBufferPointer(rebasing: storage[head..<head + first]),
            UnsafeRawBufferPointer(rebasing: storage[0..<total - first])
        )
    }

    /// Drops `taken` bytes read from `readableRegions`.
    public mutating func commitRead(_ taken: Int) {
        precondition(taken >= 0 && taken <= count, "commit past the held bytes")
        head = (head + taken) % capacity
        count -= taken
    }
}
