import Foundation
import Sluice
@_spi(Floors) import SluicePrimitives

/// `sluice s3 cp --recursive DIR s3://BUCKET/PREFIX/`: the files below DIR as one `UploadJob`.
extension S3CopyCommand {
    /// A usage error unless `path` is a directory that can be listed.
    static func checkDirectory(_ path: String, command: String = "s3 cp --recursive") throws {
        do { try DirectoryWalk.checkRoot(path) } catch {
            let hint = path.hasPrefix("s3://") ? " (sluice sends data to servers; it does not download objects)" : ""
            throw UsageError("\(command) needs a directory: \(error)\(hint)")
        }
    }

    /// The destination and the job of `-r` (and of `s3 sync`, named `command` in messages); nil
    /// after one line saying why not (exit 2: nothing was sent).
    func prepareJob(command: String) -> (destination: S3JobDestination, job: UploadJob)? {
        let configuration: S3Configuration
        do { configuration = try S3Configuration.resolve(common.overrides) } catch {
            Terminal.error("sluice: \(command): \(error)")
            return nil
        }
        let options = options(taking: configuration.transfer)
        let client = S3Client(configuration: configuration, options: options, transport: transport)
        // No credentials (or options S3 cannot take): one line before any journal or request.
        do { try client.checkBeforeAnyEffect() } catch {
            Terminal.error("sluice: \(command): \(error)")
            return nil
        }
        // The budget, record and private directories as the library's one-call form sets them.
        var (job, destination) = client.directoryJob(source, to: location)
        job.filter = PathFilter(walk.filters, shard: walk.shard)
        job.followsSymlinks = walk.followsSymlinks
        if let filesFrom = walk.filesFrom {
            do { job.list = try readList(filesFrom) } catch {
                let shown = (error as? PathListError)?.problem == .holdsNUL ? "the list holds a NUL byte: a NUL-separated list (find -print0) needs --null" : "\(error)"
                Terminal.error("sluice: \(command): --files-from \(filesFrom): \(shown); nothing was sent")
                return nil
            }
        }
        job.dryRun = dryRun
        return (destination, job)
    }

    /// The list `--files-from` names (`-`: stdin), read whole and checked before any request.
    ///
    /// - Throws: `PathListError`, or `ListUnopened` when the file cannot be opened.
    func readList(_ name: String) throws -> PathList {
        guard name != "-" else {
            return try PathList(reading: STDIN_FILENO, root: source, separator: walk.separator, followsSymlinks: walk.followsSymlinks)
        }
        let descriptor = open(name, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ListUnopened(errno: errno) }
        defer { close(descriptor) }
        return try PathList(reading: descriptor, root: source, separator: walk.separator, followsSymlinks: walk.followsSymlinks)
    }

    /// A job's progress for `printer`: drawn at most every 100 ms (reports come from every
    /// part's progress), and the last one; nil when nothing is drawn (`--progress none`), so
    /// the job keeps no running count of its files' bytes in flight (issue 37.11: a clock read
    /// and two locks a report, several reports a small file).
    static func jobReporter(_ printer: ProgressPrinter) -> (@Sendable (UploadJobProgress) -> Void)? {
        guard printer.style != .none else { return nil }
        let started = ContinuousClock.now
        let lastDrawn = Lock<ContinuousClock.Instant?>(nil)
        return { job in
            let now = ContinuousClock.now
            let finished = job.walkEnded && job.filesDone + job.filesFailed == job.filesFound
            let due = lastDrawn.withLock { last -> Bool in
                if !finished, let last, now - last < .milliseconds(100) { return false }
                last = now
                return true
            }
            guard due else { return }
            let elapsed = (now - started) / .seconds(1)
            let sent = job.bytesDone - job.bytesAlreadyDone
            printer.report(
                UploadProgress(
                    bytesSent: job.bytesDone, totalBytes: job.bytesFound,
                    bytesPerSecond: elapsed > 0 ? Double(sent) / elapsed : 0, elapsed: elapsed),
                files: ProgressPrinter.FileCounts(done: job.filesDone, found: job.filesFound, final: job.walkEnded))
        }
    }

