import SluiceTransport
import SluiceS3
import SluiceRequests

/// `s3 cp -r s3://A/P/ s3://B/Q/` and `s3 sync s3://A/P/ s3://B/Q/`: the objects under a
/// prefix copied below another prefix by the store (`S3Client.copy`: no byte of an object
/// passes through this process), as the AWS CLI copies them between buckets; from another store
/// (`sourceClient`), each streamed through this process.
///
/// - The source prefix's listing and, for a sync or `deletes`, the destination's are
///   merge-joined in one pass, a page of each at a time: memory does not grow with the number
///   of objects, and no request is made per object the listings decide.
/// - A sync (`comparison`) copies an object whose copy is missing, of another size, or older
///   than it (`LastModified`), as `aws s3 sync` decides between buckets; `--size-only` by size
///   alone; `.checksum` by the ETags both listings carry (equal: the same bytes; two MD5 ETags
///   that differ: other bytes; else size and time, counted). Without a comparison every object
///   is copied. Folder markers (empty keys ending in `/`) are passed over, as the AWS CLI does.
/// - Up to `concurrency` objects are copied at once; their requests (a multipart copy's parts
///   included) share one `RequestBudget` of the client's concurrency.
/// - Objects of the destination with no source are deleted (`deletes`) as a last phase, and
///   only when every copy the run meant to make was made: a failed copy holds every deletion
///   back (`withheld`), as does `maximumDeletes`.
/// - A server that lists keys as a file system does (SeaweedFS: `a/b` before `a-b`) is found
///   out when a listing shows two such keys: the run starts again in that order; what the first
///   pass copied is counted copied, not unchanged. A join (a sync, `deletes`) between two stores
///   learns both orders first, each listing read up to its first two keys the orders place
///   differently (whole when none do), and refuses two orders (`ListingOrdersDiffer`) before
///   any copy or deletion.
public struct S3PrefixCopy: Sendable {
    /// The bucket and prefix copied (the key is made a prefix: empty, or ending in `/`).
    public var source: S3Location
    /// The client the source is listed and read with; nil: the destination's. A client of
    /// another store (another endpoint or other credentials, `S3Client.sharesStore(with:)`)
    /// gets each object streamed through this process (`S3Client.copy(_:from:to:progress:)`:
    /// ranges pinned to the object's ETag, parts in parallel, resumable).
    public var sourceClient: S3Client?
    /// When an object is copied over its copy; nil: every object is copied (`cp -r`).
    public var comparison: SyncComparison?
    /// Delete objects under the destination prefix that have no source (after the filter).
    public var deletes = false
    /// Delete nothing when more objects than this are to go; nil for no limit.
    public var maximumDeletes: Int?
    /// The objects taken, by their key below the source prefix (and the destination's objects
    /// `deletes` may remove, by theirs); its shard too.
    public var filter = PathFilter()
    /// Only these keys below the source prefix (`--files-from`); a key with no object is a
    /// failure. Not with `deletes`.
    public var keys: KeyList?
    /// Objects copied at once; nil: the client's `concurrency`.
    public var concurrency: Int?

    /// A copy of every object under `source`'s prefix.
    public init(from source: S3Location) {
        self.source = source
        self.source.key = Self.prefix(source.key)
    }

    /// `key` as a prefix: empty, or ending in `/` (as the AWS CLI takes `s3://B/P` in a
    /// recursive copy).
    public static func prefix(_ key: String) -> String {
        key.isEmpty || key.hasSuffix("/") ? key : key + "/"
    }

    /// A decision, told as it takes effect.
    public enum Decision: Sendable, Equatable {
        /// `source` was copied to `destination` (a dry run: would be); the reason a sync
        /// copied it (nil for a copy of every object).
        case copy(source: S3Location, destination: S3Location, reason: SyncComparison.Reason?)
        /// The destination's object at `location` has no source and was deleted.
        case delete(S3Location)
    }

    /// An object that could not be copied.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The object.
        public var source: S3Location
        /// Why: `.source` for a key of the list with no object.
        public var error: S3Error

