import Foundation
import Sluice

/// `sluice s3 cp -r s3://A/P/ s3://B/Q/` and `sluice s3 sync s3://A/P/ s3://B/Q/`: the objects
/// below a prefix copied by the store (`S3PrefixCopy`), told as the AWS CLI tells them.
extension S3CopyCommand {
    /// Runs the copy of the prefix `source` below `location`: every object (`comparison` nil,
    /// `s3 cp -r`), or those a sync decides; the exit status.
    func runPrefix(
        from source: S3Location, command: String, comparison: SyncComparison? = nil, deletes: Bool = false, maximumDeletes: Int? = nil
    ) async -> Int32 {
        let configuration: S3Configuration
        do { configuration = try S3Configuration.resolve(common.overrides) } catch {
            Terminal.error("sluice: \(command): \(error)")
            return 2
        }
        let client = S3Client(configuration: configuration, options: options(taking: configuration.transfer), transport: transport)
        do { try client.checkBeforeAnyEffect() } catch {
            Terminal.error("sluice: \(command): \(error)")
            return 2
        }
        var copy = S3PrefixCopy(from: source)
        do { copy.sourceClient = sourceStore.isGiven ? try sourceStore.client(over: common.overrides, destination: client, transport: transport) : nil } catch {
            Terminal.error("sluice: \(command): \(error)")
            return 2
        }
        if let refusal = unusedByStore(client: client, reader: copy.sourceClient) {
            Terminal.error("sluice: \(command): \(refusal)")
            return 2
        }
        copy.comparison = comparison
        copy.deletes = deletes
        copy.maximumDeletes = maximumDeletes
        copy.filter = PathFilter(walk.filters, shard: walk.shard)
        if let filesFrom = walk.filesFrom {
            do { copy.keys = try readKeyList(filesFrom, prefix: copy.source.key) } catch {
                let shown = (error as? PathListError)?.problem == .holdsNUL ? "the list holds a NUL byte: a NUL-separated list needs --null" : "\(error)"
                Terminal.error("sluice: \(command): --files-from \(filesFrom): \(shown); nothing was copied")
                return 2
            }
        }
        let (configured, destination, dryRun) = (copy, location, dryRun)
        let lines = TransferLines(level: level, dryRun: dryRun)
        let json = progress == .json
        let told: @Sendable (S3PrefixCopy.Decision) -> Void = { decision in
            if json { Terminal.error(DecisionLine(decision, dryRun: dryRun).json) }
            switch decision {
            case .copy(let from, let to, _): lines.copy("\(from) to \(to)")
            case .delete(let location): lines.delete("\(location)")
            }
        }
        let result = await ProgressPrinter.runReporting(style: dryRun ? .none : lines.progress(progress)) { printer in
            try await configured.run(to: destination, client: client, dryRun: dryRun, told: told, progress: Self.jobReporter(printer))
        }
        switch result {
        case .success(let done):
            return reportPrefix(done, command: command, comparison: comparison, deletes: deletes, lines: lines)
        case .failure(let error):
            if error is CancellationError || (error as? S3Error)?.code == .cancelled {
                Terminal.error("sluice: \(command): interrupted; the objects copied are kept (no multipart copy is left open)")
                return 130
            }
            Terminal.error("sluice: \(command): \(error)")
            // Refused before any request (a source client of the same store whose prefix
            // overlaps): as the same refusal is at parsing.
            if error is S3PrefixCopy.OverlappingPrefixes { return 2 }
            return (error as? S3Error)?.exitStatus ?? 1
        }
    }

    /// Prints what a prefix copy did; the exit status.
    private func reportPrefix(
        _ done: S3PrefixCopy.Result, command: String, comparison: SyncComparison?, deletes: Bool, lines: TransferLines
    ) -> Int32 {
        // Said when it mattered: a copy of every object joins nothing.
        if done.order == .hierarchical, lines.showsWarnings, comparison != nil || walk.filesFrom != nil {
            Terminal.error("sluice: \(command): the server lists keys as a file system does (a/b before a-b), not in S3's order: joined in its order")
        }
        for failure in done.failures { Terminal.error("sluice: \(command): \(failure)") }
        for failure in done.deleteFailures { Terminal.error("sluice: \(command): s3://\(location.bucket)/\(failure)") }
        switch done.withheld {
        case .copiesFailed(let count):
            Terminal.error(
                "sluice: \(command): \(counted(done.toDelete, "object")) with no source not deleted: \(counted(count, "object")) could not be copied"
            )
        case .overLimit(let found, let limit):
            Terminal.error("sluice: \(command): \(counted(found, "object")) with no source, more than --max-delete \(limit): none deleted")
        case nil: break
        }
        if let outputError = lines.outputError {
            Terminal.error("sluice: \(outputError)")
            return 1
        }
        let failed = !done.failures.isEmpty || !done.deleteFailures.isEmpty || done.withheld != nil
        var summary = "\(counted(done.copied, "object")) \(dryRun ? "to copy" : "copied")"
        if comparison != nil { summary += ", \(done.unchanged) unchanged" }
        if deletes { summary += ", \(done.deleted) \(dryRun ? "to delete" : "deleted")" }
        if comparison == .checksum {
            summary += "; compared by ETag \(done.comparedByContent), by size and time only \(done.comparedBySizeAndTime)"
        }
        if !dryRun || !done.failures.isEmpty { summary += ", \(done.failures.count) failed" }
        if !dryRun {
            let how = done.streamed == 0 ? "by the store" : done.streamed == done.copied ? "streamed through sluice" : "(\(done.streamed) streamed through sluice)"
            summary += "; \(done.bytesCopied) bytes copied \(how) in \(String(format: "%.2f", done.elapsed)) s"
        }
        if lines.showsSummary || failed { Terminal.error("sluice: \(dryRun ? "\(command) --dryrun: " : "")\(summary)") }
        return failed ? 1 : 0
    }

    /// The keys `--files-from` names below `prefix` (`-`: stdin), read whole and checked
    /// before any request.
    ///
    /// - Throws: `PathListError`, or `ListUnopened` when the file cannot be opened.
    func readKeyList(_ name: String, prefix: String) throws -> KeyList {
        guard name != "-" else { return try KeyList(reading: STDIN_FILENO, prefix: prefix, separator: walk.separator) }
        let descriptor = open(name, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ListUnopened(errno: errno) }
        defer { close(descriptor) }
        return try KeyList(reading: descriptor, prefix: prefix, separator: walk.separator)
    }
}

extension DecisionLine {
    /// A prefix copy's decision: `{"decision":"copy","dryrun":false,"reason":"missing",
    /// "source":"s3://A/P/k","url":"s3://B/Q/k"}`, or a deletion.
    init(_ decision: S3PrefixCopy.Decision, dryRun: Bool) {
        dryrun = dryRun
        switch decision {
        case .copy(let from, let to, let reason):
            (self.decision, source, self.reason, url) = ("copy", "\(from)", reason?.rawValue, "\(to)")
        case .delete(let location):
            (self.decision, url) = ("delete", "\(location)")
        }
    }
}
