import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceS3
import SluiceTransport

/// Where the files of an `UploadJob` go: S3 is the first; tus or plain PUTs fit the same shape.
public protocol UploadJobDestination: Sendable {
    /// Names the destination for the job's record (endpoint, bucket, prefix): a rerun with the
    /// same root and identity continues the same job.
    var jobIdentity: String { get }

    /// The name `file` gets at the destination (an S3 key).
    ///
    /// - Throws: When the file cannot go there (a key too long): that file fails, the others go on.
    func name(for file: WalkedFile) throws -> String

    /// Uploads `file` as `name`, resuming what a run before left (a multipart upload in flight).
    ///
    /// - Parameters:
    ///   - file: The file, as the walk found it.
    ///   - name: Its name at the destination, from `name(for:)`.
    ///   - restart: Forget what a run before left of this file and send it whole.
    ///   - progress: Body bytes of this file at the server or on their way (may fall on a retry).
    /// - Returns: What the destination answered, for the record (an ETag), and what of the file
    ///   it already held from a run before.
    func upload(
        _ file: WalkedFile, as name: String, restart: Bool,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadJobSent
}

/// What a destination did with a file it stored.
public struct UploadJobSent: Sendable, Equatable {
    /// What the destination answered (an ETag), for the job's record.
    public var answer: String
    /// Bytes of the file the destination already held from a run before (the parts of a resumed
    /// multipart upload), not sent by this run.
    public var bytesAlreadyThere: Int64

    /// A file stored with the answer `answer`, `bytesAlreadyThere` of it held before this run.
    public init(answer: String, bytesAlreadyThere: Int64 = 0) {
        self.answer = answer
        self.bytesAlreadyThere = bytesAlreadyThere
    }
}

/// A job of many uploads: the regular files below a directory, each to its own name at one
/// destination, as one resumable unit (`sluice s3 cp --recursive`).
///
/// - The tree is walked as the job goes (`DirectoryWalk`), never listed first: memory does not
///   grow with the number of files.
/// - At most `concurrency` files are in flight; give the destination the same number as a
///   shared `RequestBudget` so that requests across all files stay within it.
/// - Every file finished is appended to a durable `JobJournal` before the job moves on from
///   it; a rerun after `kill -9` or Ctrl-C skips the files recorded as finished and unchanged,
///   and the destination resumes the ones in flight. The journal goes when the job ends with
///   every file sent; `restart` forgets it first.
/// - A file that fails does not stop the others: it is reported in the result and sent again by
///   the next run.
/// - A record that cannot be written (the state directory's disk full) stops the job from
///   starting files: the files in flight end, each stored one is counted sent (not failed), and
///   the result names the record's error (`UploadJobResult.recordFailure`).
public struct UploadJob: Sendable {
    /// The directory whose files are sent.
    public var root: String
    /// Which files are sent (the AWS CLI's `--include`/`--exclude`).
    public var filter = PathFilter()
    /// Whether symlinks are followed, as the AWS CLI does (loops are reported, not walked); `false`
    /// skips them.
    public var followsSymlinks = true
    /// Files in flight at once.
    public var concurrency = 8
    /// Where the job's record is kept; nil for `$XDG_CACHE_HOME/sluice/jobs` or `~/.cache/sluice/jobs`.
    public var stateDirectory: String?
    /// Forget a stored record of this job and send every file again.
    public var restart = false
    /// Which files are sent, decided file by file (`s3 sync`); nil sends every file the filter takes.
    public var planner: (any UploadJobPlanner)?
    /// The order the walk yields files in (the planner's listing's).
    public var order = KeyOrder.s3
    /// The files to send, from a list (`--files-from`), instead of a walk of `root` (the
    /// list's root); `filter` applies to them too.
    public var list: PathList?
    /// Decide and tell, send nothing: every file the filter, the destination's names and the
    /// planner take is told as `UploadJobEvent.wouldSend` and counted in `uploaded`; no record
    /// is opened, no file is read, the destination is asked nothing (`--dryrun`).
    public var dryRun = false

    /// A job that sends every regular file below `root`, with the defaults above.
    public init(root: String) {
        self.root = root
    }

    /// The name of this job's record: the root and the destination, and the shard, so that
    /// each shard of a job (`--shard K/N`) keeps a record of its own and a rerun resumes it.
    package func jobName(root absoluteRoot: String, destination: any UploadJobDestination) -> String {
        "\(absoluteRoot) -> \(destination.jobIdentity)" + (filter.shard.map { " shard \($0)" } ?? "")
    }