        public var description: String { error.message.hasPrefix("\(source)") ? error.message : "\(source): \(error.message)" }
    }

    /// Why objects with no source were not deleted.
    public enum Withheld: Sendable, Equatable {
        /// `count` objects were not copied: the destination would lose what it is to hold.
        case copiesFailed(count: Int)
        /// `found` objects were to go, more than `limit`.
        case overLimit(found: Int, limit: Int)
    }

    /// `keys` with `deletes`: a list names objects to copy, not all the prefix is to hold.
    public struct DeletesNeedAListing: Error, Sendable, CustomStringConvertible {
        /// The refusal.
        public init() {}

        public var description: String {
            "deletions need the source's listing: a list names objects to copy, not all that the prefix is to hold"
        }
    }

    /// A destination prefix that holds the source's or lies within it, in one bucket: the
    /// copies would be listed and copied again, or (`deletes`) the source deleted as objects
    /// with no source.
    public struct OverlappingPrefixes: Error, Sendable, CustomStringConvertible {
        /// The source prefix.
        public var source: S3Location
        /// The destination prefix.
        public var destination: S3Location

        /// Why `source` cannot be copied below `destination` (both as prefixes), nil when
        /// it can: in one bucket, one prefix starts with the other.
        public static func check(_ source: S3Location, _ destination: S3Location) -> OverlappingPrefixes? {
            let (from, to) = (S3PrefixCopy.prefix(source.key), S3PrefixCopy.prefix(destination.key))
            guard source.bucket == destination.bucket, from.hasPrefix(to) || to.hasPrefix(from) else { return nil }
            return OverlappingPrefixes(source: source, destination: destination)
        }

        public var description: String {
            let (from, to) = (S3PrefixCopy.prefix(source.key), S3PrefixCopy.prefix(destination.key))
            let relation = from == to ? "is the source" : to.hasPrefix(from) ? "lies within the source" : "holds the source"
            return "the destination s3://\(destination.bucket)/\(to) \(relation) s3://\(source.bucket)/\(from): "
                + "its copies would be copied again, or the source deleted; copy to a prefix outside it"
        }
    }

    /// What a run did (a dry run: would do).
    public struct Result: Sendable {
        /// Objects copied (a dry run: to copy), the first pass's included.
        public var copied = 0
        /// Objects whose copy holds them (a sync).
        public var unchanged = 0
        /// Objects not copied, and keys of the list with no object.
        public var failures: [Failure] = []
        /// Bytes of the objects copied.
        public var bytesCopied: Int64 = 0
        /// Of the objects copied, those streamed through this process (from another store, or
        /// to a destination that does not copy by itself).
        public var streamed = 0
        /// With `.checksum`: objects of their copy's size compared by ETag.
        public var comparedByContent = 0
        /// With `.checksum`: objects of their copy's size whose ETags say nothing (a multipart
        /// ETag against another), compared by size and time.
        public var comparedBySizeAndTime = 0
        /// Objects of the destination found with no source.
        public var toDelete = 0
        /// Of them, deleted (a dry run: would be).
        public var deleted = 0
        /// Keys the server refused to delete.
        public var deleteFailures: [S3DeleteFailure] = []
        /// Why nothing was deleted, when objects were to go and were not.
        public var withheld: Withheld?
        /// The order the servers list keys in (`.hierarchical` when found to list as a file
        /// system does, and the run started again in that order).
        public var order = KeyOrder.s3
        /// Seconds from the first request to the last answer.
        public var elapsed: Double = 0

        /// Counts a `.checksum` comparison: by the ETags (true) or by size and time (false).
        mutating func count(comparedByContent byContent: Bool?) {
            guard let byContent else { return }
            if byContent { comparedByContent += 1 } else { comparedBySizeAndTime += 1 }
        }
    }

    /// Copies the objects below `destination`'s prefix.
    ///
    /// - Parameters:
    ///   - destination: The bucket and prefix the objects are copied below (the key is made a
    ///     prefix).
    ///   - client: The destination's client (and the source's, without `sourceClient`).
    ///   - dryRun: Decide and tell, copy and delete nothing.
    ///   - told: Each copy once made (a dry run: once the join ended), each deletion once its
    ///     request answered; from the calling task.
    ///   - progress: Objects and bytes found and copied.
    /// - Throws: `S3Error` when a listing or a deletion request fails (`NoSuchBucket`), or when
    ///   cancelled (`.cancelled`); `S3ListingOutOfOrder` for a listing in neither order;
    ///   `ListingOrdersDiffer` for two stores listing in two orders (before any copy);
    ///   `DeletesNeedAListing`; `OverlappingPrefixes`; `PathListError` when the list cannot be
    ///   sorted again.
    public func run(
        to destination: S3Location, client: S3Client, dryRun: Bool = false, told: @escaping @Sendable (Decision) -> Void = { _ in },
        progress: (@Sendable (UploadJobProgress) -> Void)? = nil
    ) async throws -> Result {
        if deletes, keys != nil { throw DeletesNeedAListing() }
        if sourceClient.map({ $0.sharesStore(with: client) }) ?? true, let overlap = OverlappingPrefixes.check(source, destination) {
            throw overlap
        }
        try client.checkBeforeAnyEffect()
        var client = client
        if client.options.requestBudget == nil { client.options.requestBudget = RequestBudget(limit: client.options.concurrency) }
        var destination = destination
        destination.key = Self.prefix(destination.key)
        let start = ContinuousClock.now
        // Two stores' listings: their orders are learnt first, and a join of two orders refused.
        let known = try await joinOrder(destination, client: client)
        var copiedFirst = dryRun || known != nil ? nil : try RecordSorter(order: .hierarchical)
        var result: Result
        do {
            result = try await pass(
                to: destination, client: client, order: known ?? .s3, dryRun: dryRun, copiedFirst: &copiedFirst, copiedBefore: nil,
                told: told, progress: progress)
        } catch let error as S3ListingOutOfOrder where error.fitsHierarchical && known == nil {
            var none: RecordSorter?
            let before = try copiedFirst.map { sorter throws(SpoolError) in try sorter.finish() }
            result = try await pass(
                to: destination, client: client, order: .hierarchical, dryRun: dryRun, copiedFirst: &none,
                copiedBefore: before, told: told, progress: progress)
        }
        result.elapsed = (ContinuousClock.now - start) / .seconds(1)
        return result
    }

    /// What a copy task ended with.
    private enum Outcome: Sendable {
        case copied(source: S3Location, destination: S3Location, reason: SyncComparison.Reason?, length: Int64, streamed: Bool)
        case failed(Failure)
    }

    /// One pass of `run` in `order`; `copiedFirst` gathers the keys it copied (the first
    /// pass), `copiedBefore` holds those of a first pass (the second).
    private func pass(
        to destination: S3Location, client: S3Client, order: KeyOrder, dryRun: Bool, copiedFirst: inout RecordSorter?,
        copiedBefore: SortedRecords?, told: @escaping @Sendable (Decision) -> Void,
        progress: (@Sendable (UploadJobProgress) -> Void)?
    ) async throws -> Result {
        var result = Result(order: order)
        let tracker = UploadJobTracker(report: progress)
        let sourceRoot = "/\(source.bucket)/\(source.key)"
        let destinationRoot = "/\(destination.bucket)/\(destination.key)"
        let reader = sourceClient
        var sources = (reader ?? client).listObjects(bucket: source.bucket, prefix: source.key, order: order)
        let joins = comparison != nil || deletes
        var targets = joins ? client.listObjects(bucket: destination.bucket, prefix: destination.key, order: order) : nil
        var listed = try keys.map { list throws(PathListError) in
            do throws(SpoolError) { return try list.keys(in: order) } catch { throw PathListError(problem: .spool(error), count: 1) }
        }
        var copiedEarlierKeys = copiedBefore?.merged()
        let spool = deletes ? try KeySpool() : nil
        let held = dryRun ? try KeySpool() : nil
        defer {
            spool?.close()
            held?.close()
        }
        let limit = max(1, concurrency ?? client.options.concurrency)
        // The listings are closed on every way out (their pages asked for ahead cancelled).
        func closeListings() async {
            await sources.close()
            await targets?.close()
        }

        // Each stream joined with the source's listing, read one ahead: the destination's
        // listing, the list of keys, the keys the first pass copied.
        var target = Lookahead<S3ListedObject>()
        func peekTarget() async throws -> S3ListedObject? {
            try await target.peek {
                guard targets != nil else { return nil }
                do { return try await targets!.next() } catch var error as S3Error {
                    error.message = "the destination \(destination): \(error.message)"
                    throw error
                }
            }
        }
        func nextSource() async throws -> S3ListedObject? {
            do { return try await sources.next() } catch var error as S3Error {
                error.message = "the source \(source): \(error.message)"
                throw error
            }
        }
        func passOver(_ object: S3ListedObject) throws {
            guard let spool, !object.isFolderMarker else { return }
            let relative = String(decoding: object.key.utf8.dropFirst(destination.key.utf8.count), as: UTF8.self)
            guard filter.includes(relative, root: destinationRoot) else { return }
            try spool.append(object.key)
        }
        var listHead = Lookahead<String>()
        func peekList() async throws -> String? {
            try await listHead.peek {
                do throws(SpoolError) { return try listed?.next() } catch { throw PathListError(problem: .spool(error), count: 1) }
            }
        }
        var earlier = Lookahead<[UInt8]>()
        func peekEarlier() async throws -> [UInt8]? {
            try await earlier.peek { try copiedEarlierKeys?.next()?.key }
        }
        func notListed(_ key: String) throws {
            let location = try S3Location(bucket: source.bucket, key: source.key + key)
            result.failures.append(Failure(source: location, error: S3Error(.source, "\(location): no such object")))
        }

        func collect(_ outcome: Outcome) throws {
            switch outcome {
            case .copied(let from, let to, let reason, let length, let streamed):
                result.copied += 1
                if streamed { result.streamed += 1 }
                result.bytesCopied += length
                told(.copy(source: from, destination: to, reason: reason))
                let relative = from.key.utf8.dropFirst(source.key.utf8.count)
                do throws(SpoolError) { try copiedFirst?.add(key: relative, payload: []) } catch {
                    // Only a count on a restart would be off: the copy itself was made.
                    copiedFirst = nil
                }
            case .failed(let failure):
                if failure.error.code == .cancelled { throw failure.error }
                result.failures.append(failure)
            }
        }

        do {
            try await withThrowingTaskGroup(of: Outcome.self) { group in
                var inFlight = 0
                while let object = try await nextSource() {
                    if object.isFolderMarker { continue }
                    let relative = String(decoding: object.key.utf8.dropFirst(source.key.utf8.count), as: UTF8.self)
                    guard filter.includes(relative, root: sourceRoot) else { continue }
                    if listed != nil {
                        while let key = try await peekList(), order.precedes(key.utf8, relative.utf8) {
                            try notListed(key)
                            listHead.advance()
                        }
                        guard let key = try await peekList(), key.utf8.elementsEqual(relative.utf8) else { continue }
                        listHead.advance()
                    }
                    var match: S3ListedObject?
                    while let other = try await peekTarget() {
                        let otherRelative = other.key.utf8.dropFirst(destination.key.utf8.count)
                        if order.precedes(otherRelative, relative.utf8) {
                            try passOver(other)
                            target.advance()
                            continue
                        }
                        if otherRelative.elementsEqual(relative.utf8) {
                            match = other
                            target.advance()
                        }
                        break
                    }
                    var copiedInFirstPass = false
                    while let key = try await peekEarlier(), order.precedes(key, relative.utf8) { earlier.advance() }
                    if let key = try await peekEarlier(), key.elementsEqual(relative.utf8) { copiedInFirstPass = true }
                    tracker.found(object.size)
                    // Copied by the first pass: at the destination now, and counted so.
                    if copiedInFirstPass {
                        tracker.alreadyDone(object.size)
                        result.copied += 1
                        continue
                    }
                    let reason: SyncComparison.Reason?
                    switch decide(object, over: match) {
                    case .same(let byContent):
                        result.count(comparedByContent: byContent)
                        tracker.alreadyDone(object.size)
                        result.unchanged += 1
                        continue
                    case .copy(let why, let byContent):
                        result.count(comparedByContent: byContent)
                        reason = why
                    }
                    let from = try S3Location(bucket: source.bucket, key: object.key)
                    // A key too long below the destination's prefix: that object fails, not the run.
                    let to: S3Location
                    do { to = try S3Location(bucket: destination.bucket, key: destination.key + relative) } catch {
                        let reason = error as? S3Error ?? S3Error(.invalidLocation, "\(error)")
                        tracker.failed()
                        result.failures.append(Failure(source: from, error: reason))
                        continue
                    }
                    if let held {
                        for field in [from.key, to.key, reason?.rawValue ?? ""] { try held.append(field) }
                        result.copied += 1
                        tracker.alreadyDone(object.size)
                        continue
                    }
                    if inFlight >= limit, let outcome = try await group.next() {
                        inFlight -= 1
                        try collect(outcome)
                    }
                    inFlight += 1
                    group.addTask {
                        let slot = tracker.started()
                        do {
                            let copied = try await client.copy(from, listed: object, from: reader, to: to) { tracker.update(slot, $0.bytesSent) }
                            tracker.finished(slot, copied.length)
                            return .copied(source: from, destination: to, reason: reason, length: copied.length, streamed: copied.route == .streamed)
                        } catch {
                            tracker.finished(slot, nil)
                            if Task.isCancelled || error is CancellationError {
                                return .failed(Failure(source: from, error: S3Error(.cancelled, "cancelled")))
                            }
                            let failure = error as? S3Error ?? S3Error(.transport, "\(error)")
                            return .failed(Failure(source: from, error: failure))
                        }
                    }
                }
                tracker.walkEnded()
                while let key = try await peekList() {
                    try notListed(key)
                    listHead.advance()
                }
                while let other = try await peekTarget() {
                    try passOver(other)
                    target.advance()
                }
                while let outcome = try await group.next() { try collect(outcome) }
            }
        } catch {
            await closeListings()
            throw error
        }
        await closeListings()
        if let held {
            while let from = try held.next(), let to = try held.next(), let reason = try held.next() {
                told(
                    .copy(
                        source: try S3Location(bucket: source.bucket, key: from), destination: try S3Location(bucket: destination.bucket, key: to),
                        reason: SyncComparison.Reason(rawValue: reason)))
            }
        }
        guard let spool, spool.count > 0 else { return result }
        result.toDelete = spool.count
        if !result.failures.isEmpty {
            result.withheld = .copiesFailed(count: result.failures.count)
        } else if let maximumDeletes, result.toDelete > maximumDeletes {
            result.withheld = .overLimit(found: result.toDelete, limit: maximumDeletes)
        }
        guard result.withheld == nil else { return result }
        let bucket = destination.bucket
        (result.deleted, result.deleteFailures) = try await spool.delete(with: client, bucket: bucket, dryRun: dryRun) { key in
            if let location = try? S3Location(bucket: bucket, key: key) { told(.delete(location)) }
        }
        return result
    }

    /// What the join decides of an object and its copy.
    private enum Verdict {
        /// Not copied; `byContent`: with `.checksum`, whether the ETags decided (nil: sizes did).
        case same(byContent: Bool?)
        /// Copied, and why (nil: every object is); `byContent` as for `.same`.
        case copy(SyncComparison.Reason?, byContent: Bool?)
    }

    /// Whether `object` is copied over `copy` (its destination's object, nil when missing).
    private func decide(_ object: S3ListedObject, over copy: S3ListedObject?) -> Verdict {
        guard let comparison else { return .copy(nil, byContent: nil) }
        guard let copy else { return .copy(.missing, byContent: nil) }
        if copy.size != object.size { return .copy(.sizeDiffers, byContent: nil) }
        let newer: Verdict = object.lastModified > copy.lastModified ? .copy(.newer, byContent: nil) : .same(byContent: nil)
        switch comparison {
        case .sizeOnly: return .same(byContent: nil)
        case .sizeAndTime: return newer
        case .checksum:
            let (mine, theirs) = (S3ObjectHead.unquoted(object.eTag), S3ObjectHead.unquoted(copy.eTag))
            if !mine.isEmpty, mine == theirs { return .same(byContent: true) }
            if SyncContentCheck.isMD5(mine), SyncContentCheck.isMD5(theirs) { return .copy(.contentDiffers, byContent: true) }
            switch newer {
            case .same: return .same(byContent: false)
            case .copy(let reason, _): return .copy(reason, byContent: false)
            }
        }
    }
}

