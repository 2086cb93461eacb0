import SluiceByteSources
import SluiceS3

/// A decision of `s3 sync`, in the order it is made.
public enum SyncDecision: Sendable, Equatable {
    /// The file at `path` is sent as `key`.
    case upload(path: String, key: String, reason: SyncComparison.Reason)
    /// The object `key` has no file and is deleted (`--delete`).
    case delete(key: String)
}

/// The merge-join of a sync: the walk's files (in key order, one call at a time) against the
/// prefix's listing (in key order, a page at a time), each decided as the join reaches it.
///
/// Memory is the listing's two pages and the spool's buffer, whatever the number of files and
/// objects: objects with no file go to a `KeySpool` on disk until the walk is known to have
/// ended without an error.
package actor S3SyncPlanner: UploadJobPlanner {
    private var listing: S3ObjectListing
    /// The listing's next object not yet joined; read when `headRead` is false.
    private var head: S3ListedObject?
    private var headRead = false
    private let prefix: String
    private let filter: PathFilter
    private let root: String
    private let comparison: SyncComparison
    /// With `.checksum`: compares a file with the object of its size.
    private let content: SyncContentCheck?
    private let spool: KeySpool?
    /// Upload decisions held until the join ended (a dry run: a listing found out of order
    /// makes the sync start again, and what it decided before is not to be told).
    private let heldUploads: KeySpool?
    private let decided: @Sendable (SyncDecision) -> Void
    /// The order of the listing, and of the walk.
    package let order: KeyOrder
    /// Files found to send.
    package private(set) var toSend = 0
    /// Files whose object holds them.
    package private(set) var unchanged = 0
    /// With `.checksum`: objects of the file's size whose content was compared.
    package private(set) var comparedByContent = 0
    /// With `.checksum`: objects of the file's size with nothing to compare the file with, so
    /// compared by size and time.
    package private(set) var comparedBySizeAndTime = 0

    /// - Parameters:
    ///   - listing: The prefix's objects.
    ///   - prefix: The prefix (empty or ending in `/`): a key less it is an object's path.
    ///   - filter: The job's filter, applied to the objects' paths as to the files'.
    ///   - root: The walk's absolute root (for filter patterns that start with `/`).
    ///   - comparison: When a file is sent over its object.
    ///   - content: With `.checksum`: the check of a file against its object.
    ///   - deletes: Whether objects with no file are kept for deletion.
    ///   - holdsUploads: Hold the upload decisions until `tellHeldUploads` (a dry run).
    ///   - decided: Told each upload decision as it is made, or when told to tell them.
    package init(
        listing: S3ObjectListing, prefix: String, filter: PathFilter, root: String, comparison: SyncComparison,
        content: SyncContentCheck? = nil, deletes: Bool,
        holdsUploads: Bool, decided: @escaping @Sendable (SyncDecision) -> Void
    ) throws {
        self.listing = listing
        order = listing.order
        heldUploads = holdsUploads ? try KeySpool() : nil
        self.prefix = prefix
        self.filter = filter
        self.root = root
        self.comparison = comparison
        self.content = comparison == .checksum ? content : nil
        spool = deletes ? try KeySpool() : nil
        self.decided = decided
    }

    /// Reads the listing's first page: a bucket that does not exist fails here, before any walk.
    package func start() async throws { _ = try await peek() }

    private func peek() async throws -> S3ListedObject? {
        if !headRead {
            // An actor's property is not passed inout across a suspension: the listing is
            // taken out for the call and put back on every path (its page asked for ahead with it).
            var taken = listing
            defer { listing = taken }
            head = try await taken.next()
            headRead = true
        }
        return head
    }

    private func advance() {
        headRead = false
        head = nil
    }

    package func shouldSend(_ file: WalkedFile, as name: String) async throws -> Bool {
        var match: S3ListedObject?
        while let object = try await peek() {
            if order.precedes(object.key.utf8, name.utf8) {
                try passOver(object)
                advance()
                continue
            }
            if object.key.utf8.elementsEqual(name.utf8) {
                match = object
                advance()
            }
            break
        }
        guard let reason = try await reason(toSend: file, over: match) else {
            unchanged += 1
            return false
        }
        toSend += 1
        if let heldUploads {
            for field in [file.path, name, reason.rawValue] { try heldUploads.append(field) }
        } else {
            decided(.upload(path: file.path, key: name, reason: reason))
        }
        return true
    }

    /// Why `file` is sent over `object`, or nil when it is not: the listing's answer, or with
    /// `--checksum` for an object of the file's size, the content check's (size and time when
    /// it has nothing to compare). A file that cannot be read is sent: its upload fails and is
    /// counted as the job counts failures.
    private func reason(toSend file: WalkedFile, over object: S3ListedObject?) async throws -> SyncComparison.Reason? {
        guard let content, let object, object.size == file.size else { return comparison.reason(toSend: file, over: object) }
        let verdict: SyncContentCheck.Verdict
        do {
            verdict = try await content.compare(file: file.path, size: file.size, with: object)
        } catch is ByteSourceError {
            return .contentDiffers
        }
        switch verdict {
        case .same:
            comparedByContent += 1
            return nil
        case .differs:
            comparedByContent += 1
            return .contentDiffers
        case .unknown:
            comparedBySizeAndTime += 1
            return comparison.reason(toSend: file, over: object)
        }
    }

    /// Tells the upload decisions held, in the order they were made.
    package func tellHeldUploads() throws {
        guard let heldUploads else { return }
        defer { heldUploads.close() }
        while let path = try heldUploads.next(), let key = try heldUploads.next(), let reason = try heldUploads.next() {
            decided(.upload(path: path, key: key, reason: SyncComparison.Reason(rawValue: reason) ?? .missing))
        }
    }

    /// An object the join passed with no file: kept for deletion unless the filter leaves its
    /// path out (as the AWS CLI filters both sides) or it is a folder marker.
    private func passOver(_ object: S3ListedObject) throws {
        guard let spool, !object.isFolderMarker else { return }
        let path = String(decoding: object.key.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
        guard filter.includes(path, root: root) else { return }
        try spool.append(object.key)
    }

    /// Joins the objects after the last file (the walk ended) and ends the listing.
    package func finish() async throws {
        while let object = try await peek() {
            try passOver(object)
            advance()
        }
        await closeListing()
    }

    private func closeListing() async {
        var taken = listing
        await taken.close()
        listing = taken
    }

    /// Ends the listing early (the job failed or was cancelled) and drops the spool.
    package func close() async {
        await closeListing()
        spool?.close()
        heldUploads?.close()
    }

    /// Objects found with no file, to delete.
    package var toDelete: Int { spool?.count ?? 0 }

    /// Deletes the objects found with no file, `S3Client.deleteBatchLimit` keys a request, each
    /// key told to `decided` once its request answered (without it when `dryRun`: nothing sent).
    ///
    /// - Returns: The number deleted and the keys the server refused.
    /// - Throws: `S3Error` when a request failed as a whole (the batches before it are deleted).
    package func delete(with client: S3Client, bucket: String, dryRun: Bool) async throws -> (deleted: Int, failures: [S3DeleteFailure]) {
        guard let spool else { return (0, []) }
        let decided = self.decided
        return try await spool.delete(with: client, bucket: bucket, dryRun: dryRun) { decided(.delete(key: $0)) }
    }
}
