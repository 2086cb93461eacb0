import Foundation
import SluicePrimitives
import SluiceTransport
import SluiceS3

/// A directory job that did not send every file: the result, with each failure. Thrown by the
/// one-call forms (`S3Client.upload(directory:to:progress:)`); the files that were sent are at
/// the server and recorded, so the same call sends only what is missing.
public struct UploadJobIncomplete: Error, Sendable, CustomStringConvertible {
    /// What the job did: sent, unchanged, failed (`failures`), the record's failure.
    public var result: UploadJobResult

    /// The job's result, which holds failures.
    public init(_ result: UploadJobResult) {
        self.result = result
    }

    /// `2 of the files were not sent: PATH: why; …` (the first three named).
    public var description: String {
        var reasons = result.failures.prefix(3).map(\.description)
        if let recordFailure = result.recordFailure { reasons.insert("the job's record could not be written: \(recordFailure)", at: 0) }
        let more = result.failures.count > 3 ? "; and \(result.failures.count - 3) more" : ""
        return "\(result.failures.count) of the files were not sent: \(reasons.joined(separator: "; "))\(more)"
    }
}

extension S3Sync {
    /// A sync that did not do all it was asked: a file not sent, an object not deleted, or
    /// deletions withheld (`Result.withheld`). Thrown by `S3Client.sync(directory:to:deletes:progress:)`.
    public struct Incomplete: Error, Sendable, CustomStringConvertible {
        /// What the sync did.
        public var result: Result

        /// The sync's result, which holds what was not done.
        public init(_ result: Result) {
            self.result = result
        }

        /// What was not done, in words.
        public var description: String {
            let job = result.job.flatMap { !$0.failures.isEmpty || $0.recordFailure != nil ? "\(UploadJobIncomplete($0))" : nil }
            return Self.notDone(job, deleteFailures: result.deleteFailures, withheld: result.withheld.map { "\($0)" })
        }

        /// What a run did not do, in words: `notSent` (its sends or copies), the deletions
        /// refused (the first three named), the deletions withheld.
        package static func notDone(_ notSent: String?, deleteFailures: [S3DeleteFailure], withheld: String?) -> String {
            var parts: [String] = notSent.map { [$0] } ?? []
            if !deleteFailures.isEmpty {
                parts.append("\(deleteFailures.count) objects were not deleted: \(deleteFailures.prefix(3).map(\.description).joined(separator: "; "))")
            }
            if let withheld { parts.append("nothing was deleted (\(withheld))") }
            return parts.joined(separator: "; ")
        }
    }
}

extension S3Client {
    /// The job and destination that send the files below `directory` to `location` with this
    /// client, set as `sluice s3 cp --recursive` sets them: one `RequestBudget` of
    /// `options.concurrency` requests in flight for the whole job (unless the options hold one),
    /// its record under `options.stateDirectory`, and the records kept out of the walk.
    ///
    /// - Parameters:
    ///   - directory: The root of the files to send.
    ///   - location: `s3://BUCKET/PREFIX/`: each file goes to the prefix plus its path below the root.
    /// - Returns: The job (set its `filter`, `list` or `followsSymlinks` before running it) and
    ///   its destination.
    public func directoryJob(_ directory: String, to location: S3Location) -> (job: UploadJob, destination: S3JobDestination) {
        var client = self
        // One number of requests in flight for the whole job: small files and parts alike.
        if client.options.requestBudget == nil { client.options.requestBudget = RequestBudget(limit: options.concurrency) }
        var job = UploadJob(root: directory)
        job.concurrency = options.concurrency
        job.restart = options.restart
        if let state = options.stateDirectory { job.stateDirectory = state + "/jobs" }
        // Its records and locks inside the tree are never part of it (every run would send them).
        job.privateDirectories = [options.stateDirectory ?? (S3StateStore.defaultDirectory as NSString).deletingLastPathComponent]
        return (job, S3JobDestination(client: client, location: location))
    }