extension S3PrefixCopy {
    /// A prefix copy that did not do all it was asked: an object not copied, an object not
    /// deleted, or the deletions withheld. Thrown by `S3Client.copy(prefix:to:progress:)` and
    /// `S3Client.sync(prefix:to:deletes:progress:)`; what was copied is at the destination.
    public struct Incomplete: Error, Sendable, CustomStringConvertible {
        /// What the run did: what it copied, and what it did not do.
        public var result: Result

        /// What was not done, in words.
        public var description: String {
            let failures = result.failures
            let notCopied = failures.isEmpty ? nil : "\(failures.count) objects were not copied: \(failures.prefix(3).map(\.description).joined(separator: "; "))"
            return S3Sync.Incomplete.notDone(notCopied, deleteFailures: result.deleteFailures, withheld: result.withheld.map { "\($0)" })
        }
    }

    /// Runs and throws `Incomplete` unless everything asked was done.
    fileprivate func runWhole(
        to destination: String, client: S3Client, progress: (@Sendable (UploadJobProgress) -> Void)?
    ) async throws -> Result {
        let result = try await run(to: try S3Location(parsing: destination), client: client, progress: progress)
        guard result.failures.isEmpty, result.deleteFailures.isEmpty, result.withheld == nil else { throw Incomplete(result: result) }
        return result
    }
}