    /// Directories never part of the tree, however it is walked: the state directories the
    /// job's records and locks are in (`--state`, or the default). The journal's directory is
    /// always among them (`skippedDirectories`).
    public var privateDirectories: [String] = []
    /// How the walk holds one directory's entries (in memory up to a bound, sorted on disk past it).
    package var directorySpill = DirectoryWalk.Spill()
    /// Where the walk records each directory it left, to be checked again before deletions
    /// (`S3Sync`); nil records nothing.
    package var walkedDirectories: WalkedDirectories?

    /// The absolute paths the walk passes over without a word: `privateDirectories` and the
    /// journal's directory, each as written (made absolute) and with its symlinks resolved.
    package var skippedDirectories: Set<String> {
        let journal = stateDirectory ?? RecordStore<String>.defaultDirectory("jobs")
        var skipped: Set<String> = []
        for directory in privateDirectories + [journal] {
            skipped.insert(DirectoryWalk.absolutePath(directory))
            if let resolved = realpath(directory, nil) {
                skipped.insert(String(cString: resolved))
                free(resolved)
            }
        }
        return skipped
    }

    /// The journal of this job at `destination`.
    package func journalPath(root absoluteRoot: String, destination: any UploadJobDestination) -> String {
        let store = RecordStore<String>(directory: stateDirectory ?? RecordStore<String>.defaultDirectory("jobs"))
        var parts = ["job", absoluteRoot, destination.jobIdentity]
        if let shard = filter.shard { parts.append("shard \(shard)") }
        return store.path(parts, extension: "journal")
    }

    /// Runs the job.
    ///
    /// - Parameters:
    ///   - destination: Where the files go and what their names are there (`S3JobDestination`).
    ///   - progress: Called as files start and finish and bytes go out, from any thread.
    ///   - events: Told of each file as it is stored (after its record is written), or, in a
    ///     `dryRun`, as it would be sent; from any thread, in the order files end.
    /// - Returns: What was sent, skipped and failed.
    /// - Throws: `WalkIssue` when the root cannot be walked, `PathListError` when the list cannot
    ///   be sorted, `JobJournalError` when the record cannot be kept, `CancellationError` when
    ///   the task is cancelled (the record is kept).
    public func run(
        to destination: some UploadJobDestination, progress: (@Sendable (UploadJobProgress) -> Void)? = nil,
        events: (@Sendable (UploadJobEvent) -> Void)? = nil
    ) async throws -> UploadJobResult {
        let started = ContinuousClock.now
        // The walk's readdir and stat calls (or the list's reads), and the record's reads,
        // writes and fsyncs, wait on the blocking pool's threads, not the cooperative pool's.
        let pool = BlockingPool.shared
        let restart = restart
        var walk = try await pool.run { [self] in try JobFiles(self, order: order) }
        let path = journalPath(root: walk.root, destination: destination)
        let jobName = jobName(root: walk.root, destination: destination)
        // A dry run keeps no record: it neither reads one nor leaves one.
        let journal = dryRun ? nil : try await pool.run { try JobJournal(path: path, job: jobName, forgetting: restart) }
        let tracker = UploadJobTracker(report: progress)
        let limit = max(1, concurrency)
        var failures: [UploadJobFailure] = []
        var notes: [WalkIssue] = []
        var uploaded = 0
        var unchanged = 0
        var kept = 0
        var recordFailure: (any Error)?
        do {
            try await withThrowingTaskGroup(of: UploadJobOutcome.self) { group in
                var running = 0
                func collect(_ outcome: UploadJobOutcome) {
                    running -= 1
                    switch outcome {
                    case .sent(let unrecorded):
                        uploaded += 1
                        if let unrecorded, recordFailure == nil { recordFailure = unrecorded }
                    case .kept: kept += 1
                    case .failed(let failure):
                        failures.append(failure)
                        if let unrecorded = failure.error as? UploadJobRecordFailed, recordFailure == nil {
                            recordFailure = unrecorded.error
                        }
                    }
                }
                var ahead: [WalkEntry] = []
                walking: while recordFailure == nil, let entry = try await Self.next(&walk, ahead: &ahead, on: pool) {
                    try Task.checkCancellation()
                    switch entry {
                    case .issue(let issue) where issue.isDeliberate:
                        notes.append(issue)
                        continue
                    case .issue(let issue):
                        failures.append(UploadJobFailure(path: issue.path, name: nil, error: issue))
                        tracker.failed()
                        continue
                    case .file(let file):
                        guard filter.includes(file.relativePath, root: walk.root) else { continue }
                        let name: String
                        do { name = try destination.name(for: file) } catch {
                            failures.append(UploadJobFailure(path: file.path, name: nil, error: error))
                            tracker.failed()
                            continue
                        }
                        if let planner, try await !planner.shouldSend(file, as: name) { continue }
                        guard let journal else {
                            uploaded += 1
                            events?(.wouldSend(file, name: name))
                            continue
                        }
                        tracker.found(file.size)
                        if !restart, let done = journal.take(file.relativePath), done.matches(file) {
                            unchanged += 1
                            tracker.alreadyDone(file.size)
                            continue
                        }
                        while running >= limit, let outcome = try await group.next() { collect(outcome) }
                        // The record cannot be written: no file more is started.
                        if recordFailure != nil { break walking }
                        running += 1
                        let restartFile = restart
                        group.addTask {
                            try await Self.send(
                                file, as: name, restart: restartFile, to: destination, journal: journal, tracker: tracker, events: events)
                        }
                    }
                }
                tracker.walkEnded()
                // A cancel (SIGINT, SIGTERM) ends the job as interrupted, whenever it comes: the
                // files it stopped are not failures (a part child rethrows it), and the group is
                // not drained into a summary.
                while let outcome = try await group.next() {
                    collect(outcome)
                    try Task.checkCancellation()
                }
            }
        } catch {
            if let journal { _ = try? await pool.run(ignoringCancellation: true) { try journal.close() } }
            throw error
        }
        let complete = failures.isEmpty && recordFailure == nil
        if let journal {
            try await Self.end(journal, complete: complete, recordFailed: recordFailure != nil, on: pool)
        }
        let snapshot = tracker.snapshot()
        return UploadJobResult(
            uploaded: uploaded, unchanged: unchanged, kept: kept, failures: failures, recordFailure: recordFailure, notes: notes,
            bytesSent: snapshot.bytesDone - snapshot.bytesAlreadyDone, bytesAlreadyThere: snapshot.bytesAlreadyDone,
            elapsed: (ContinuousClock.now - started) / .seconds(1), recordKept: journal != nil && !complete ? path : nil)
    }

