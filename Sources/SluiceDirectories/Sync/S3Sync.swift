import SluicePrimitives
import SluiceS3

/// `sluice s3 sync DIR s3://BUCKET/PREFIX/`: the files below a directory sent where their object
/// is missing or differs (the AWS CLI's rules, `SyncComparison`), and with `deletes` the objects
/// with no file deleted.
///
/// - The walk (already in key order) and the prefix's `ListObjectsV2` (paginated) are
///   merge-joined in one pass (`S3SyncPlanner`): memory does not grow with the number of files
///   or objects, and no request is made per object the listing decides.
/// - The files to send go through `UploadJob` (one request budget, journal, resume, progress).
/// - Objects with no file are deleted with `DeleteObjects`, 1,000 a request, as a last phase
///   and only when the run proved them absent (`withheld`): the walk read every directory and
///   examined every entry without an error of any kind (a directory moved while it was read
///   included), every file to send was sent and recorded, the listing ended, and the walk's
///   view held to the end (every directory walked still has the identity it had, checked again
///   before the deletions: `WalkedDirectories`); not at all when there are more than
///   `maximumDeletes`.
public struct S3Sync: Sendable {
    /// The job the files to send go through: root, filter, symlinks, concurrency, record.
    public var job: UploadJob
    /// When a file is sent over its object.
    public var comparison = SyncComparison.sizeAndTime
    /// Delete objects under the prefix that have no file (after the filter).
    public var deletes = false
    /// Delete nothing when more objects than this are to go; nil for no limit.
    public var maximumDeletes: Int?

    /// A sync of `job`'s tree, with the defaults above.
    public init(job: UploadJob) {
        self.job = job
    }

    /// `deletes` with a list of files (`UploadJob.list`, `--files-from`): refused, since a list
    /// names what to send, not everything the prefix is to hold, and so cannot show an object
    /// to have no file.
    public struct DeletesNeedAWalk: Error, Sendable, CustomStringConvertible {
        /// The refusal.
        public init() {}

        public var description: String {
            "deletions need a walk of the directory: a list names files to send, not all that the prefix is to hold"
        }
    }

    /// Why objects with no file were not deleted.
    public enum Withheld: Sendable, Equatable {
        /// The walk could not read `count` paths: their objects would look like orphans.
        case walkFailed(count: Int)
        /// `count` files were not sent (a file that could not be opened or read, an upload
        /// refused): a file gone since the walk may be one moved, whose objects are not orphans.
        case filesFailed(count: Int)
        /// The job's record could not be written (a full disk): it stopped starting files, so
        /// the rest of the listing was never compared with files.
        case recordFailed
        /// `count` directories walked no longer had the identity they had (moved, removed or
        /// replaced after the walk left them, `viewChanges`): their files may be elsewhere now.
        case viewChanged(count: Int)
        /// `found` objects were to go, more than `limit` (`--max-delete`).
        case overLimit(found: Int, limit: Int)
    }

    /// What a sync did (or, for a dry run, would do).
    public struct Result: Sendable {
        /// The job's result (a dry run's job sends nothing: its `uploaded` are the files it
        /// would send); nil only before the job ran.
        public var job: UploadJobResult?
        /// Files found to send.
        public var toSend: Int
        /// Files whose object holds them, or whose record shows them sent (by a run before, or
        /// a first pass of this one): `job.uploaded + unchanged + job.failures.count` is every
        /// file compared, whatever order the server lists in.
        public var unchanged: Int
        /// Paths the walk could not read (each among the job's failures too).
        public var walkFailures: [WalkIssue]
        /// Directories walked that no longer had their identity when checked again before the
        /// deletions (only checked when objects were to go).
        public var viewChanges: [WalkIssue] = []
        /// With `--checksum`: objects of their file's size compared by content.
        public var comparedByContent = 0
        /// With `--checksum`: objects of their file's size that carry nothing to compare the
        /// file with (no checksum, an ETag that is not an MD5), compared by size and time.
        public var comparedBySizeAndTime = 0
        /// Objects found with no file.
        public var toDelete: Int
        /// Objects deleted (for a dry run: that would be).
        public var deleted: Int
        /// Keys the server refused to delete.
        public var deleteFailures: [S3DeleteFailure]
        /// Why nothing was deleted, when objects were to go and were not.
        public var withheld: Withheld?
        /// The order the server lists keys in: `.hierarchical` when it was found to list as a
        /// file system does (SeaweedFS), and the sync started again in that order.
        public var order = KeyOrder.s3
    }