    /// What to do about a job's failed files: run again for those that may pass (the network,
    /// the server's moment), not for those that would fail again as they are (a key over S3's
    /// limit, a file that cannot be read), which the lines above name.
    static func againHint(_ failures: [UploadJobFailure]) -> String {
        let transient = failures.filter(\.isTransient).count
        let permanent = failures.count - transient
        switch (transient, permanent) {
        case (_, 0): return ": run the same command again to send the \(transient) that failed"
        case (0, _):
            let (subject, verb) = permanent == 1 ? ("it", "it is") : ("they", "they are")
            return ": \(subject) would fail again as \(verb) (see above); change what is named, then run the same command again"
        default:
            let (others, verb) = permanent == 1 ? ("1 other", "it is") : ("\(permanent) others", "they are")
            return ": run the same command again to send the \(transient) that failed for a reason that may pass; the \(others) would fail again as \(verb) (see above)"
        }
    }

    /// The exit status of a job that threw `error`, after one line saying what happened.
    static func jobFailed(_ error: any Error, command: String) -> Int32 {
        if error is CancellationError || (error as? S3Error)?.code == .cancelled {
            Terminal.error("sluice: \(command): interrupted; run the same command again to resume the job")
            return 130
        }
        // A record another run holds is not one to forget.
        let hint = (error as? JobJournalError).map { if case .locked = $0.problem { "" } else { " (--restart forgets it)" } } ?? ""
        Terminal.error("sluice: \(command): \(error)\(hint)")
        return 1
    }

    func runRecursive() async -> Int32 {
        guard let (destination, configured) = prepareJob(command: "s3 cp") else { return 2 }
        let lines = TransferLines(level: level, dryRun: dryRun)
        let bucket = destination.bucket
        let result = await ProgressPrinter.runReporting(style: dryRun ? .none : lines.progress(progress)) { printer in
            try await configured.run(to: destination, progress: Self.jobReporter(printer)) { lines.tell($0, bucket: bucket) }
        }
        switch result {
        case .success(let done):
            if lines.showsWarnings { for note in done.notes { Terminal.error("sluice: s3 cp: \(note)") } }
            for failure in done.failures { Terminal.error("sluice: s3 cp: \(failure)") }
            if let error = lines.outputError {
                Terminal.error("sluice: s3 cp: \(error)")
                return 1
            }
            let kept = done.kept > 0 ? "\(done.kept) exists, kept, " : ""
            let summary =
                dryRun
                ? "\(counted(done.uploaded, "file")) to send" + (done.failures.isEmpty ? "" : ", \(done.failures.count) failed")
                : "\(counted(done.uploaded, "file")) sent, \(done.unchanged) unchanged since a run before, \(kept)"
                    + "\(done.failures.count) failed; \(done.bytesSent) bytes in \(String(format: "%.2f", done.elapsed)) s"
                    + (done.bytesAlreadyThere > 0 ? ", \(done.bytesAlreadyThere) already at the server" : "")
            if let record = done.recordFailure {
                // The record is the problem, not the files: the ones stored are counted sent.
                Terminal.error(
                    "sluice: s3 cp: \(record): the job stopped starting files; \(summary): make room for the record and run the same command again")
                return 1
            }
            if done.failures.isEmpty {
                if lines.showsSummary { Terminal.error("sluice: \(dryRun ? "s3 cp --dryrun: " : "")\(summary)") }
                return 0
            }
            Terminal.error("sluice: s3 cp: \(summary)\(dryRun ? "" : Self.againHint(done.failures))")
            return 1
        case .failure(let error):
            return Self.jobFailed(error, command: "s3 cp")
        }
    }
}

/// `--files-from FILE` could not be opened.
struct ListUnopened: Error, CustomStringConvertible {
    var errno: Int32
    var description: String {
        let text = String(cString: strerror(errno))
        return "cannot open it: " + text.prefix(1).lowercased() + text.dropFirst()
    }
}