    /// Removes the journal of a job that sent every file, else closes it for the next run (a
    /// record that could not be written is closed as well as it can be).
    private static func end(_ journal: JobJournal, complete: Bool, recordFailed: Bool, on pool: BlockingPool) async throws {
        if complete {
            _ = try? await pool.run(ignoringCancellation: true) { journal.remove() }
        } else if recordFailed {
            _ = try? await pool.run(ignoringCancellation: true) { try journal.close() }
        } else {
            try await pool.run(ignoringCancellation: true) { try journal.close() }
        }
    }

    /// Walk entries read on the pool in one trip: a trip a file cost two thread switches and
    /// about 11 futex calls a file (113,731 for a sync of 10,000 unchanged files, 0.1–0.4 CPU-s).
    package static let walkBatch = 256

    /// The walk's next entry: from `ahead` (the batch read last, last entry first), else the next
    /// `walkBatch` entries read on `pool` (a directory is listed, `readdir` and `stat`, when the
    /// walk enters it; a list's spool is read).
    package static func next(_ walk: inout JobFiles, ahead: inout [WalkEntry], on pool: BlockingPool) async throws -> WalkEntry? {
        if ahead.isEmpty {
            let current = walk
            let (entries, advanced) = try await pool.run {
                var walk = current
                var entries: [WalkEntry] = []
                while entries.count < walkBatch, let entry = walk.next() { entries.append(entry) }
                return (entries, walk)
            }
            walk = advanced
            ahead = entries.reversed()
        }
        return ahead.popLast()
    }

