import Foundation
import Sluice

/// `sluice s3 cp --recursive DIR s3://BUCKET/PREFIX/`: the files below DIR as one `UploadJob`.
extension S3CopyCommand {
    /// A usage error unless `path` is a directory that can be listed.
    static func checkDirectory(_ path: String) throws {
        do { _ = try DirectoryWalk(root: path) } catch {
            throw UsageError("s3 cp --recursive needs a directory: \(error)")
        }
    }

    func runRecursive() async -> Int32 {
        let configuration: S3Configuration
        do { configuration = try S3Configuration.resolve(common.overrides) } catch {
            Terminal.error("sluice: s3 cp: \(error)")
            return 2
        }
        var options = self.options
        // One number of requests in flight for the whole job: small files and parts alike.
        options.requestBudget = RequestBudget(limit: options.concurrency)
        let client = S3Client(configuration: configuration, options: options, transport: transport)
        // No credentials (or options S3 cannot take): one line before any journal or request.
        do { try client.checkBeforeAnyEffect() } catch {
            Terminal.error("sluice: s3 cp: \(error)")
            return 2
        }
        let destination = S3JobDestination(client: client, location: location)
        var job = UploadJob(root: source)
        job.filter = PathFilter(walk.filters)
        job.followsSymlinks = walk.followsSymlinks
        job.concurrency = options.concurrency
        job.restart = options.restart
        if let state = options.stateDirectory { job.stateDirectory = state + "/jobs" }
        let started = ContinuousClock.now
        let configured = job
        // Reports come from every part's progress: drawn at most every 100 ms, and the last one.
        let lastDrawn = Lock<ContinuousClock.Instant?>(nil)
        let result = await ProgressPrinter.runReporting(style: progress) { printer in
            try await configured.run(to: destination) { job in
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
                        bytesSent: job.bytesDone, totalBytes: job.walkEnded ? job.bytesFound : nil,
                        bytesPerSecond: elapsed > 0 ? Double(sent) / elapsed : 0, elapsed: elapsed),
                    files: (job.filesDone, job.walkEnded ? job.filesFound : nil))
            }
        }
        switch result {
        case .success(let done):
            for note in done.notes { Terminal.error("sluice: s3 cp: \(note)") }
            for failure in done.failures { Terminal.error("sluice: s3 cp: \(failure)") }
            let kept = done.kept > 0 ? "\(done.kept) exists, kept, " : ""
            let summary =
                "\(counted(done.uploaded, "file")) sent, \(done.unchanged) unchanged since a run before, \(kept)"
                + "\(done.failures.count) failed; \(done.bytesSent) bytes in \(String(format: "%.2f", done.elapsed)) s"
            if done.failures.isEmpty {
                do { try Terminal.output("s3://\(destination.bucket)/\(destination.prefix)\n") } catch {
                    Terminal.error("sluice: \(error)")
                    return 1
                }
                Terminal.error("sluice: \(summary)")
                return 0
            }
            Terminal.error("sluice: s3 cp: \(summary): run the same command again to send the \(done.failures.count) that failed")
            return 1
        case .failure(let error):
            if error is CancellationError || (error as? S3Error)?.code == .cancelled {
                Terminal.error("sluice: s3 cp: interrupted; run the same command again to resume the job")
                return 130
            }
            // A record another run holds is not one to forget.
            let hint = (error as? JobJournalError).map { if case .locked = $0.problem { "" } else { " (--restart forgets it)" } } ?? ""
            Terminal.error("sluice: s3 cp: \(error)\(hint)")
            return 1
        }
    }
}