extension S3Client {
    /// Copies every object below `source` to the same key below `destination`, by the store, in
    /// one call, as `aws s3 cp --recursive s3://A/P/ s3://B/Q/` copies them (`S3PrefixCopy`).
    ///
    /// ```swift
    /// let client = try S3Client()
    /// let result = try await client.copy(prefix: "s3://bucket/photos/", to: "s3://archive/2026/photos/")
    /// print(result.copied, result.bytesCopied)
    /// ```
    ///
    /// - Parameters:
    ///   - source: `s3://BUCKET/PREFIX/` (a `/` is added to a prefix without one).
    ///   - destination: `s3://BUCKET/PREFIX/`, outside the source's prefix.
    ///   - progress: Objects and bytes found and copied, from any thread.
    /// - Returns: What the copy did, when every object was copied.
    /// - Throws: `S3PrefixCopy.Incomplete` when an object was not copied (the others are);
    ///   what `S3PrefixCopy.run(to:client:dryRun:told:progress:)` throws.
    public func copy(
        prefix source: String, to destination: String, progress: (@Sendable (UploadJobProgress) -> Void)? = nil
    ) async throws -> S3PrefixCopy.Result {
        try await S3PrefixCopy(from: try S3Location(parsing: source)).runWhole(to: destination, client: self, progress: progress)
    }

