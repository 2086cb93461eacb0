/// A random-access source that reads ahead on a thread of its own (a signed aws-chunked body
/// hashing its next chunks): a reader that must not wait, such as an engine loop, asks with
/// `read(into:at:wake:)`, and whoever sends the source ends its background work with
/// `endReading(then:)` when the request ends.
package protocol ReadAheadByteSource: ByteSource {
    /// `read(into:at:)` without waiting for the read-ahead.
    ///
    /// - Returns: The bytes written, as `read(into:at:)`; nil when the next bytes are not ready
    ///   yet: `wake` is then called once, from another thread, when they are (or failed).
    /// - Throws: The source's error.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, wake: @escaping @Sendable () -> Void) throws -> Int?

    /// Stops the read-ahead and runs `then` once no read of the underlying source is in flight
    /// (at once when none is; else on the read-ahead's thread). Later reads work, without
    /// reading ahead. Idempotent.
    func endReading(then: @escaping @Sendable () -> Void)
}

extension ReadAheadByteSource {
    /// `endReading(then:)`, awaited.
    package func endReading() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            endReading { continuation.resume() }
        }
    }
}

/// A source whose bytes come in sections that reads are best sized to (an aws-chunked body:
/// a section's header line carries a signature of its data, so a read takes only whole
/// sections in place, and a section cut by the end of a buffer goes through a copy).
package protocol SectionedByteSource: ByteSource {
    /// The read size near `size` that whole sections fill: `size` rounded up to whole
    /// sections when that adds at most a sixteenth, else `size`.
    func readSize(near size: Int) -> Int
}

/// A source whose memory is refilled for later use (a pooled part buffer): a reader that may
/// run on after the request that started it (a read-ahead) enters it for each read, and the
/// owner refills it only when no reader is inside, as `OwnedDescriptor` closes a descriptor only
/// when no read uses it.
package protocol ReusedByteSource: ByteSource {
    /// Counts a reader in.
    ///
    /// - Throws: `ByteSourceError.system` (`EBUSY`) while the source is being refilled.
    func enterReader() throws
    /// Counts a reader out.
    func leaveReader()
}

extension ByteSource {
    /// Runs `body`, a read of this source, counted as a reader when the source is a
    /// `ReusedByteSource`.
    ///
    /// - Throws: `body`'s error, or the source's while it is being refilled.
    package func whileReading<R>(_ body: () throws -> R) throws -> R {
        guard let reused = self as? any ReusedByteSource else { return try body() }
        try reused.enterReader()
        defer { reused.leaveReader() }
        return try body()
    }
}