    /// Runs the sync to `destination`.
    ///
    /// - Parameters:
    ///   - destination: The bucket and prefix, and the client every request goes through.
    ///   - dryRun: Decide and tell, send nothing (no job, no record).
    ///   - decided: Told each decision as it is made (uploads as the join reaches them,
    ///     deletions once their request answered), from the calling task.
    ///   - progress: The job's progress.
    ///   - events: Each file as it is stored (`UploadJobEvent.sent`); a dry run tells its
    ///     uploads through `decided` only.
    /// - Throws: `WalkIssue` for a root that cannot be walked, `S3Error` when the listing or a
    ///   deletion request fails, `S3ListingOutOfOrder` for a listing in neither order
    ///   `KeyOrder` knows, `DeletesNeedAWalk` for `deletes` with a list of files, the job's
    ///   errors (`CancellationError` when cancelled).
    ///
    /// A server that lists keys as a file system does (SeaweedFS: `a/b` before `a-b`) is found
    /// out when the listing shows two such keys: the sync then starts again in that order.
    /// Nothing was deleted before (deletions wait for the end) and a dry run's decisions are
    /// told once the join ended; a real run may have sent again a few files it took for missing.
    public func run(
        to destination: S3JobDestination, dryRun: Bool, decided: @escaping @Sendable (SyncDecision) -> Void,
        progress: (@Sendable (UploadJobProgress) -> Void)? = nil, events: (@Sendable (UploadJobEvent) -> Void)? = nil
    ) async throws -> Result {
        if deletes, job.list != nil { throw DeletesNeedAWalk() }
        do {
            return try await run(to: destination, order: .s3, dryRun: dryRun, decided: decided, progress: progress, events: events)
        } catch let error as S3ListingOutOfOrder where error.fitsHierarchical {
            return try await run(
                to: destination, order: .hierarchical, dryRun: dryRun, decided: decided, progress: progress, events: events)
        }
    }

    /// The one gate of deletions: why the objects with no file of `result` may not be deleted,
    /// nil when the run proved them absent. Any error of any kind holds them back: a path the
    /// walk could not read, a file not sent, the job's record not written, a directory walked that no
    /// longer has its identity; then `--max-delete`.
    /// A dry run, which opens no file, reports the walk's refusals as a real run would.
    package func withheld(_ result: Result) -> Withheld? {
        if !result.walkFailures.isEmpty { return .walkFailed(count: result.walkFailures.count) }
        if let job = result.job {
            if job.recordFailure != nil { return .recordFailed }
            if !job.failures.isEmpty { return .filesFailed(count: job.failures.count) }
        }
        if !result.viewChanges.isEmpty { return .viewChanged(count: result.viewChanges.count) }
        if let limit = maximumDeletes, result.toDelete > limit { return .overLimit(found: result.toDelete, limit: limit) }
        return nil
    }

    /// One pass of `run` in `order`.
    package func run(
        to destination: S3JobDestination, order: KeyOrder, dryRun: Bool, decided: @escaping @Sendable (SyncDecision) -> Void,
        progress: (@Sendable (UploadJobProgress) -> Void)?, events: (@Sendable (UploadJobEvent) -> Void)? = nil
    ) async throws -> Result {
        // Each directory the walk leaves is recorded, to be checked again before deletions.
        var job = self.job
        let walked = deletes ? WalkedDirectories() : nil
        job.walkedDirectories = walked
        // The root first: a path that is not a directory is reported before any request (the
        // job's walk lists it; listed here too, a flat root of 1,000,000 files cost a second listing).
        let root = try JobFiles.root(of: job)
        let planner = try S3SyncPlanner(
            listing: destination.client.listObjects(bucket: destination.bucket, prefix: destination.prefix, order: order),
            prefix: destination.prefix, filter: job.filter, root: root, comparison: comparison,
            content: SyncContentCheck(client: destination.client, bucket: destination.bucket), deletes: deletes,
            holdsUploads: dryRun, decided: decided)
        var result = Result(
            job: nil, toSend: 0, unchanged: 0, walkFailures: [], toDelete: 0, deleted: 0, deleteFailures: [],
            withheld: nil, order: order)
        do {
            try await planner.start()
            // One walk loop, the job's, for a dry run too: its job decides (the planner holds
            // the uploads it would make, told once the join ended) and sends nothing.
            var job = job
            job.planner = planner
            job.order = order
            job.dryRun = dryRun
            let done = try await job.run(to: destination, progress: progress, events: dryRun ? nil : events)
            result.job = done
            result.walkFailures = done.failures.compactMap { $0.error as? WalkIssue }
            try await planner.finish()
            try await planner.tellHeldUploads()
        } catch {
            await planner.close()
            throw error
        }
        result.toSend = await planner.toSend
        // Files the join found to send but the job's record shows sent (by a run before, or by
        // this run's first pass in S3's order, against a server that lists as a file system
        // does) are unchanged too: the counts add up to the files compared, whatever the order.
        result.unchanged = await planner.unchanged + (result.job?.unchanged ?? 0)
        result.comparedByContent = await planner.comparedByContent
        result.comparedBySizeAndTime = await planner.comparedBySizeAndTime
        result.toDelete = await planner.toDelete
        guard deletes, result.toDelete > 0 else {
            await planner.close()
            return result
        }
        // The walk's view held to the end: every directory walked still has its identity.
        if let walked {
            result.viewChanges = try await BlockingPool.shared.run(ignoringCancellation: true) { walked.recheck() }
        }
        result.withheld = withheld(result)
        if result.withheld != nil {
            await planner.close()
            return result
        }
        (result.deleted, result.deleteFailures) = try await planner.delete(
            with: destination.client, bucket: destination.bucket, dryRun: dryRun)
        return result
    }
}