    /// Copies, by the store, the objects below `source` whose copy below `destination` is
    /// missing, of another size or older (`aws s3 sync`'s rules between buckets), in one call;
    /// with `deletes`, objects below `destination` with no source are deleted once every copy
    /// was made.
    ///
    /// - Parameters:
    ///   - source: `s3://BUCKET/PREFIX/`.
    ///   - destination: `s3://BUCKET/PREFIX/`, outside the source's prefix.
    ///   - deletes: Delete objects that have no source.
    ///   - progress: Objects and bytes found and copied, from any thread.
    /// - Returns: What the sync did, when it did all of it.
    /// - Throws: `S3PrefixCopy.Incomplete` when an object was not copied or deleted, or the
    ///   deletions were withheld; what `S3PrefixCopy.run(to:client:dryRun:told:progress:)` throws.
    public func sync(
        prefix source: String, to destination: String, deletes: Bool = false, progress: (@Sendable (UploadJobProgress) -> Void)? = nil
    ) async throws -> S3PrefixCopy.Result {
        var sync = S3PrefixCopy(from: try S3Location(parsing: source))
        sync.comparison = .sizeAndTime
        sync.deletes = deletes
        return try await sync.runWhole(to: destination, client: self, progress: progress)
    }
}

/// The next element of a stream read one ahead: `peek` reads it once, `advance` has the next
/// `peek` read the one after.
private struct Lookahead<Element> {
    private var head: Element?
    private var read = false

    /// The element not yet taken, read with `next` when it was not read yet (nil at the end).
    mutating func peek(_ next: () async throws -> Element?) async rethrows -> Element? {
        if !read {
            head = try await next()
            read = true
        }
        return head
    }

    /// Takes the element `peek` gave.
    mutating func advance() {
        head = nil
        read = false
    }
}