    /// Sends one file and records it; a failure is an outcome, never a thrown error (the other
    /// files go on), except a cancel: `CancellationError`, whatever the destination threw. A
    /// file stored whose line cannot be appended is sent all the same (the record's error rides
    /// along: the job stops starting files).
    package static func send(
        _ file: WalkedFile, as name: String, restart: Bool, to destination: some UploadJobDestination,
        journal: JobJournal, tracker: UploadJobTracker, events: (@Sendable (UploadJobEvent) -> Void)? = nil
    ) async throws -> UploadJobOutcome {
        let slot = tracker.started()
        do {
            let sent = try await destination.upload(file, as: name, restart: restart) { bytes in
                tracker.update(slot, bytes)
            }
            var unrecorded: JournalError?
            // Recorded even when the job is being cancelled: the file is stored.
            let entry = JobJournal.Entry(file, result: sent.answer)
            do {
                // The line goes to the page cache here; only a sync that is due (every
                // `syncInterval`) waits on the blocking pool.
                if try journal.appendLeavingSync(entry) {
                    try await BlockingPool.shared.run(ignoringCancellation: true) { try journal.syncIfDue() }
                }
            } catch let error as JournalError {
                unrecorded = error
            } catch {
                unrecorded = JournalError(path: journal.path, problem: .closed, record: JobJournal.Entry.recordName)
            }
            tracker.finished(slot, file.size, alreadyThere: sent.bytesAlreadyThere)
            events?(.sent(file, name: name))
            return .sent(unrecorded: unrecorded)
        } catch is UploadJobKept {
            // The destination keeps what it has (an object the job must not overwrite): not a failure.
            tracker.finished(slot, nil)
            return .kept
        } catch {
            tracker.finished(slot, nil)
            if Task.isCancelled { throw CancellationError() }
            return .failed(UploadJobFailure(path: file.path, name: name, error: error))
        }
    }
}

/// What a job tells of one file as it goes (`UploadJob.run(to:progress:events:)`): the
/// AWS CLI's `upload: FILE to s3://BUCKET/KEY` and `(dryrun) upload: …` lines are made from these.
public enum UploadJobEvent: Sendable {
    /// `file` is stored as `name` at the destination.
    case sent(WalkedFile, name: String)
    /// A dry run: `file` would be sent as `name`.
    case wouldSend(WalkedFile, name: String)
}

/// How one file of a job ended.
package enum UploadJobOutcome: Sendable {
    /// Stored; `unrecorded` when the job's record could not take its line.
    case sent(unrecorded: JournalError?)
    case kept
    case failed(UploadJobFailure)
}

/// What a destination throws for a file it did not write because what it holds is to be kept
/// (`s3 cp -r --no-clobber` over an existing object): counted as kept, not as a failure.
public struct UploadJobKept: Error, Sendable {
    /// The file was kept back: a destination throws this instead of writing it.
    public init() {}
}

/// What a destination throws when a file cannot be sent because its own record cannot be
/// written (a multipart upload's resume record on a full disk): the file fails and the job
/// stops starting files, as when the job's record cannot be written.
public struct UploadJobRecordFailed: Error, Sendable, CustomStringConvertible {
    /// The record's error (it names the record and the failed call).
    public var error: any Error

    /// A file not sent because its record could not be written, for `error`.
    public init(_ error: any Error) {
        self.error = error
    }

    public var description: String { "\(error)" }
}

/// A file of a job that was not sent, and why.
public struct UploadJobFailure: Sendable, CustomStringConvertible {
    /// The file's path.
    public var path: String
    /// Its name at the destination, when it got one.
    public var name: String?
    /// Why the file was not sent.
    public var error: any Error

    /// "PATH: why", the path named once (a walk's issue, and a file that could not be opened
    /// or read, name it themselves).
    public var description: String {
        error is WalkIssue || (error as? ByteSourceError)?.path == path ? "\(error)" : "\(path): \(error)"
    }