    /// Uploads every regular file below `directory` to `destination` in one call, as
    /// `aws s3 cp --recursive` names them (the prefix plus the path below the root), as one
    /// resumable job: the same call after a crash sends only what is missing.
    ///
    /// ```swift
    /// let client = try S3Client()
    /// let result = try await client.upload(directory: "/data/photos", to: "s3://bucket/photos/")
    /// print(result.uploaded, result.unchanged)
    /// ```
    ///
    /// - Parameters:
    ///   - directory: The root of the files to send.
    ///   - destination: `s3://BUCKET/PREFIX/` (a `/` is added to a prefix without one).
    ///   - progress: Called as files are found, start and finish and bytes go out, from any thread.
    /// - Returns: What the job did, when every file was sent (or was there already).
    /// - Throws: `UploadJobIncomplete` when a file was not sent (its `result` names each);
    ///   `S3Error` for a destination or configuration that cannot work (before any request);
    ///   what `UploadJob.run(to:progress:)` throws.
    public func upload(
        directory: String, to destination: String, progress: (@Sendable (UploadJobProgress) -> Void)? = nil
    ) async throws -> UploadJobResult {
        try await upload(directory: directory, to: try S3Location(parsing: destination), progress: progress)
    }

    /// Uploads every regular file below `directory` under `location` in one call (see
    /// `upload(directory:to:progress:)` with a string destination).
    ///
    /// - Parameters:
    ///   - directory: The root of the files to send.
    ///   - location: The bucket and prefix.
    ///   - progress: Called as the job goes, from any thread.
    /// - Returns: What the job did, when every file was sent.
    /// - Throws: `UploadJobIncomplete`, `S3Error`, what the job throws.
    public func upload(
        directory: String, to location: S3Location, progress: (@Sendable (UploadJobProgress) -> Void)? = nil
    ) async throws -> UploadJobResult {
        try checkBeforeAnyEffect()
        let (job, destination) = directoryJob(directory, to: location)
        let result = try await job.run(to: destination, progress: progress)
        guard result.failures.isEmpty, result.recordFailure == nil else { throw UploadJobIncomplete(result) }
        return result
    }

    /// Sends the files below `directory` whose object under `destination` is missing or
    /// differs (`aws s3 sync`'s rules: size, and a file newer than its object), in one call;
    /// with `deletes`, objects under the prefix with no file are deleted once the run proved
    /// them absent (`S3Sync`).
    ///
    /// - Parameters:
    ///   - directory: The root of the files.
    ///   - destination: `s3://BUCKET/PREFIX/`.
    ///   - deletes: Delete objects that have no file.
    ///   - progress: The job's progress, from any thread.
    /// - Returns: What the sync did, when it did all of it.
    /// - Throws: `S3Sync.Incomplete` when a file was not sent, an object not deleted, or the
    ///   deletions withheld; what `S3Sync.run(to:dryRun:decided:progress:)` throws.
    public func sync(
        directory: String, to destination: String, deletes: Bool = false, progress: (@Sendable (UploadJobProgress) -> Void)? = nil
    ) async throws -> S3Sync.Result {
        try checkBeforeAnyEffect()
        let (job, target) = directoryJob(directory, to: try S3Location(parsing: destination))
        var sync = S3Sync(job: job)
        sync.deletes = deletes
        let result = try await sync.run(to: target, dryRun: false, decided: { _ in }, progress: progress)
        let jobFailed = result.job.map { !$0.failures.isEmpty || $0.recordFailure != nil } ?? false
        guard !jobFailed, result.deleteFailures.isEmpty, result.withheld == nil else { throw S3Sync.Incomplete(result) }
        return result
    }

    /// `upload(directory:to:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Returns: The reports (finished when the job ends), and the task whose value is the result.
    public func uploadWithProgress(
        directory: String, to destination: String
    ) -> (progress: AsyncStream<UploadJobProgress>, result: Task<UploadJobResult, any Error>) {
        ProgressSequence.run { report in try await upload(directory: directory, to: destination, progress: report) }
    }

    /// `sync(directory:to:deletes:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Returns: The reports (finished when the sync ends), and the task whose value is the result.
    public func syncWithProgress(
        directory: String, to destination: String, deletes: Bool = false
    ) -> (progress: AsyncStream<UploadJobProgress>, result: Task<S3Sync.Result, any Error>) {
        ProgressSequence.run { report in
            try await sync(directory: directory, to: destination, deletes: deletes, progress: report)
        }
    }
}

extension UploadJob {
    /// `run(to:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Parameter destination: Where the files go.
    /// - Returns: The reports (finished when the job ends), and the task whose value is the result.
    public func runWithProgress(
        to destination: some UploadJobDestination
    ) -> (progress: AsyncStream<UploadJobProgress>, result: Task<UploadJobResult, any Error>) {
        ProgressSequence.run { report in try await run(to: destination, progress: report) }
    }
}
