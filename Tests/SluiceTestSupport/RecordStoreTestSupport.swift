import Sluice

/// Runs `body` while this run holds the lock of the record for `key` in `store` (the
/// directory prepared first), as another run of the same upload would, and returns what
/// `body` threw: nil when it went on.
package func throwing<Record: StoredRecord>(
    whileHolding key: [String], in store: RecordStore<Record>, _ body: () async throws -> Void
) async throws -> (any Error)? {
    try store.prepare()
    let held = try store.lock(key: key)
    defer { held.release() }
    do { try await body() } catch { return error }
    return nil
}
