import SluiceS3

/// Keys kept on disk in the order they were added, then read back once in that order: what a
/// sync is to delete, held until the walk has ended without an error, in a few KiB of memory
/// however many keys there are.
///
/// The keys are records of a `SpoolFile` (the format of `RecordSorter`'s runs, without a
/// payload), so the file goes when the spool is closed or the process ends, whatever way it ends.
///
/// - Important: Not thread-safe: one owner (`S3SyncPlanner`) uses it.
package final class KeySpool {
    private var appender: SpoolAppender?
    private var reader: RunReader?
    /// Keys added.
    package private(set) var count = 0
    private var record: [UInt8] = []

    /// Opens an empty spool.
    ///
    /// - Throws: `SpoolError` when no temporary file can be made.
    package init() throws(SpoolError) {
        appender = SpoolAppender(try SpoolFile())
    }

    /// Adds `key` at the end.
    package func append(_ key: String) throws(SpoolError) {
        guard appender != nil, reader == nil else { preconditionFailure("KeySpool.append after reading began or after close") }
        record.removeAll(keepingCapacity: true)
        RecordSorter.appendHeader(to: &record, key: key.utf8.count, payload: 0)
        record.append(contentsOf: key.utf8)
        try record.withUnsafeBytes { raw in Result { () throws(SpoolError) in try self.appender?.append(raw) } }.get()
        count += 1
    }

    /// The next key, from the first added; nil after the last.
    package func next() throws(SpoolError) -> String? {
        if reader == nil {
            guard appender != nil else { return nil }
            try appender?.flush()
            guard let appender else { return nil }
            reader = RunReader(file: appender.file, range: 0..<appender.offset)
        }
        guard let record = try reader?.next() else { return nil }
        return String(decoding: record.key, as: UTF8.self)
    }

    /// Drops the file; called once, when the spool is done with.
    package func close() {
        appender = nil
        reader = nil
    }

    /// Deletes the keys of the spool from `bucket`, `S3Client.deleteBatchLimit` a request, each
    /// key told to `deleted` once its request answered (without a request when `dryRun`), then
    /// closes the spool.
    ///
    /// - Returns: The number deleted and the keys the server refused.
    /// - Throws: `S3Error` when a request failed as a whole (the batches before it are
    ///   deleted); `SpoolError` when the spool cannot be read.
    package func delete(
        with client: S3Client, bucket: String, dryRun: Bool, isolation: isolated (any Actor)? = #isolation,
        deleted told: (String) -> Void
    ) async throws -> (deleted: Int, failures: [S3DeleteFailure]) {
        defer { close() }
        var deleted = 0
        var failures: [S3DeleteFailure] = []
        var batch: [String] = []
        var ended = false
        while !ended {
            batch.removeAll(keepingCapacity: true)
            while batch.count < S3Client.deleteBatchLimit {
                guard let key = try next() else {
                    ended = true
                    break
                }
                batch.append(key)
            }
            guard !batch.isEmpty else { break }
            let refused = dryRun ? [] : try await client.deleteObjects(bucket: bucket, keys: batch)
            let refusedKeys = Set(refused.map(\.key))
            for key in batch where !refusedKeys.contains(key) { told(key) }
            deleted += batch.count - refused.count
            failures += refused
        }
        return (deleted, failures)
    }
}