    /// Whether sending the file again as it is may succeed (`S3Error.isTransient`, the retry
    /// policy's word for a request's error); false for a file that could not be read or named
    /// (it fails again until it is changed) and for a key or option the store refuses.
    public var isTransient: Bool {
        switch error {
        case let error as S3Error: return error.isTransient
        case let error as UploadError: return error.isTransient
        case is CancellationError: return true
        default: return false
        }
    }
}

/// What a job did.
public struct UploadJobResult: Sendable {
    /// Files sent by this run (in a dry run: files it would send).
    public var uploaded: Int
    /// Files a run before had sent, unchanged since: not sent again.
    public var unchanged: Int
    /// Files not sent because the destination keeps what it has (an existing object under `--no-clobber`).
    public var kept: Int = 0
    /// Files that could not be read or sent (the next run tries them again).
    public var failures: [UploadJobFailure]
    /// Why the job's record (or a file's) could not be written, when it could not: the job
    /// stopped starting files then; the files it stored are counted in `uploaded`, and those the
    /// record did not take are sent again by the next run.
    public var recordFailure: (any Error)?
    /// What the walk passed over on purpose (special files, symlink loops, symlinks not followed).
    public var notes: [WalkIssue]
    /// Body bytes sent by this run: the files' bytes less what the destination already held.
    public var bytesSent: Int64
    /// Bytes at the destination before this run: the files unchanged since a run before, and
    /// the parts of resumed uploads it already held.
    public var bytesAlreadyThere: Int64 = 0
    /// Seconds from the job's start to its end.
    public var elapsed: Double
    /// The job's record, kept for the next run when files failed; nil when the job completed.
    public var recordKept: String?
}

/// A job's progress: files and bytes.
public struct UploadJobProgress: Sendable, Equatable {
    /// Files finished: sent by this run or found unchanged since a run before.
    public var filesDone: Int
    /// Files that could not be read or were refused; the job goes on without them.
    public var filesFailed: Int
    /// Files found so far; the total once `walkEnded`.
    public var filesFound: Int
    /// Whether the walk has found every file, so `filesFound` is the total.
    public var walkEnded: Bool
    /// Bytes of the files found so far (of all of them once the walk ended).
    public var bytesFound: Int64
    /// Bytes at the server: finished files, files unchanged since a run before, and the bytes of
    /// files in flight.
    public var bytesDone: Int64
    /// Of `bytesDone`, what runs before had sent (files unchanged, and the parts of a resumed
    /// upload once its file is done).
    public var bytesAlreadyDone: Int64
}

/// Counts a job's files and bytes with running sums (no sum over the files in flight per tick).
package final class UploadJobTracker: Sendable {
    private struct State {
        package var progress = UploadJobProgress(
            filesDone: 0, filesFailed: 0, filesFound: 0, walkEnded: false, bytesFound: 0,
            bytesDone: 0, bytesAlreadyDone: 0)
        package var inFlight: [Int: Int64] = [:]
        package var nextSlot = 0
    }

    private let state = Lock(State())
    private let report: (@Sendable (UploadJobProgress) -> Void)?

    package init(report: (@Sendable (UploadJobProgress) -> Void)?) {
        self.report = report
    }

    private func change(_ body: (inout State) -> Void) {
        let progress = state.withLock { state -> UploadJobProgress in
            body(&state)
            return state.progress
        }
        report?(progress)
    }

    package func snapshot() -> UploadJobProgress { state.withLock { $0.progress } }

    package func found(_ bytes: Int64) {
        change {
            $0.progress.filesFound += 1; $0.progress.bytesFound += bytes
        }
    }
    package func failed() { change { $0.progress.filesFailed += 1 } }
    package func walkEnded() { change { $0.progress.walkEnded = true } }

    package func alreadyDone(_ bytes: Int64) {
        change {
            $0.progress.filesDone += 1
            $0.progress.bytesDone += bytes
            $0.progress.bytesAlreadyDone += bytes
        }
    }

    package func started() -> Int {
        state.withLock { state in
            state.nextSlot += 1
            state.inFlight[state.nextSlot] = 0
            return state.nextSlot
        }
    }

    /// A file's bytes on their way, for the reports; none kept when nothing is reported (a
    /// file's bytes count once it ends, in `finished`).
    package func update(_ slot: Int, _ bytes: Int64) {
        guard report != nil else { return }
        change { state in
            guard let old = state.inFlight[slot] else { return }
            state.inFlight[slot] = bytes
            state.progress.bytesDone += bytes - old
        }
    }

    /// `bytes`: the file's size when it was sent, nil when it failed; `alreadyThere`: what of
    /// it the destination held from a run before.
    package func finished(_ slot: Int, _ bytes: Int64?, alreadyThere: Int64 = 0) {
        change { state in
            let sent = state.inFlight.removeValue(forKey: slot) ?? 0
            if let bytes {
                state.progress.bytesDone += bytes - sent
                state.progress.bytesAlreadyDone += alreadyThere
                state.progress.filesDone += 1
            } else {
                state.progress.bytesDone -= sent
                state.progress.filesFailed += 1
            }
        }
    }
}
